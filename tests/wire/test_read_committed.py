"""read_committed on the wire, without the transaction coordinator: the
partition log is written offline (transactional batches and markers through
the log itself), then a broker serves it. Fetch answers the last stable offset
and, for read_committed, the aborted transactions and nothing at or past the
LSO; ListOffsets answers the LSO as LATEST; a real read_committed consumer
skips the aborted records and stops at the open transaction."""

from __future__ import annotations

import datetime
import io
import socket
import struct
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition
from kio.serial import entity_reader, entity_writer

from muster.log.manager import LogManager
from muster.protocol.codec import build, request_schema, response_schema
from muster.records.batch import Record, build_batch, iter_batches
from tests.protocol.test_pipelining import read_frame
from tests.support.brokers import MusterProcess

TOPIC = "rc"
P1, P2, P3 = 1001, 1002, 1003


def plain(value: bytes, n: int = 1, ts: int = 1_000) -> bytes:
    return build_batch([Record(None, value + b"-%d" % i, (), ts) for i in range(n)])


def txn(pid: int, value: bytes, n: int = 1, seq: int = 0, ts: int = 1_000) -> bytes:
    return build_batch(
        [Record(None, value + b"-%d" % i, (), ts) for i in range(n)],
        producer_id=pid,
        producer_epoch=0,
        base_sequence=seq,
        transactional=True,
    )


def write_offline(data_dir: Path) -> uuid.UUID:
    """HW 11, LSO 7 (P3's transaction is open), P1's transaction aborted."""
    mgr = LogManager(data_dir)
    mgr.load()
    info = mgr.create_topic(TOPIC, 1)
    log = mgr.get(TOPIC, 0)
    assert log is not None
    log.append(plain(b"a", 2, ts=1_000), 0)  # 0-1
    log.append(txn(P1, b"aborted", 2, ts=2_000), 0)  # 2-3
    log.append(txn(P2, b"committed", ts=3_000), 0)  # 4
    log.append_marker(P1, 0, False, 0, 3_500)  # 5
    log.append(plain(b"b", ts=4_000), 0)  # 6
    log.append(txn(P3, b"open", 2, ts=5_000), 0)  # 7-8
    log.append(plain(b"c", ts=6_000), 0)  # 9
    log.append_marker(P2, 0, True, 0, 6_500)  # 10
    mgr.close()
    return info.topic_id


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MusterProcess, uuid.UUID]]:
    data_dir = tmp_path_factory.mktemp("read-committed") / "data"
    topic_id = write_offline(data_dir)
    proc = MusterProcess(data_dir).start()
    try:
        yield proc, topic_id
    finally:
        proc.close()


def call(port: int, api_key: int, version: int, body: dict[str, Any]) -> Any:
    schema = request_schema(api_key, version)
    header = schema.__header_schema__  # type: ignore[attr-defined]
    buf = io.BytesIO()
    entity_writer(header)(
        buf,
        header(
            request_api_key=api_key,
            request_api_version=version,
            correlation_id=7,
            client_id="read-committed",
        ),
    )
    entity_writer(schema)(buf, build(schema, body))
    data = buf.getvalue()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(struct.pack(">i", len(data)) + data)
        frame = read_frame(sock)
    answer_schema = response_schema(api_key, version)
    reply_header, pos = entity_reader(answer_schema.__header_schema__)(frame, 0)  # type: ignore[attr-defined]
    assert reply_header.correlation_id == 7
    answer, _ = entity_reader(answer_schema)(frame, pos)
    return answer


def fetch(
    broker: tuple[MusterProcess, uuid.UUID], version: int, isolation: int, offset: int = 0
) -> Any:
    proc, topic_id = broker
    body = {
        "replica_id": -1,
        "max_wait": datetime.timedelta(milliseconds=50),
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": isolation,
        "session_epoch": -1,
        "topics": [
            {
                "topic": TOPIC,
                "topic_id": topic_id,
                "partitions": [
                    {
                        "partition": 0,
                        "current_leader_epoch": -1,
                        "fetch_offset": offset,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1 << 20,
                    }
                ],
            }
        ],
    }
    answer = call(proc.port, 1, version, body)
    [topic] = answer.responses
    [part] = topic.partitions
    assert part.error_code == 0
    return part


def bases(records: bytes | None) -> list[int]:
    return [h.base_offset for h in iter_batches(records or b"")]


@pytest.mark.parametrize("version", [4, 11, 12, 16])
def test_fetch_read_committed_stops_at_the_lso_and_lists_aborted(
    broker: tuple[MusterProcess, uuid.UUID], version: int
) -> None:
    part = fetch(broker, version, isolation=1)
    assert (part.high_watermark, part.last_stable_offset) == (11, 7)
    assert bases(part.records) == [0, 2, 4, 5, 6]
    assert [(a.producer_id, a.first_offset) for a in part.aborted_transactions] == [(P1, 2)]
    # past the aborted transaction: nothing left to skip
    part = fetch(broker, version, isolation=1, offset=6)
    assert bases(part.records) == [6] and part.aborted_transactions == ()
    # at the LSO: no data (after the long-poll), an empty list
    part = fetch(broker, version, isolation=1, offset=7)
    assert bases(part.records) == [] and part.aborted_transactions == ()
    assert part.last_stable_offset == 7


@pytest.mark.parametrize("version", [4, 12, 16])
def test_fetch_read_uncommitted_reads_to_the_high_watermark(
    broker: tuple[MusterProcess, uuid.UUID], version: int
) -> None:
    part = fetch(broker, version, isolation=0)
    assert (part.high_watermark, part.last_stable_offset) == (11, 7)
    assert bases(part.records) == [0, 2, 4, 5, 6, 7, 9, 10]
    assert part.aborted_transactions is None


@pytest.mark.parametrize("version", [2, 5, 8])
def test_list_offsets_isolation(broker: tuple[MusterProcess, uuid.UUID], version: int) -> None:
    proc, _ = broker

    def list_offset(timestamp: int, isolation: int) -> tuple[int, int]:
        body = {
            "replica_id": -1,
            "isolation_level": isolation,
            "topics": [
                {
                    "name": TOPIC,
                    "partitions": [
                        {"partition_index": 0, "current_leader_epoch": -1, "timestamp": timestamp}
                    ],
                }
            ],
        }
        [topic] = call(proc.port, 2, version, body).topics
        [part] = topic.partitions
        assert part.error_code == 0
        return part.offset, part.timestamp

    assert list_offset(-1, 0)[0] == 11  # LATEST: the high watermark
    assert list_offset(-1, 1)[0] == 7  # LATEST: the LSO
    assert list_offset(4_000, 1) == (6, 4_000)
    assert list_offset(5_000, 0) == (7, 5_000)
    assert list_offset(5_000, 1) == (-1, -1)  # the record is past the LSO
    if version >= 7:  # MAX_TIMESTAMP
        assert list_offset(-3, 0)[0] == 10  # the commit marker's timestamp, 6_500
        assert list_offset(-3, 1) == (-1, -1)


def consume(bootstrap: str, isolation: str, expected: int) -> list[tuple[int, bytes]]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "unused-assign-mode",
            "enable.auto.commit": False,
            "isolation.level": isolation,
        }
    )
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    out: list[tuple[int, bytes]] = []
    try:
        for _ in range(40):
            msg = consumer.poll(0.25)
            if msg is None:
                if len(out) >= expected:
                    break
                continue
            if msg.error():
                raise KafkaException(msg.error())
            out.append((msg.offset(), msg.value()))
    finally:
        consumer.close()
    return out


def test_a_read_committed_consumer_skips_aborted_records(
    broker: tuple[MusterProcess, uuid.UUID],
) -> None:
    proc, _ = broker
    committed = consume(proc.bootstrap, "read_committed", 4)
    assert committed == [(0, b"a-0"), (1, b"a-1"), (4, b"committed-0"), (6, b"b-0")]
    everything = consume(proc.bootstrap, "read_uncommitted", 9)
    assert [offset for offset, _ in everything] == [0, 1, 2, 3, 4, 6, 7, 8, 9]


def test_state_survives_kill_9_and_the_commit_releases_the_lso(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    topic_id = write_offline(data_dir)
    proc = MusterProcess(data_dir).start()
    try:
        proc.kill()  # its next start recovers without a clean-shutdown snapshot
        proc.start()
        part = fetch((proc, topic_id), 12, isolation=1)
        assert (part.high_watermark, part.last_stable_offset) == (11, 7)
        assert [(a.producer_id, a.first_offset) for a in part.aborted_transactions] == [(P1, 2)]
        proc.kill()
        mgr = LogManager(data_dir)
        mgr.load()
        log = mgr.get(TOPIC, 0)
        assert log is not None and log.first_unstable_offset() == 7
        log.append_marker(P3, 0, True, 0, 7_000)  # 11
        mgr.close()
        proc.start()
        part = fetch((proc, topic_id), 12, isolation=1)
        assert (part.high_watermark, part.last_stable_offset) == (12, 12)
        assert bases(part.records) == [0, 2, 4, 5, 6, 7, 9, 10, 11]
        assert [(a.producer_id, a.first_offset) for a in part.aborted_transactions] == [(P1, 2)]
        committed = consume(proc.bootstrap, "read_committed", 7)
        assert [offset for offset, _ in committed] == [0, 1, 4, 6, 7, 8, 9]
    finally:
        proc.close()
