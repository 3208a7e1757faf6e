"""Hostile sizes and slow senders, each answered within a bound (the short
form of reliability/limits.py's cases, one regression test per bug it found)."""

from __future__ import annotations

import select
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from muster.protocol.client_codec import decode_response, encode_request
from tests.support.brokers import MusterProcess, peer_closed
from tests.wire.clients import create_topic

IDLE_MS = 2000


@pytest.fixture(scope="module")
def tight(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MusterProcess]:
    settings = {"connections.max.idle.ms": str(IDLE_MS)}
    broker = MusterProcess(tmp_path_factory.mktemp("limits") / "data", settings).start()
    try:
        yield broker
    finally:
        broker.close()


def test_slowloris_request_is_cut_off_within_the_idle_time(tight: MusterProcess) -> None:
    # an ApiVersions v3 frame whose size arrives at once and whose body never
    # completes: one byte a second used to hold the connection for ever
    header = struct.pack(">hhih", 18, 3, 1, 1) + b"x" + b"\x00"
    body = b"\x02x\x021\x00"
    with socket.create_connection(("127.0.0.1", tight.port)) as sock:
        sock.sendall(struct.pack(">i", len(header) + len(body)) + header[:2])
        started = time.monotonic()
        closed = False
        for byte in header[2:]:
            if peer_closed(sock, 1.0):
                closed = True
                break
            sock.sendall(bytes([byte]))
        closed = closed or peer_closed(sock, IDLE_MS / 1000 + 2)
        took = time.monotonic() - started
    assert closed and took <= IDLE_MS / 1000 + 2
    assert "not received within" in tight.log_text()


def test_idle_connection_is_closed_after_the_idle_time_and_a_busy_one_is_not(
    tight: MusterProcess,
) -> None:
    with (
        socket.create_connection(("127.0.0.1", tight.port)) as idle,
        socket.create_connection(("127.0.0.1", tight.port)) as busy,
    ):
        started = time.monotonic()
        # the busy one sends an ApiVersions request twice a second
        while time.monotonic() - started < IDLE_MS / 1000 + 1.5:
            if time.monotonic() - started < IDLE_MS / 1000 - 0.5:
                assert not select.select([idle], [], [], 0)[0]  # not closed early
            busy.sendall(encode_request(18, 0, 1, "busy", {}))
            (size,) = struct.unpack(">i", busy.recv(4, socket.MSG_WAITALL))
            assert len(busy.recv(size, socket.MSG_WAITALL)) == size
            time.sleep(0.5)
        assert peer_closed(idle, 2.0)
        busy.sendall(encode_request(18, 0, 2, "busy", {}))
        assert len(busy.recv(4, socket.MSG_WAITALL)) == 4  # still served
    assert "idle for 2s" in tight.log_text()


def test_connections_past_max_connections_per_ip_are_closed_and_logged(tmp_path: Path) -> None:
    broker = MusterProcess(tmp_path / "data", {"max.connections.per.ip": "40"}).start()
    socks: list[socket.socket] = []
    try:
        time.sleep(0.5)  # the start-up probe's connection is gone
        socks = [socket.create_connection(("127.0.0.1", broker.port)) for _ in range(45)]
        closed: set[int] = set()
        deadline = time.monotonic() + 20
        while len(closed) < 5 and time.monotonic() < deadline:
            readable, _, _ = select.select(socks, [], [], 0.5)
            closed |= {id(s) for s in readable if peer_closed(s, 0.01)}
        time.sleep(0.5)
        readable, _, _ = select.select(socks, [], [], 0)
        closed |= {id(s) for s in readable if peer_closed(s, 0.01)}
        assert len(closed) == 5  # the five past the cap, and no other
        assert broker.log_text().count("already has the configured maximum of 40") == 5
        for s in socks:
            s.close()
        time.sleep(0.5)  # slots freed: a client connects again
        create_topic(broker.bootstrap, "after-cap")
    finally:
        for s in socks:
            s.close()
        broker.close()


def test_creating_more_than_ten_thousand_partitions_at_once_is_a_policy_violation(
    tight: MusterProcess,
) -> None:
    admin = AdminClient({"bootstrap.servers": tight.bootstrap})
    future = admin.create_topics([NewTopic("hundred-k", 100_000, 1)])["hundred-k"]
    with pytest.raises(KafkaException) as refused:
        future.result(timeout=30)
    assert refused.value.args[0].name() == "POLICY_VIOLATION"
    assert "hundred-k" not in admin.list_topics(timeout=10).topics
    create_topic(tight.bootstrap, "grows")
    grow = admin.create_partitions([NewPartitions("grows", 20_002)])["grows"]
    with pytest.raises(KafkaException) as refused:
        grow.result(timeout=30)
    assert refused.value.args[0].name() == "POLICY_VIOLATION"


def test_a_megabyte_topic_name_is_refused_and_not_logged_whole(tight: MusterProcess) -> None:
    admin = AdminClient({"bootstrap.servers": tight.bootstrap})
    # librdkafka writes the name with an int16 size (it wraps past 32,767);
    # the campaign sends 1 MiB with muster's own codec
    name = "n" * 30_000
    with pytest.raises(KafkaException) as refused:
        admin.create_topics([NewTopic(name, 1, 1)])[name].result(timeout=30)
    assert refused.value.args[0].code() == 17  # INVALID_TOPIC_EXCEPTION
    assert max(len(line) for line in tight.log_text().splitlines()) < 4096


def _metadata(port: int, names: list[str], auto_create: bool) -> dict[str, int]:
    """Metadata v12 over a raw socket: {topic: error code}."""
    body = {
        "topics": [{"name": name, "topic_id": None} for name in names],
        "allow_auto_topic_creation": auto_create,
        "include_topic_authorized_operations": False,
    }
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(encode_request(3, 12, 1, "t", body))
        (size,) = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))
        frame = b""
        while len(frame) < size:
            chunk = sock.recv(size - len(frame))
            assert chunk, "closed by the broker"
            frame += chunk
    _, answer = decode_response(3, 12, frame)
    return {t.name: int(t.error_code) for t in answer.topics}


def test_metadata_for_many_unknown_topics_logs_one_line(tmp_path: Path) -> None:
    broker = MusterProcess(tmp_path / "data", {"auto.create.topics.enable": "false"}).start()
    try:
        errors = _metadata(broker.port, [f"absent-{i}" for i in range(2000)], False)
        assert set(errors.values()) == {3}  # UNKNOWN_TOPIC_OR_PARTITION
        lines = [line for line in broker.log_text().splitlines() if "absent-" in line]
        assert len(lines) == 1 and "and 1,997 more" in lines[0]
    finally:
        broker.close()


def test_a_name_colliding_with_a_topic_is_an_error_not_a_crash(tight: MusterProcess) -> None:
    # found by reliability/fuzz_wire.py: auto-creating 'seed-_' next to 'seed-.'
    # raised out of the handler and dropped the connection with a traceback
    create_topic(tight.bootstrap, "coll.ide")
    assert _metadata(tight.port, ["coll_ide"], True) == {"coll_ide": 17}
    admin = AdminClient({"bootstrap.servers": tight.bootstrap})
    with pytest.raises(KafkaException) as refused:
        admin.create_topics([NewTopic("coll_ide", 1, 1)])["coll_ide"].result(timeout=30)
    assert refused.value.args[0].code() == 17  # INVALID_TOPIC_EXCEPTION
    assert "Traceback" not in tight.log_text()
