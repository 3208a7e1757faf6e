"""Smaller API surfaces over the wire: the asyncio API, static membership,
async commits with callbacks, seek_to_end, unsubscribe."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from muster.client import Consumer, Producer, TopicPartition
from muster.client.admin import NewTopic
from muster.client.aio import AIOAdmin, AIOConsumer, AIOProducer
from tests.wire.clients import create_topic


def wait_assigned(consumer: Consumer, n: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while len(consumer.assignment()) != n and time.monotonic() < deadline:
        consumer.poll(0.1)
    assert len(consumer.assignment()) == n


def test_asyncio_api_end_to_end(muster_broker, topic_name):
    async def main() -> None:
        admin = await AIOAdmin({"bootstrap.servers": muster_broker.bootstrap}).start()
        await admin.create_topics([NewTopic(topic_name, 2)])
        producer = await AIOProducer({"bootstrap.servers": muster_broker.bootstrap}).start()
        metas = await asyncio.gather(
            *(producer.send(topic_name, b"v%d" % i, key=b"k%d" % i) for i in range(20))
        )
        assert sorted(m.offset for m in metas if m.partition == metas[0].partition)[0] == 0
        await producer.close()
        consumer = await AIOConsumer(
            {
                "bootstrap.servers": muster_broker.bootstrap,
                "group.id": f"{topic_name}-aio",
                "auto.offset.reset": "earliest",
            }
        ).start()
        assigned: list = []
        consumer.subscribe([topic_name], on_assign=lambda c, parts: assigned.extend(parts))
        got: list = []
        deadline = time.monotonic() + 20
        while len(got) < 20 and time.monotonic() < deadline:
            got += await consumer.poll(0.2)
        assert sorted(r.value for r in got) == sorted(b"v%d" % i for i in range(20))
        assert set(assigned) == {(topic_name, 0), (topic_name, 1)}
        await consumer.commit()
        committed = await consumer.committed([TopicPartition(topic_name, p) for p in (0, 1)])
        assert sum(v for v in committed.values() if v) == 20
        await consumer.close()
        assert (await admin.list_group_offsets(f"{topic_name}-aio")) == committed
        await admin.close()

    asyncio.run(main())


def test_static_member_rejoins_without_rebalance(muster_broker, topic_name):
    bootstrap = muster_broker.bootstrap
    create_topic(bootstrap, topic_name, 4)
    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": f"{topic_name}-static",
        "session.timeout.ms": 10000,
        "heartbeat.interval.ms": 200,
    }
    dynamic = Consumer(conf)
    static = Consumer({**conf, "group.instance.id": "instance-1"})
    try:
        dynamic.subscribe([topic_name])
        static.subscribe([topic_name])
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not (
            len(static.assignment()) == 2 and len(dynamic.assignment()) == 2
        ):
            static.poll(0.1)
            dynamic.poll(0.1)
        before = static.assignment()
        generation = dynamic._aio.membership.generation
        static.close()  # a static member sends no LeaveGroup...
        for _ in range(5):
            dynamic.poll(0.1)
        assert dynamic._aio.membership.generation == generation  # ...so no rebalance
        static = Consumer({**conf, "group.instance.id": "instance-1"})
        static.subscribe([topic_name])
        wait_assigned(static, 2)
        assert static.assignment() == before
        for _ in range(5):
            dynamic.poll(0.1)
        assert len(dynamic.assignment()) == 2
    finally:
        static.close()
        dynamic.close()


def test_async_commit_callback_seek_to_end_and_unsubscribe(muster_broker, topic_name):
    bootstrap = muster_broker.bootstrap
    create_topic(bootstrap, topic_name, 1)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(10):
        producer.produce(topic_name, b"%d" % i)
    producer.flush(10)
    producer.close()
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"{topic_name}-g",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe([topic_name])
        tp = TopicPartition(topic_name, 0)
        got: list = []
        deadline = time.monotonic() + 20
        while len(got) < 10 and time.monotonic() < deadline:
            got += consumer.poll(0.1)
        done = threading.Event()
        results: list = []

        def callback(err, offsets):
            results.append((err, offsets))
            done.set()

        assert consumer.commit(asynchronous=True, callback=callback) is None
        assert done.wait(10)
        assert results == [(None, {tp: 10})]
        consumer.seek(tp, 3)
        assert [r.offset for r in consumer.poll(5)][:1] == [3]
        consumer.seek_to_end([tp])
        # (the ListOffsets answer may queue behind the pipelined long-poll fetch)
        deadline = time.monotonic() + 5
        while consumer.position(tp) is None and time.monotonic() < deadline:
            assert consumer.poll(0.1) == []
        assert consumer.position(tp) == 10
        consumer.unsubscribe()
        assert consumer.assignment() == set()
        assert consumer.committed([tp]) == {tp: 10}
    finally:
        consumer.close()


def test_acks_zero_and_one(muster_broker, topic_name):
    create_topic(muster_broker.bootstrap, topic_name, 1)
    for acks in (0, 1):
        producer = Producer({"bootstrap.servers": muster_broker.bootstrap, "acks": acks})
        futures = [producer.produce(topic_name, b"%d" % i) for i in range(10)]
        assert producer.flush(10) == 0
        producer.close()
        offsets = [f.result().offset for f in futures]
        assert offsets == ([-1] * 10 if acks == 0 else list(range(10, 20)))


def test_every_assignor_splits_a_muster_group(muster_broker, topic_name):
    create_topic(muster_broker.bootstrap, topic_name, 5)
    for strategy in ("roundrobin", "sticky"):
        conf = {
            "bootstrap.servers": muster_broker.bootstrap,
            "group.id": f"{topic_name}-{strategy}",
            "partition.assignment.strategy": strategy,
            "heartbeat.interval.ms": 200,
        }
        consumers = [Consumer(conf) for _ in range(2)]
        try:
            for c in consumers:
                c.subscribe([topic_name])
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                for c in consumers:
                    c.poll(0.05)
                a, b = (c.assignment() for c in consumers)
                if a and b and len(a | b) == 5 and not a & b:
                    break
            sizes = sorted(len(c.assignment()) for c in consumers)
            assert sizes == [2, 3], (strategy, sizes)
        finally:
            for c in consumers:
                c.close()


def test_fenced_static_member_gets_a_clear_error(muster_broker, topic_name):
    from muster.client.errors import FencedInstanceError

    create_topic(muster_broker.bootstrap, topic_name, 1)
    conf = {
        "bootstrap.servers": muster_broker.bootstrap,
        "group.id": f"{topic_name}-fenced",
        "group.instance.id": "same-id",
        "heartbeat.interval.ms": 100,
    }
    first = Consumer(conf)
    second = Consumer(conf)
    try:
        first.subscribe([topic_name])
        wait_assigned(first, 1)
        second.subscribe([topic_name])
        wait_assigned(second, 1)  # the newcomer takes over the instance id
        deadline = time.monotonic() + 10
        raised = None
        while raised is None and time.monotonic() < deadline:
            try:
                first.poll(0.1)
            except FencedInstanceError as exc:
                raised = exc
        assert raised is not None and raised.code == 82 and not raised.retriable
        with pytest.raises(FencedInstanceError):  # and it stays raised
            first.poll(0.1)
    finally:
        second.close()
        first.close()
