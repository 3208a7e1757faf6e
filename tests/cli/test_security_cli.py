"""`muster acls` and `muster users` against a broker with ACLs, through a
`--command-config` file, proven by what the broker then allows."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Producer

from muster.security.properties import STANDARD_AUTHORIZER
from tests.support.brokers import MusterProcess
from tests.support.security import ADMIN, ADMIN_PW, JAAS


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MusterProcess, Path]]:
    root = tmp_path_factory.mktemp("cli-acls")
    settings = {
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "authorizer.class.name": STANDARD_AUTHORIZER,
        "super.users": f"User:{ADMIN}",
    }
    broker = MusterProcess(root / "data", settings, {"SASL_PLAINTEXT": "SASL_PLAINTEXT"})
    broker.start()
    client = root / "admin.properties"
    client.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        f"sasl.username={ADMIN}\nsasl.password={ADMIN_PW}\n"
    )
    yield broker, client
    broker.close()


def _produce_as(broker: MusterProcess, mechanism: str, user: str, pw: str) -> KafkaError | None:
    errors: list[KafkaError] = []
    client_errors: list[KafkaError] = []  # authentication failures come here
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism,
            "sasl.username": user,
            "sasl.password": pw,
            "message.timeout.ms": 8000,
            "error_cb": client_errors.append,
        }
    )
    producer.produce("cli-orders", b"x", on_delivery=lambda err, _m: errors.append(err))
    producer.flush(12)
    return (client_errors or errors or [None])[0]


def test_users_and_acls_commands(cli, secured) -> None:  # type: ignore[no-untyped-def]
    broker, client = secured
    common = ["-b", broker.bootstrap, "--command-config", str(client)]
    added = cli("users", "add", "dora", "--password", "dora-pw", *common)
    assert added.exit_code == 0, added.output
    listed = cli("users", "list", *common)
    assert "dora" in listed.output and "SCRAM-SHA-512" in listed.output and "8192" in listed.output
    as_json = json.loads(cli("users", "list", "--json", *common).stdout)
    assert {"user": "dora", "mechanism": "SCRAM-SHA-512", "iterations": 8192} in as_json

    # dora authenticates, but may not write until an ACL says so
    err = _produce_as(broker, "SCRAM-SHA-512", "dora", "dora-pw")
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    for op in ("Write", "Create"):
        result = cli(
            "acls",
            "add",
            "--allow-principal",
            "User:dora",
            "--operation",
            op,
            "--topic",
            "cli-",
            "--resource-pattern-type",
            "prefixed",
            *common,
        )
        assert result.exit_code == 0, result.output
    assert _produce_as(broker, "SCRAM-SHA-512", "dora", "dora-pw") is None

    listed = cli("acls", "list", "--principal", "User:dora", *common)
    assert "WRITE" in listed.output and "prefixed" in listed.output
    as_json = json.loads(cli("acls", "list", "--principal", "User:dora", "--json", *common).stdout)
    assert sorted(b["operation"] for b in as_json) == ["CREATE", "WRITE"]
    assert {(b["principal"], b["pattern_type"], b["name"]) for b in as_json} == {
        ("User:dora", "PREFIXED", "cli-")
    }
    removed = cli(
        "acls",
        "remove",
        "--principal",
        "User:dora",
        "--topic",
        "cli-",
        "--resource-pattern-type",
        "prefixed",
        *common,
    )
    assert removed.exit_code == 0 and removed.output.count("removed") == 2, removed.output
    assert "User:dora" not in cli("acls", "list", *common).output

    gone = cli("users", "remove", "dora", *common)
    assert gone.exit_code == 0, gone.output
    err = _produce_as(broker, "SCRAM-SHA-512", "dora", "dora-pw")
    assert err is not None and err.code() == KafkaError._AUTHENTICATION
    missing = cli("users", "remove", "dora", *common)
    assert missing.exit_code == 1 and "RESOURCE_NOT_FOUND" in missing.output


def test_without_command_config_the_broker_refuses(cli, secured) -> None:  # type: ignore[no-untyped-def]
    broker, _ = secured
    result = cli("acls", "list", "-b", broker.bootstrap, "--request-timeout", "3")
    assert result.exit_code == 1
