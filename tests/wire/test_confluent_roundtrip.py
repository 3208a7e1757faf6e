"""confluent-kafka (librdkafka) produces and consumes through muster, byte for byte."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, TopicPartition

from tests.support.brokers import MusterProcess
from tests.wire.clients import by_partition, confluent_consume_all, confluent_produce, create_topic


def _messages(
    n: int, partitions: int
) -> list[tuple[int, bytes | None, bytes | None, list[tuple[str, bytes]]]]:
    out = []
    for i in range(n):
        key = None if i % 7 == 0 else f"key-{i}".encode()
        value = None if i % 11 == 0 else (f"value-{i}-" * (i % 5 + 1)).encode()
        headers = [("h", str(i).encode()), ("kind", b"test")] if i % 3 else []
        out.append((i % partitions, key, value, headers))
    return out


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_every_codec_round_trips_in_order(shared_muster: MusterProcess, codec: str) -> None:
    topic = f"roundtrip-{codec}"
    create_topic(shared_muster.bootstrap, topic, partitions=3)
    sent = _messages(300, 3)
    acked = confluent_produce(shared_muster.bootstrap, topic, sent, **{"compression.type": codec})
    assert len(acked) == len(sent)
    got = confluent_consume_all(shared_muster.bootstrap, topic, 3, len(sent))
    parts = by_partition(got)
    for p in range(3):
        expected = [(k, v, tuple(h)) for (pp, k, v, h) in sent if pp == p]
        received = [(m.key, m.value, m.headers) for m in parts[p]]
        assert received == expected
        assert [m.offset for m in parts[p]] == list(range(len(expected)))


def test_latest_offset_counts_records_not_batches(shared_muster: MusterProcess) -> None:
    topic = "count-records"
    create_topic(shared_muster.bootstrap, topic, partitions=1)
    confluent_produce(shared_muster.bootstrap, topic, [(0, None, b"x" * 10, [])] * 1000)
    consumer = Consumer({"bootstrap.servers": shared_muster.bootstrap, "group.id": "wm"})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    finally:
        consumer.close()
    assert (low, high) == (0, 1000)


def test_idempotent_producer_writes_each_message_once(shared_muster: MusterProcess) -> None:
    topic = "idempotent"
    create_topic(shared_muster.bootstrap, topic, partitions=2)
    sent = _messages(500, 2)
    acked = confluent_produce(
        shared_muster.bootstrap, topic, sent, **{"enable.idempotence": True, "acks": "all"}
    )
    assert len(acked) == 500
    got = confluent_consume_all(shared_muster.bootstrap, topic, 2, 500)
    assert len(got) == 500
    assert sorted((m.partition, m.offset) for m in got) == sorted(acked)


def test_acked_writes_survive_restart_and_kill(muster: MusterProcess) -> None:
    topic = "durable"
    create_topic(muster.bootstrap, topic, partitions=2)
    first = _messages(200, 2)
    confluent_produce(muster.bootstrap, topic, first, acks="all")
    muster.restart()  # clean SIGTERM shutdown
    second = _messages(200, 2)
    confluent_produce(muster.bootstrap, topic, second, acks="1")
    muster.restart(hard=True)  # kill -9: only fsynced, acknowledged writes may count
    got = confluent_consume_all(muster.bootstrap, topic, 2, 400)
    parts = by_partition(got)
    for p in range(2):
        expected = [(k, v) for (pp, k, v, _h) in first + second if pp == p]
        assert [(m.key, m.value) for m in parts[p]] == expected


def test_auto_created_topic_on_produce(shared_muster: MusterProcess) -> None:
    acked = confluent_produce(shared_muster.bootstrap, "auto-created", [(0, b"k", b"v", [])])
    assert acked == [(0, 0)]
    got = confluent_consume_all(shared_muster.bootstrap, "auto-created", 1, 1)
    assert [(m.key, m.value) for m in got] == [(b"k", b"v")]
