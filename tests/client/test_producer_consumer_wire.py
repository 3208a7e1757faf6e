"""muster's Producer and Consumer over real sockets, against muster and
against Tansu, cross-checked with confluent-kafka (librdkafka)."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer as CProducer

from muster.client import Consumer, Producer, TopicPartition
from muster.client.errors import KafkaError, TopicError
from tests.client.conftest import session_conf
from tests.wire.clients import confluent_consume_all, confluent_produce, create_topic


def consume_n(consumer: Consumer, n: int, timeout: float = 20.0) -> list:
    out: list = []
    deadline = time.monotonic() + timeout
    while len(out) < n and time.monotonic() < deadline:
        out += consumer.poll(0.5)
    return out


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_muster_produces_confluent_reads(broker, topic_name, codec):
    create_topic(broker.bootstrap, topic_name, 3)
    producer = Producer(
        {"bootstrap.servers": broker.bootstrap, "compression.type": codec, "linger.ms": 2}
    )
    futures = []
    for i in range(300):
        futures.append(
            producer.produce(
                topic_name,
                value=b"value-%d" % i,
                key=b"key-%d" % (i % 17),
                headers=[("h", b"%d" % i)],
            )
        )
    futures.append(producer.produce(topic_name, value=None, key=b"tomb", partition=1))
    assert producer.flush(20) == 0
    producer.close()
    metas = [f.result() for f in futures]
    assert all(m.offset >= 0 for m in metas)
    msgs = confluent_consume_all(broker.bootstrap, topic_name, 3, 301)
    assert len(msgs) == 301
    by_value = {m.value: m for m in msgs}
    for i, meta in enumerate(metas[:300]):
        m = by_value[b"value-%d" % i]
        assert (m.partition, m.offset) == (meta.partition, meta.offset)
        assert m.key == b"key-%d" % (i % 17)
        assert m.headers == (("h", b"%d" % i),)
    assert by_value[None].key == b"tomb" and by_value[None].partition == 1


def test_idempotent_producer_delivers_in_order(broker, topic_name):
    create_topic(broker.bootstrap, topic_name, 2)
    delivered: list = []
    producer = Producer(
        {"bootstrap.servers": broker.bootstrap, "enable.idempotence": True, "acks": "all"}
    )
    assert producer._aio.producer_id >= 0
    for i in range(500):
        producer.produce(
            topic_name,
            b"%d" % i,
            partition=i % 2,
            on_delivery=lambda err, meta: delivered.append((err, meta)),
        )
    assert producer.flush(20) == 0
    producer.close()
    assert len(delivered) == 500 and all(err is None for err, _ in delivered)
    for p in (0, 1):
        offsets = [m.offset for _, m in delivered if m.partition == p]
        assert offsets == list(range(250))


def test_keyed_placement_equals_confluent_murmur2_random(broker, topic_name):
    create_topic(broker.bootstrap, topic_name, 7)
    keys = [f"user-{i}".encode() for i in range(200)] + [b"", b"a", b"\xff\xfe\x00"]
    placed: dict[bytes, int] = {}

    def record(err, msg):
        assert err is None
        placed[msg.key()] = msg.partition()

    cp = CProducer({"bootstrap.servers": broker.bootstrap, "partitioner": "murmur2_random"})
    for key in keys:
        cp.produce(topic_name, b"c", key=key, on_delivery=record)
    assert cp.flush(20) == 0
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    futures = {key: producer.produce(topic_name, b"m", key=key) for key in keys}
    assert producer.flush(20) == 0
    producer.close()
    assert {k: f.result().partition for k, f in futures.items()} == placed


def test_confluent_produces_muster_consumes_assign_mode(broker, topic_name):
    create_topic(broker.bootstrap, topic_name, 2)
    messages = [(i % 2, b"k%d" % i, b"v%d" % i, [("n", b"%d" % i)]) for i in range(200)]
    before = int(time.time() * 1000) - 1000
    confluent_produce(broker.bootstrap, topic_name, messages)
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": f"{topic_name}-g",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition(topic_name, 0), TopicPartition(topic_name, 1)])
        assert consumer.assignment() == {(topic_name, 0), (topic_name, 1)}
        records = consume_n(consumer, 200)
        assert len(records) == 200
        for r in records:
            i = int(r.value[1:])
            assert r.topic == topic_name and r.partition == i % 2
            assert r.key == b"k%d" % i and r.headers == (("n", b"%d" % i),)
            assert r.timestamp >= before
        per_partition = {p: [r.offset for r in records if r.partition == p] for p in (0, 1)}
        assert per_partition == {0: list(range(100)), 1: list(range(100))}
        assert consumer.position(TopicPartition(topic_name, 0)) == 100
        # commit with generation -1 (no group membership) and read it back
        consumer.commit({TopicPartition(topic_name, 0): 40, TopicPartition(topic_name, 1): 60})
        assert consumer.committed(
            [TopicPartition(topic_name, 0), TopicPartition(topic_name, 1)]
        ) == {
            (topic_name, 0): 40,
            (topic_name, 1): 60,
        }
        consumer.seek(TopicPartition(topic_name, 1), 95)
        again = consume_n(consumer, 5)
        assert [(r.partition, r.offset) for r in again] == [(1, o) for o in range(95, 100)]
        consumer.seek_to_beginning([TopicPartition(topic_name, 0)])
        again = consume_n(consumer, 100)
        assert [r.offset for r in again] == list(range(100))
    finally:
        consumer.close()
    # a new consumer in the same group starts from the committed offsets
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"{topic_name}-g"})
    try:
        consumer.assign([TopicPartition(topic_name, 0)])
        first = consume_n(consumer, 1)
        assert first[0].offset == 40
    finally:
        consumer.close()


def test_fetch_pipelining_keeps_a_fetch_in_flight(muster_broker, topic_name):
    create_topic(muster_broker.bootstrap, topic_name, 1)
    producer = Producer({"bootstrap.servers": muster_broker.bootstrap})
    for _ in range(2000):
        producer.produce(topic_name, b"x" * 100, partition=0)
    producer.flush(20)
    producer.close()
    consumer = Consumer(
        {
            "bootstrap.servers": muster_broker.bootstrap,
            "auto.offset.reset": "earliest",
            "max.poll.records": 100,
        }
    )
    try:
        consumer.assign([TopicPartition(topic_name, 0)])
        records = consume_n(consumer, 2000)
        assert [r.offset for r in records] == list(range(2000))
        # after a poll hands out records, the next fetch is already on the wire
        consumer.seek(TopicPartition(topic_name, 0), 0)
        assert consumer.poll(5)
        assert consumer._aio.fetcher.in_flight or consumer._aio.fetcher.buffer
    finally:
        consumer.close()


def test_auto_offset_reset_latest_and_pause(muster_broker, topic_name):
    bootstrap = muster_broker.bootstrap
    create_topic(bootstrap, topic_name, 1)
    confluent_produce(bootstrap, topic_name, [(0, None, b"old", [])])
    consumer = Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "latest"})
    try:
        tp = TopicPartition(topic_name, 0)
        consumer.assign([tp])
        assert consumer.poll(0.5) == []
        assert consumer.position(tp) == 1
        consumer.pause([tp])
        confluent_produce(bootstrap, topic_name, [(0, None, b"new", [])])
        assert consumer.poll(0.5) == []
        consumer.resume([tp])
        assert [r.value for r in consume_n(consumer, 1)] == [b"new"]
    finally:
        consumer.close()


def test_unknown_topic_fails_the_delivery(muster_broker):
    # without auto-creation asked for (librdkafka's producer asks by default)
    conf = {"delivery.timeout.ms": 500, "allow.auto.create.topics": False}
    producer = Producer({"bootstrap.servers": muster_broker.bootstrap, **conf})
    errors: list = []
    future = producer.produce("no-such-topic", b"x", on_delivery=lambda e, m: errors.append(e))
    producer.flush(10)
    producer.close()
    with pytest.raises(TopicError) as info:
        future.result()
    assert info.value.code == 3 and info.value.retriable
    assert isinstance(errors[0], KafkaError)


def test_a_producer_asks_for_a_topic_it_produces_to(muster_broker):
    producer = Producer({"bootstrap.servers": muster_broker.bootstrap})
    future = producer.produce("made-on-first-produce", b"x")
    assert producer.flush(10) == 0
    producer.close()
    assert future.result().topic == "made-on-first-produce"


def test_group_of_muster_consumers_splits_partitions(broker, topic_name):
    create_topic(broker.bootstrap, topic_name, 4)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(400):
        producer.produce(topic_name, b"%d" % i, key=b"%d" % i)
    assert producer.flush(20) == 0
    producer.close()
    conf = {
        "bootstrap.servers": broker.bootstrap,
        "group.id": f"{topic_name}-group",
        "auto.offset.reset": "earliest",
        **session_conf(broker),
    }
    consumers = [Consumer(conf) for _ in range(2)]
    assigned: list[list[set]] = [[], []]
    try:
        for i, c in enumerate(consumers):
            c.subscribe(
                [topic_name],
                on_assign=lambda _c, parts, i=i: assigned[i].append(set(parts)),
            )
        seen: dict[int, object] = {}
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline:
            for c in consumers:
                for r in c.poll(0.2):
                    seen[int(r.value)] = r
            a, b = (c.assignment() for c in consumers)
            if len(seen) == 400 and a and b:
                break
        assert len(seen) == 400
        a, b = (c.assignment() for c in consumers)
        assert a and b and not (a & b)
        assert a | b == {(topic_name, p) for p in range(4)}
        assert all(c.member_state() == "STABLE" for c in consumers)
    finally:
        for c in consumers:
            c.close()


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_muster_consumer_reads_confluent_compressed_batches(broker, topic_name, codec):
    create_topic(broker.bootstrap, topic_name, 1)
    messages = [(0, b"k%d" % i, b"v%d" % i * 20, [("i", b"%d" % i)]) for i in range(300)]
    confluent_produce(broker.bootstrap, topic_name, messages, **{"compression.type": codec})
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "auto.offset.reset": "earliest"})
    try:
        consumer.assign([TopicPartition(topic_name, 0)])
        records = consume_n(consumer, 300)
    finally:
        consumer.close()
    assert [r.offset for r in records] == list(range(300))
    assert [(r.key, r.value, r.headers) for r in records] == [
        (k, v, tuple(h)) for _p, k, v, h in messages
    ]
