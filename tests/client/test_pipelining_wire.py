"""Producer pipelining (max.in.flight.requests.per.connection > 1), the
inline fast path of `Producer.produce`, and fetch pipelining, over real
sockets."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from muster.client import Consumer, Producer, TopicPartition
from muster.client.consumer import AIOConsumer
from muster.client.errors import ConfigError
from tests.wire.clients import confluent_produce, create_topic


def test_pipelined_producer_keeps_order(broker, topic_name):
    create_topic(broker.bootstrap, topic_name, 2)
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "linger.ms": 1,
            "batch.size": 4096,  # many small batches, several in flight per partition
            "max.in.flight.requests.per.connection": 5,
        }
    )
    futures = [producer.produce(topic_name, b"v%d" % i, partition=i % 2) for i in range(3000)]
    futures.append(producer.produce(topic_name, "text", key="k", partition=0))  # slow path
    assert producer.flush(30) == 0
    producer.close()
    metas = [f.result() for f in futures]
    for p in (0, 1):
        offsets = [m.offset for m in metas if m.partition == p]
        assert offsets == list(range(offsets[0], offsets[0] + len(offsets)))
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic_name, 0)])
    got: list = []
    while len(got) < 1501:
        got += consumer.poll(5.0)
    consumer.close()
    assert [r.value for r in got[:1500]] == [b"v%d" % i for i in range(0, 3000, 2)]
    assert (got[1500].key, got[1500].value) == (b"k", b"text")


def test_pipelining_refused_with_idempotence():
    with pytest.raises(ConfigError):
        Producer(
            {
                "bootstrap.servers": "127.0.0.1:1",
                "enable.idempotence": True,
                "max.in.flight.requests.per.connection": 5,
            }
        )


def test_next_fetch_is_written_before_the_answer_is_decoded(muster_broker, topic_name):
    """The driver buffers a Fetch answer raw, writes the next Fetch, and only
    decodes when the application polls: the broker works while we decode."""
    create_topic(muster_broker.bootstrap, topic_name, 1)
    for i in range(3):  # three separate batches
        confluent_produce(muster_broker.bootstrap, topic_name, [(0, None, b"v%d" % i, [])] * 5)
    tp = TopicPartition(topic_name, 0)

    async def run() -> list[tuple[int, bool]]:
        consumer = await AIOConsumer(
            {
                "bootstrap.servers": muster_broker.bootstrap,
                "max.partition.fetch.bytes": 1,  # one batch per answer
            }
        ).start()
        writes: list[tuple[int, bool]] = []
        write = consumer._write_fetch

        def spy(request: Any) -> Any:
            buffered = consumer.fetcher.buffer
            raw = bool(buffered) and buffered[-1].records is None
            writes.append((request.body["topics"][0]["partitions"][0]["fetch_offset"], raw))
            return write(request)

        consumer._write_fetch = spy  # type: ignore[method-assign]
        try:
            consumer.assign([tp])
            consumer.seek(tp, 0)
            got: list[Any] = []
            while len(got) < 15:
                got += await consumer.poll(5.0)
            assert [r.offset for r in got] == list(range(15))
        finally:
            await consumer.close()
        return writes

    writes = asyncio.run(run())
    # the fetch for offset 5 went out while the answer holding 0..4 was still raw
    assert (0, False) in writes
    assert (5, True) in writes
