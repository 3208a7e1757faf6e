"""Every client command of the CLI against a SASL_SSL broker, with Kafka's
`--command-config FILE` and librdkafka's `-X key=value` (muster's own client
underneath: no third-party client involved)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.brokers import MusterProcess
from tests.support.security import LISTENERS, add_scram_user, secured_settings


@pytest.fixture(scope="module")
def sasl_ssl(
    tmp_path_factory: pytest.TempPathFactory, certs: Path
) -> Iterator[tuple[MusterProcess, Path]]:
    root = tmp_path_factory.mktemp("cli-sasl-ssl")
    broker = MusterProcess(root / "data", secured_settings(certs), LISTENERS).start()
    add_scram_user(broker.address("SASL_SSL"), certs, "erin", "erin-pw")
    config = root / "client.properties"
    config.write_text(
        "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
        f"sasl.username=erin\nsasl.password=erin-pw\nssl.ca.location={certs / 'ca.pem'}\n"
    )
    yield broker, config
    broker.close()


def test_every_client_command_with_command_config(cli: Any, sasl_ssl: Any) -> None:
    broker, config = sasl_ssl
    common = ["-b", broker.address("SASL_SSL"), "--command-config", str(config)]
    steps = [
        ("topics", "create", "secure-orders", "--partitions", "2"),
        ("topics", "list"),
        ("topics", "describe", "secure-orders"),
        ("produce", "secure-orders", "one", "two"),
        ("groups", "list"),
    ]
    for step in steps:
        result = cli(*step, *common)
        assert result.exit_code == 0, (step, result.output)
    consumed = cli(
        "consume", "secure-orders", "--offset", "earliest", "--timeout", "5", "--json", *common
    )
    assert consumed.exit_code == 0, consumed.output
    values = sorted(json.loads(line)["value"] for line in consumed.stdout.splitlines())
    assert values == ["one", "two"]


def test_dash_x_overrides_the_file_and_works_alone(cli: Any, sasl_ssl: Any, certs: Path) -> None:
    broker, config = sasl_ssl
    bootstrap = ["-b", broker.address("SASL_SSL")]
    # -X alone: PLAIN as alice (librdkafka's property names)
    alone = [
        "-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanism=PLAIN",
        "-X", "sasl.username=alice", "-X", "sasl.password=alice-secret",
        "-X", f"ssl.ca.location={certs / 'ca.pem'}",
    ]  # fmt: skip
    assert cli("topics", "list", *bootstrap, *alone).exit_code == 0
    # -X wins over the file: a wrong password there is refused
    wrong = cli(
        "topics", "list", *bootstrap, "--command-config", str(config),
        "-X", "sasl.password=not-erins", "--request-timeout", "5",
    )  # fmt: skip
    assert wrong.exit_code == 1 and "SASL_AUTHENTICATION_FAILED" in wrong.output, wrong.output
    # without any: the broker's TLS handshake is never completed, one error line
    bare = cli("topics", "list", *bootstrap, "--request-timeout", "3")
    assert bare.exit_code == 1 and "Traceback" not in bare.output
