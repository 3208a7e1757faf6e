"""Bad input gets a Kafka error or a clean close, and the broker keeps serving."""

from __future__ import annotations

import socket
import struct

from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.brokers import MusterProcess
from tests.wire.clients import confluent_consume_all, confluent_produce, create_topic


def _closed_after(port: int, payload: bytes) -> bool:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(payload)
        sock.settimeout(5)
        try:
            return sock.recv(1024) == b""
        except ConnectionResetError:
            return True


def test_garbage_and_oversized_frames_close_cleanly(shared_muster: MusterProcess) -> None:
    port = shared_muster.port
    assert _closed_after(port, struct.pack(">i", 2**30) + b"x" * 16)  # over the frame limit
    assert _closed_after(port, struct.pack(">i", 12) + b"\xff" * 12)  # unknown api key
    assert _closed_after(port, struct.pack(">i", 10) + struct.pack(">hhi", 3, 99, 1) + b"..")
    # a Metadata v12 header (null client id, no tags) and a body cut short
    truncated = struct.pack(">hhih", 3, 12, 7, -1) + b"\x00" + b"\x05"
    assert _closed_after(port, struct.pack(">i", len(truncated)) + truncated)
    # still serving real clients afterwards
    create_topic(shared_muster.bootstrap, "after-garbage")
    confluent_produce(shared_muster.bootstrap, "after-garbage", [(0, None, b"ok", [])])
    got = confluent_consume_all(shared_muster.bootstrap, "after-garbage", 1, 1)
    assert [m.value for m in got] == [b"ok"]
    assert "closing connection" in shared_muster.log_text()


def test_array_count_past_the_frame_closes_and_broker_keeps_serving(
    shared_muster: MusterProcess,
) -> None:
    # DescribeGroups v5 (header v2: client id "x", no tags) announcing 2**32 - 2
    # groups in five bytes: kio's native reader used to reserve 34 GB for them and
    # the failed allocation aborted the whole broker.
    frame = struct.pack(">hhih", 15, 5, 9, 1) + b"x" + b"\x00" + bytes.fromhex("ffffffff0f")
    for _ in range(3):
        assert _closed_after(shared_muster.port, struct.pack(">i", len(frame)) + frame)
    assert shared_muster.proc is not None and shared_muster.proc.poll() is None
    create_topic(shared_muster.bootstrap, "after-huge-count")
    confluent_produce(shared_muster.bootstrap, "after-huge-count", [(0, None, b"ok", [])])
    got = confluent_consume_all(shared_muster.bootstrap, "after-huge-count", 1, 1)
    assert [m.value for m in got] == [b"ok"]
    assert "items in" in shared_muster.log_text()


def test_unsupported_api_versions_version_gets_v0_answer(shared_muster: MusterProcess) -> None:
    with socket.create_connection(("127.0.0.1", shared_muster.port), timeout=5) as sock:
        body = struct.pack(">hhih", 18, 99, 42, -1)
        sock.sendall(struct.pack(">i", len(body)) + body)
        size = struct.unpack(">i", sock.recv(4))[0]
        data = b""
        while len(data) < size:
            data += sock.recv(size - len(data))
    correlation, error = struct.unpack_from(">ih", data)
    assert (correlation, error) == (42, 35)  # UNSUPPORTED_VERSION, v0 body follows
    # listing ApiVersions' own range only (Kafka 4.4's answer, kafka-diff)
    assert struct.unpack_from(">ihh", data, 6)[:2] == (1, 18)
    assert len(data) == 4 + 2 + 4 + 6


def test_invalid_topic_and_oversized_message_errors(shared_muster: MusterProcess) -> None:
    admin = AdminClient({"bootstrap.servers": shared_muster.bootstrap})
    fut = admin.create_topics([NewTopic("bad topic!", 1, 1)])["bad topic!"]
    try:
        fut.result(timeout=10)
        raise AssertionError("invalid topic name accepted")
    except Exception as exc:
        assert exc.args[0].code() == KafkaError.TOPIC_EXCEPTION

    create_topic(shared_muster.bootstrap, "small-messages", **{"max.message.bytes": "2000"})
    errors: list[KafkaError] = []
    producer = Producer(
        {
            "bootstrap.servers": shared_muster.bootstrap,
            "message.max.bytes": 100000,
            "compression.type": "none",
        }
    )
    producer.produce(
        "small-messages", value=b"x" * 50000, on_delivery=lambda err, _m: errors.append(err)
    )
    producer.flush(15)
    assert errors and errors[0].code() == KafkaError.MSG_SIZE_TOO_LARGE


def test_clients_cannot_append_to_internal_topics(shared_muster: MusterProcess) -> None:
    errors: list[KafkaError] = []
    producer = Producer({"bootstrap.servers": shared_muster.bootstrap})
    producer.produce(
        "__consumer_offsets",
        value=b"forged",
        key=b"k",
        partition=0,
        on_delivery=lambda err, _m: errors.append(err),
    )
    producer.flush(15)
    assert errors and errors[0].code() == KafkaError.TOPIC_EXCEPTION
