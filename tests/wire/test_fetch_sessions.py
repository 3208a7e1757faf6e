"""Incremental fetch sessions (KIP-227) over a real socket, and a client that uses them."""

from __future__ import annotations

import socket
from typing import Any

from kafka import KafkaConsumer, TopicPartition
from kio.serial import entity_reader

from muster.protocol.codec import build, request_schema, response_schema
from tests.protocol.test_pipelining import frame, read_frame
from tests.support.brokers import MusterProcess
from tests.wire.clients import confluent_produce, create_topic


def _fetch(sock: socket.socket, body: dict[str, Any], correlation: int) -> Any:
    request = build(request_schema(1, 12), {"replica_id": -1, "max_bytes": 1 << 20, **body})
    sock.sendall(frame(1, 12, correlation, request, flexible=True))
    data = read_frame(sock)
    answer, _size = entity_reader(response_schema(1, 12))(data, 5)  # correlation + tags
    return answer


def _parts(topic: str, offsets: dict[int, int]) -> list[dict[str, Any]]:
    partitions = [
        {"partition": p, "fetch_offset": o, "partition_max_bytes": 1 << 20, "log_start_offset": -1}
        for p, o in offsets.items()
    ]
    return [{"topic": topic, "partitions": partitions}] if partitions else []


def _answered(answer: Any) -> dict[int, int]:
    """partition -> high watermark, for the partitions the broker answered."""
    return {p.partition_index: p.high_watermark for t in answer.responses for p in t.partitions}


def test_session_answers_only_what_changed(shared_muster: MusterProcess) -> None:
    create_topic(shared_muster.bootstrap, "sessions", partitions=8)
    confluent_produce(shared_muster.bootstrap, "sessions", [(3, None, b"x", [])] * 2)
    with socket.create_connection(("127.0.0.1", shared_muster.port), timeout=10) as sock:
        full = _fetch(
            sock,
            {
                "session_id": 0,
                "session_epoch": 0,
                "max_wait": 0,
                "min_bytes": 0,
                "topics": _parts("sessions", {p: 0 for p in range(8)}),
            },
            1,
        )
        assert full.error_code == 0 and full.session_id != 0
        assert len(_answered(full)) == 8 and _answered(full)[3] == 2
        session = full.session_id
        # the client moves partition 3 past what it read; nothing else is new
        idle = _fetch(
            sock,
            {
                "session_id": session,
                "session_epoch": 1,
                "max_wait": 50,
                "min_bytes": 1,
                "topics": _parts("sessions", {3: 2}),
            },
            2,
        )
        assert idle.error_code == 0 and idle.session_id == session
        assert _answered(idle) == {}
        confluent_produce(shared_muster.bootstrap, "sessions", [(5, None, b"y", [])])
        news = _fetch(
            sock,
            {
                "session_id": session,
                "session_epoch": 2,
                "max_wait": 2000,
                "min_bytes": 1,
                "topics": [],
            },
            3,
        )
        assert _answered(news) == {5: 1}
        assert news.responses[0].partitions[0].records
        # a repeated epoch is refused as Kafka refuses it
        stale = _fetch(
            sock,
            {
                "session_id": session,
                "session_epoch": 2,
                "max_wait": 0,
                "min_bytes": 0,
                "topics": [],
            },
            4,
        )
        assert stale.error_code == 71  # INVALID_FETCH_SESSION_EPOCH
        unknown = _fetch(
            sock,
            {
                "session_id": session + 1,
                "session_epoch": 1,
                "max_wait": 0,
                "min_bytes": 0,
                "topics": [],
            },
            5,
        )
        assert unknown.error_code == 70  # FETCH_SESSION_ID_NOT_FOUND


def test_kafka_python_consumer_reads_everything_through_a_session(
    shared_muster: MusterProcess,
) -> None:
    create_topic(shared_muster.bootstrap, "sessions-kp", partitions=12)
    rows = [(p, None, f"{p}-{i}".encode(), []) for i in range(5) for p in range(12)]
    confluent_produce(shared_muster.bootstrap, "sessions-kp", rows)
    consumer = KafkaConsumer(
        bootstrap_servers=shared_muster.bootstrap,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        fetch_max_wait_ms=100,
    )
    try:
        consumer.assign([TopicPartition("sessions-kp", p) for p in range(12)])
        got: list[bytes] = []
        for _ in range(100):
            for records in consumer.poll(timeout_ms=200).values():
                got.extend(r.value for r in records)
            if len(got) >= len(rows):
                break
        # more arrives while the session is open: it must be seen too
        confluent_produce(shared_muster.bootstrap, "sessions-kp", [(7, None, b"late", [])])
        for _ in range(50):
            for records in consumer.poll(timeout_ms=200).values():
                got.extend(r.value for r in records)
            if b"late" in got:
                break
    finally:
        consumer.close()
    assert sorted(got) == sorted([r[2] for r in rows] + [b"late"])


def test_session_partition_moved_out_of_range_is_answered_without_new_data(
    shared_muster: MusterProcess,
) -> None:
    """An idle session partition is left out of the answer, but one whose
    position the client moved past the log end gets its error, though no
    record or watermark changed."""
    create_topic(shared_muster.bootstrap, "sessions-range", partitions=3)
    confluent_produce(shared_muster.bootstrap, "sessions-range", [(1, None, b"x", [])])
    with socket.create_connection(("127.0.0.1", shared_muster.port), timeout=10) as sock:
        full = _fetch(
            sock,
            {
                "session_id": 0,
                "session_epoch": 0,
                "max_wait": 0,
                "min_bytes": 0,
                "topics": _parts("sessions-range", {0: 0, 1: 1, 2: 0}),
            },
            1,
        )
        assert full.error_code == 0 and len(_answered(full)) == 3
        moved = _fetch(
            sock,
            {
                "session_id": full.session_id,
                "session_epoch": 1,
                "max_wait": 0,
                "min_bytes": 0,
                "topics": _parts("sessions-range", {2: 7}),
            },
            2,
        )
    [entry] = [p for t in moved.responses for p in t.partitions]
    assert entry.partition_index == 2
    assert entry.error_code == 1  # OFFSET_OUT_OF_RANGE
