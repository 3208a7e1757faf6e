"""kafka-python and aiokafka produce and consume through muster."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.structs import TopicPartition as AioTP
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from tests.support.brokers import MusterProcess
from tests.wire.clients import create_topic

CODECS = [None, "gzip", "snappy", "lz4", "zstd"]


def _records(n: int) -> list[tuple[bytes, bytes, list[tuple[str, bytes]]]]:
    return [
        (f"k{i}".encode(), f"v{i}".encode() * (i % 4 + 1), [("n", str(i).encode())])
        for i in range(n)
    ]


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_round_trip(shared_muster: MusterProcess, codec: str | None) -> None:
    topic = f"kp-{codec}"
    create_topic(shared_muster.bootstrap, topic, partitions=1)
    producer = KafkaProducer(
        bootstrap_servers=shared_muster.bootstrap, compression_type=codec, acks="all", linger_ms=5
    )
    sent = _records(200)
    futures = [producer.send(topic, value=v, key=k, headers=h, partition=0) for k, v, h in sent]
    producer.flush()
    offsets = [f.get(timeout=10).offset for f in futures]
    producer.close()
    assert offsets == list(range(200))
    consumer = KafkaConsumer(
        bootstrap_servers=shared_muster.bootstrap,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        consumer_timeout_ms=5000,
    )
    consumer.assign([TopicPartition(topic, 0)])
    consumer.seek_to_beginning()
    got = []
    for msg in consumer:
        got.append((msg.key, msg.value, list(msg.headers), msg.offset))
        if len(got) == 200:
            break
    consumer.close()
    assert got == [(k, v, h, i) for i, (k, v, h) in enumerate(sent)]


@pytest.mark.parametrize("codec", CODECS)
def test_aiokafka_round_trip(shared_muster: MusterProcess, codec: str | None) -> None:
    topic = f"aio-{codec}"
    create_topic(shared_muster.bootstrap, topic, partitions=2)
    sent = _records(200)

    async def scenario() -> list[
        tuple[int, int, bytes | None, bytes | None, list[tuple[str, bytes]]]
    ]:
        producer = AIOKafkaProducer(
            bootstrap_servers=shared_muster.bootstrap, compression_type=codec, acks="all"
        )
        await producer.start()
        try:
            for i, (k, v, h) in enumerate(sent):
                await producer.send(topic, value=v, key=k, headers=h, partition=i % 2)
            await producer.flush()
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            bootstrap_servers=shared_muster.bootstrap,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        await consumer.start()
        got = []
        try:
            consumer.assign([AioTP(topic, 0), AioTP(topic, 1)])
            await consumer.seek_to_beginning()
            while len(got) < len(sent):
                batch = await asyncio.wait_for(consumer.getmany(timeout_ms=1000), 20)
                for _tp, msgs in batch.items():
                    got += [(m.partition, m.offset, m.key, m.value, list(m.headers)) for m in msgs]
        finally:
            await consumer.stop()
        return got

    got = asyncio.run(scenario())
    for p in range(2):
        expected = [(k, v, h) for i, (k, v, h) in enumerate(sent) if i % 2 == p]
        mine = sorted((g for g in got if g[0] == p), key=lambda g: g[1])
        assert [(g[2], g[3], g[4]) for g in mine] == expected
        assert [g[1] for g in mine] == list(range(len(expected)))
