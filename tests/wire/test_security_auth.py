"""TLS and SASL over real sockets with third-party clients: SCRAM-SHA-512 and
PLAIN over SASL_SSL, mutual TLS, the negative cases of issue 14, and SCRAM
credentials that survive kill -9. One secured broker for the module."""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
import ssl
import struct
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
)

from tests.support.brokers import MusterProcess
from tests.support.security import (
    ADMIN,
    ADMIN_PW,
    LISTENERS,
    Closed,
    RawClient,
    add_scram_user,
    librdkafka_conf,
    python_client_conf,
    secured_settings,
    tls_context,
)
from tests.support.transactions import Txn

SCRAM_USER, SCRAM_PW = "carol", "carol-scram-secret"
REAUTH_MS = 1500


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory, certs: Path) -> Iterator[MusterProcess]:
    settings = secured_settings(
        certs, **{"listener.name.sasl_plaintext.connections.max.reauth.ms": str(REAUTH_MS)}
    )
    proc = MusterProcess(tmp_path_factory.mktemp("secured") / "data", settings, LISTENERS)
    proc.start()
    add_scram_user(proc.address("SASL_SSL"), certs, SCRAM_USER, SCRAM_PW, 8192)
    yield proc
    proc.close()


def _scram(certs: Path) -> dict[str, object]:
    return librdkafka_conf(certs, "SCRAM-SHA-512", SCRAM_USER, SCRAM_PW)


def _produce(conf: dict[str, object], topic: str, value: bytes) -> None:
    producer = Producer(conf)
    producer.produce(topic, value)
    assert producer.flush(20) == 0


def _consume(conf: dict[str, object], topic: str, n: int, group: str) -> list[bytes]:
    consumer = Consumer(
        {**conf, "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False}
    )
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(got) < n and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            got.append(msg.value())
    consumer.commit(asynchronous=False)
    committed = consumer.committed([TopicPartition(topic, 0)], 10)
    consumer.close()
    assert committed[0].offset == n
    return got


def test_confluent_scram_sha512_over_sasl_ssl_produce_group_commit_transaction(
    broker: MusterProcess, certs: Path
) -> None:
    bootstrap = broker.address("SASL_SSL")
    conf = {"bootstrap.servers": bootstrap, **_scram(certs)}
    producer = Producer({**conf, "linger.ms": 5})
    for i in range(5):
        producer.produce("scram-topic", f"m{i}".encode())
    assert producer.flush(20) == 0
    # Metadata advertises the listener the client came in on
    brokers = producer.list_topics(timeout=10).brokers
    assert [(b.host, b.port) for b in brokers.values()] == [("127.0.0.1", broker.ports["SASL_SSL"])]
    assert _consume(conf, "scram-topic", 5, "scram-group") == [f"m{i}".encode() for i in range(5)]

    txn = Txn(bootstrap, "secure-txn", **_scram(certs)).begin()
    txn.write("scram-txn", [b"t1", b"t2"])
    txn.commit()
    read = _consume({**conf, "isolation.level": "read_committed"}, "scram-txn", 2, "txn-g")
    assert read == [b"t1", b"t2"]


def test_confluent_plain_and_sasl_plaintext(broker: MusterProcess, certs: Path) -> None:
    conf = {
        "bootstrap.servers": broker.address("SASL_SSL"),
        **librdkafka_conf(certs, "PLAIN", "alice", "alice-secret"),
    }
    _produce(conf, "plain-topic", b"p")
    plaintext = {
        "bootstrap.servers": broker.address("SASL_PLAINTEXT"),
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "bob",
        "sasl.password": "bob-secret",
    }
    assert _consume(plaintext, "plain-topic", 1, "plain-g") == [b"p"]
    # PLAIN also accepts a SCRAM user's password (checked against the salted hash)
    scram_via_plain = {**conf, "sasl.username": SCRAM_USER, "sasl.password": SCRAM_PW}
    assert _consume(scram_via_plain, "plain-topic", 1, "plain-g2") == [b"p"]


def test_mutual_tls_confluent_and_kcat(broker: MusterProcess, certs: Path) -> None:
    conf = {
        "bootstrap.servers": broker.address("SSL"),
        **librdkafka_conf(certs, None, cert="alice"),
    }
    _produce(conf, "mtls-topic", b"over-mtls")
    assert _consume(conf, "mtls-topic", 1, "mtls-g") == [b"over-mtls"]
    kcat = [
        "kcat",
        "-b",
        broker.address("SSL"),
        "-X",
        "security.protocol=SSL",
        "-X",
        f"ssl.ca.location={certs / 'ca.pem'}",
        "-X",
        f"ssl.certificate.location={certs / 'client-bob-cert.pem'}",
        "-X",
        f"ssl.key.location={certs / 'client-bob-key.pem'}",
    ]
    out = subprocess.run(
        [*kcat, "-C", "-t", "mtls-topic", "-e", "-o", "beginning", "-q"],
        capture_output=True,
        timeout=60,
        text=True,
    )
    assert out.stdout.split() == ["over-mtls"], out.stderr
    # without a client certificate the TLS handshake is refused (ssl.client.auth=required)
    before = _topics(broker)
    with pytest.raises((Closed, ssl.SSLError)):
        RawClient(broker.ports["SSL"], tls_context(certs)).call(
            3, 12, {"topics": [{"name": "created-without-cert"}]}
        )
    assert _topics(broker) == before


def test_kcat_scram_sha512_produce_and_group_consume(broker: MusterProcess, certs: Path) -> None:
    base = ["kcat", "-b", broker.address("SASL_SSL")]
    for key, value in _scram(certs).items():
        base += ["-X", f"{key}={value}"]
    subprocess.run([*base, "-P", "-t", "kcat-scram"], input=b"k1\nk2\n", check=True, timeout=60)
    out = subprocess.run(
        [*base, "-G", "kcat-group", "-X", "auto.offset.reset=earliest", "-e", "-q", "kcat-scram"],
        capture_output=True,
        timeout=90,
        text=True,
    )
    assert out.stdout.split() == ["k1", "k2"], out.stderr


def _python_group(broker: MusterProcess, group: str) -> dict[str, object]:
    """kafka-python / aiokafka group consumer arguments, committing by hand."""
    return {
        "bootstrap_servers": broker.address("SASL_SSL"),
        "group_id": group,
        "auto_offset_reset": "earliest",
        "enable_auto_commit": False,
    }


def test_kafka_python_scram_sha512(broker: MusterProcess, certs: Path) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    kw = python_client_conf(certs, "SCRAM-SHA-512", SCRAM_USER, SCRAM_PW)
    producer = KafkaProducer(bootstrap_servers=broker.address("SASL_SSL"), **kw)
    producer.send("kp-scram", b"kp1").get(timeout=20)
    producer.close()
    consumer = KafkaConsumer(
        "kp-scram", consumer_timeout_ms=15000, **_python_group(broker, "kp-g"), **kw
    )
    # the one record, then on: iterating to the end waited out all 15 s of
    # consumer_timeout_ms (still the bound should the record not come); that
    # nothing follows it is the end offset's check below
    values = [m.value for m in itertools.islice(consumer, 1)]
    consumer.commit()
    from kafka import TopicPartition as KTP

    assert values == [b"kp1"]
    assert consumer.end_offsets([KTP("kp-scram", 0)]) == {KTP("kp-scram", 0): 1}
    assert consumer.committed(KTP("kp-scram", 0)) == 1
    consumer.close()


def test_aiokafka_plain_and_scram(broker: MusterProcess, certs: Path) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    async def run() -> list[bytes]:
        plain = python_client_conf(certs, "PLAIN", "alice", "alice-secret")
        producer = AIOKafkaProducer(bootstrap_servers=broker.address("SASL_SSL"), **plain)
        await producer.start()
        await producer.send_and_wait("aio-topic", b"a1")
        await producer.stop()
        scram = python_client_conf(certs, "SCRAM-SHA-512", SCRAM_USER, SCRAM_PW)
        consumer = AIOKafkaConsumer("aio-topic", **_python_group(broker, "aio-g"), **scram)
        await consumer.start()
        try:
            msg = await asyncio.wait_for(consumer.getone(), 30)
            await consumer.commit()
        finally:
            await consumer.stop()
        return [msg.value]

    assert asyncio.run(run()) == [b"a1"]


# ---- negative cases: error code, connection closed, nothing changed ----------


def _topics(broker: MusterProcess) -> set[str]:
    admin = AdminClient({"bootstrap.servers": broker.address("PLAINTEXT")})
    return set(admin.list_topics(timeout=10).topics)


def test_no_credentials_wrong_password_unknown_mechanism(
    broker: MusterProcess, certs: Path
) -> None:
    port = broker.ports["SASL_PLAINTEXT"]
    before = _topics(broker)
    # no credentials: a Metadata (which would auto-create) is refused by closing
    raw = RawClient(port)
    assert (
        raw.call(18, 3, {"client_software_name": "t", "client_software_version": "1"}).error_code
        == 0
    )
    with pytest.raises(Closed):
        raw.call(
            3, 12, {"topics": [{"name": "created-by-nobody"}], "allow_auto_topic_creation": True}
        )
    # wrong password: SASL_AUTHENTICATION_FAILED, then the connection closes
    raw = RawClient(port)
    answer = raw.plain_login("alice", "not-her-password")
    assert answer.error_code == 58
    with pytest.raises(Closed):
        raw.call(3, 12, {"topics": [{"name": "created-after-failure"}]})
    # unknown mechanism: UNSUPPORTED_SASL_MECHANISM listing what is offered, then close
    raw = RawClient(port)
    answer = raw.call(17, 1, {"mechanism": "GSSAPI"})
    assert answer.error_code == 33 and "SCRAM-SHA-512" in answer.mechanisms
    with pytest.raises(Closed):
        raw.call(36, 2, {"auth_bytes": b"\0alice\0alice-secret"})
    # librdkafka with a wrong SCRAM password gets an authentication error
    errors: list[str] = []
    producer = Producer(
        {
            "bootstrap.servers": broker.address("SASL_SSL"),
            **librdkafka_conf(certs, "SCRAM-SHA-512", SCRAM_USER, "wrong"),
            "error_cb": lambda e: errors.append(str(e)),
        }
    )
    producer.produce("created-by-wrong-password", b"x")
    producer.flush(3)
    assert any("Authentication failed" in e for e in errors), errors
    assert _topics(broker) == before


def test_handshake_v0_then_bare_tokens(broker: MusterProcess) -> None:
    """SaslHandshake v0 (pre-KIP-152 clients): the SASL tokens then travel as bare
    size-prefixed frames, without Kafka request headers."""
    raw = RawClient(broker.ports["SASL_PLAINTEXT"])
    assert raw.call(17, 0, {"mechanism": "PLAIN"}).error_code == 0
    token = b"\0alice\0alice-secret"
    raw.sock.sendall(struct.pack(">i", len(token)) + token)
    assert raw.sock.recv(4) == struct.pack(">i", 0)  # PLAIN's empty server token
    assert raw.call(3, 12, {"topics": []}).brokers  # authenticated: served
    bad = RawClient(broker.ports["SASL_PLAINTEXT"])
    assert bad.call(17, 0, {"mechanism": "PLAIN"}).error_code == 0
    wrong = b"\0alice\0wrong"
    bad.sock.sendall(struct.pack(">i", len(wrong)) + wrong)
    assert bad.sock.recv(4) == b""  # closed without an answer, as Kafka does


def _log_lines(broker: MusterProcess, text: str) -> list[str]:
    return [line for line in broker.log_text().splitlines() if text in line]


def _await_log_line(broker: MusterProcess, text: str, before: int) -> list[str]:
    """The broker's log lines holding `text`, once there are more than `before`."""
    deadline = time.monotonic() + 10
    while len(lines := _log_lines(broker, text)) <= before and time.monotonic() < deadline:
        time.sleep(0.05)
    return lines


def test_plaintext_client_on_tls_port_is_closed(broker: MusterProcess, certs: Path) -> None:
    """Closed with one log line naming the client, the listener and the likely
    mistake (asyncio alone logs a failed handshake only in debug mode)."""
    before = _topics(broker)
    hint = "the client sent no TLS handshake"
    seen = len(_log_lines(broker, hint))
    raw = RawClient(broker.ports["SASL_SSL"])
    port = raw.sock.getsockname()[1]
    with pytest.raises(Closed):
        raw.call(3, 12, {"topics": [{"name": "created-over-plaintext"}]})
    lines = _await_log_line(broker, hint, seen)
    assert len(lines) == seen + 1
    assert f"127.0.0.1:{port} on TLS listener SASL_SSL" in lines[-1]
    assert "security.protocol=PLAINTEXT or SASL_PLAINTEXT" in lines[-1]
    tls = RawClient(broker.ports["SASL_SSL"], tls_context(certs))  # TLS still works after
    assert tls.plain_login(ADMIN, ADMIN_PW).error_code == 0
    assert _topics(broker) == before
    assert "Traceback" not in broker.log_text()


def test_tls_client_on_plaintext_port_is_closed(broker: MusterProcess, certs: Path) -> None:
    """The reverse mistake: a TLS ClientHello read as a Kafka frame. One line
    saying so instead of "frame of 369295616 bytes"; the client sees a close."""
    hint = "a TLS handshake on SASL_PLAINTEXT listener SASL_PLAINTEXT"
    seen = len(_log_lines(broker, hint))
    sock = socket.create_connection(("127.0.0.1", broker.ports["SASL_PLAINTEXT"]), timeout=10)
    port = sock.getsockname()[1]
    with pytest.raises((ssl.SSLError, ConnectionError)):
        tls_context(certs).wrap_socket(sock, server_hostname="localhost")
    lines = _await_log_line(broker, hint, seen)
    assert len(lines) == seen + 1
    assert f"127.0.0.1:{port}" in lines[-1] and "security.protocol=SSL or SASL_SSL" in lines[-1]
    raw = RawClient(broker.ports["SASL_PLAINTEXT"])  # plaintext still served after
    assert raw.plain_login("alice", "alice-secret").error_code == 0
    assert "Traceback" not in broker.log_text()


def test_expired_reauth_session_is_closed(broker: MusterProcess) -> None:
    raw = RawClient(broker.ports["SASL_PLAINTEXT"])
    answer = raw.plain_login("alice", "alice-secret")
    assert answer.error_code == 0
    assert answer.session_lifetime.total_seconds() * 1000 == REAUTH_MS
    assert raw.call(3, 12, {"topics": []}).brokers[0].port == broker.ports["SASL_PLAINTEXT"]
    time.sleep(REAUTH_MS / 1000 + 0.3)
    with pytest.raises(Closed):
        raw.call(3, 12, {"topics": [{"name": "created-after-expiry"}]})
    # re-authenticating in time keeps the connection
    raw = RawClient(broker.ports["SASL_PLAINTEXT"])
    raw.plain_login("alice", "alice-secret")
    time.sleep(REAUTH_MS / 1000 + 0.3)
    assert raw.plain_login("alice", "alice-secret").error_code == 0
    assert raw.call(3, 12, {"topics": []}).brokers
    assert "created-after-expiry" not in _topics(broker)


def test_librdkafka_reauthenticates_before_its_session_ends(broker: MusterProcess) -> None:
    """KIP-368 with a real client: librdkafka re-authenticates on the same
    connection when the session lifetime runs out, and keeps producing."""
    expired = broker.log_text().count("SASL session expired")
    errors: list[str] = []
    producer = Producer(
        {
            "bootstrap.servers": broker.address("SASL_PLAINTEXT"),
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "alice",
            "sasl.password": "alice-secret",
            "error_cb": lambda e: errors.append(str(e)),
        }
    )
    for i in range(4):
        producer.produce("reauth-topic", f"r{i}".encode())
        assert producer.flush(10) == 0
        time.sleep(REAUTH_MS / 1000)
    assert errors == []
    # had it not re-authenticated, the broker would have closed the connection
    assert broker.log_text().count("SASL session expired") == expired


def test_scram_credentials_survive_kill9_as_salted_hashes(
    broker: MusterProcess, certs: Path
) -> None:
    store = broker.data_dir / "security" / "scram-credentials.json"
    stored = json.loads(store.read_text())
    assert set(stored[SCRAM_USER]) == {"SCRAM-SHA-512"}
    assert stored[SCRAM_USER]["SCRAM-SHA-512"]["iterations"] == 8192
    assert SCRAM_PW not in store.read_text()
    broker.restart(hard=True)
    conf = {"bootstrap.servers": broker.address("SASL_SSL"), **_scram(certs)}
    producer = Producer(conf)
    producer.produce("after-kill", uuid.uuid4().bytes)
    assert producer.flush(20) == 0
    admin = AdminClient(conf)  # kept alive until its answers are in
    described = admin.describe_user_scram_credentials([SCRAM_USER, "nobody"])
    infos = described[SCRAM_USER].result(10).scram_credential_infos
    assert [(i.mechanism.name, i.iterations) for i in infos] == [("SCRAM_SHA_512", 8192)]
    with pytest.raises(KafkaException) as info:
        described["nobody"].result(10)
    assert info.value.args[0].code() == KafkaError.RESOURCE_NOT_FOUND
