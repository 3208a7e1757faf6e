"""Producer pipelining (max.in.flight.requests.per.connection > 1) and the
inline fast path of `Producer.produce`, over real sockets."""

from __future__ import annotations

import pytest

from muster.client import Consumer, Producer, TopicPartition
from muster.client.errors import ConfigError
from tests.wire.clients import create_topic


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
