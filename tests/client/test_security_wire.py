"""muster's own Producer, Consumer and Admin with librdkafka's security
properties: SCRAM-SHA-512 and PLAIN over SASL_SSL, mutual TLS, and a wrong
password refused with SASL_AUTHENTICATION_FAILED."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from muster.client import Admin, Consumer, Producer, TopicPartition
from muster.client.errors import KafkaError
from tests.support.brokers import MusterProcess
from tests.support.security import LISTENERS, add_scram_user, secured_settings


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory, certs: Path) -> Iterator[MusterProcess]:
    root = tmp_path_factory.mktemp("client-security")
    broker = MusterProcess(root / "data", secured_settings(certs), LISTENERS).start()
    add_scram_user(broker.address("SASL_SSL"), certs, "erin", "erin-pw")
    yield broker
    broker.close()


def _sasl(
    broker: MusterProcess, certs: Path, mechanism: str, user: str, password: str, **extra: Any
) -> dict[str, Any]:
    return _conf(
        broker,
        certs,
        **{
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": mechanism,
            "sasl.username": user,
            "sasl.password": password,
            **extra,
        },
    )


def _conf(broker: MusterProcess, certs: Path, **security: Any) -> dict[str, Any]:
    listener = "SSL" if security.get("security.protocol") == "SSL" else "SASL_SSL"
    return {
        "bootstrap.servers": broker.address(listener),
        "ssl.ca.location": str(certs / "ca.pem"),
        **security,
    }


def test_plain_admin_scram_producer_and_group_consumer(secured: MusterProcess, certs: Path):
    scram = _sasl(secured, certs, "SCRAM-SHA-512", "erin", "erin-pw")
    plain = _sasl(secured, certs, "PLAIN", "alice", "alice-secret")
    admin = Admin(plain)
    admin.create_topics(["muster-client-secure"])
    assert admin.list_topics()["muster-client-secure"] == 1
    admin.close()
    producer = Producer(scram)
    futures = [producer.produce("muster-client-secure", f"v{i}".encode()) for i in range(3)]
    assert producer.flush(20) == 0
    assert [f.result(1).offset for f in futures] == [0, 1, 2]
    producer.close()

    consumer = Consumer({**scram, "group.id": "muster-secure-g", "auto.offset.reset": "earliest"})
    consumer.subscribe(["muster-client-secure"])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(got) < 3 and time.monotonic() < deadline:
        got += [r.value for r in consumer.poll(0.5)]
    consumer.commit()
    tp = TopicPartition("muster-client-secure", 0)
    assert consumer.committed([tp])[tp] == 3
    consumer.close()
    assert got == [b"v0", b"v1", b"v2"]


def test_mutual_tls_client(secured: MusterProcess, certs: Path):
    mtls = _conf(
        secured,
        certs,
        **{
            "security.protocol": "SSL",
            "ssl.certificate.location": str(certs / "client-alice-cert.pem"),
            "ssl.key.location": str(certs / "client-alice-key.pem"),
        },
    )
    admin = Admin(mtls)
    admin.create_topics(["muster-client-mtls"])
    admin.close()
    producer = Producer(mtls)
    future = producer.produce("muster-client-mtls", b"m")
    assert producer.flush(20) == 0 and future.result(1).offset == 0
    producer.close()


def test_wrong_password_is_an_authentication_error(secured: MusterProcess, certs: Path):
    bad = _sasl(secured, certs, "SCRAM-SHA-512", "erin", "nope", **{"request.timeout.ms": 5000})
    with pytest.raises(KafkaError) as info:
        Admin(bad).list_topics()
    assert "SASL_AUTHENTICATION_FAILED" in str(info.value)
