"""Group management over real sockets: muster consumers alone, mixed with
confluent-kafka consumers (range and cooperative-sticky), pattern
subscriptions and max.poll.interval.ms."""

from __future__ import annotations

import re
import time

import pytest
from confluent_kafka import Consumer as CConsumer

from muster.client import Admin, Consumer, NewTopic, Producer, TopicPartition
from tests.client.conftest import session_conf
from tests.wire.clients import create_topic


def produce(bootstrap: str, topic: str, n: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1})
    for i in range(n):
        producer.produce(topic, b"%d" % i, key=b"%d" % i)
    assert producer.flush(20) == 0
    producer.close()


def confluent_assignment(consumer: CConsumer) -> set[tuple[str, int]]:
    return {(tp.topic, tp.partition) for tp in consumer.assignment()}


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_mixed_group_with_confluent_splits_and_survives_leaves(broker, topic_name, strategy):
    bootstrap = broker.bootstrap
    create_topic(bootstrap, topic_name, 6)
    produce(bootstrap, topic_name, 600)
    group = f"{topic_name}-mixed"
    common = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "partition.assignment.strategy": strategy,
        **session_conf(broker),
        "enable.auto.commit": True,
        "auto.commit.interval.ms": 200,
    }
    ours = [Consumer(common) for _ in range(2)]
    theirs = CConsumer(common)
    seen: set[int] = set()
    all_parts = {(topic_name, p) for p in range(6)}

    active = list(ours)

    def drive(seconds: float, until) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for c in active:
                seen.update(int(r.value) for r in c.poll(0.05))
            for msg in theirs.consume(1000, 0.05):
                if not msg.error():
                    seen.add(int(msg.value()))
            if until():
                return
        raise AssertionError("group did not settle")

    def split_ok(members) -> bool:
        sets = [m() for m in members]
        if any(not s for s in sets):
            return False
        union = set().union(*sets)
        return union == all_parts and sum(len(s) for s in sets) == len(union)

    try:
        for c in ours:
            c.subscribe([topic_name])
        theirs.subscribe([topic_name])
        members = [ours[0].assignment, ours[1].assignment, lambda: confluent_assignment(theirs)]
        drive(40, lambda: split_ok(members) and len(seen) == 600)
        assert all(len(m()) == 2 for m in members)
        # a muster member leaves: the other two take over its partitions
        ours[1].close()
        active.remove(ours[1])
        members = [ours[0].assignment, lambda: confluent_assignment(theirs)]
        drive(40, lambda: split_ok(members))
        assert sorted(len(m()) for m in members) == [3, 3]
        produce(bootstrap, topic_name, 0)
    finally:
        for c in ours:
            c.close()
        theirs.close()
    assert seen == set(range(600))


def test_pattern_subscription_picks_up_new_topic(broker, topic_name):
    bootstrap = broker.bootstrap
    prefix = f"{topic_name}-pat"
    create_topic(bootstrap, f"{prefix}-a", 1)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"{prefix}-g",
            "auto.offset.reset": "earliest",
            "metadata.max.age.ms": 300,
            **session_conf(broker),
        }
    )
    try:
        consumer.subscribe(re.compile(re.escape(prefix) + r"-.*"))
        deadline = time.monotonic() + 20
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.1)
        assert consumer.assignment() == {(f"{prefix}-a", 0)}
        with Admin({"bootstrap.servers": bootstrap}) as admin:
            admin.create_topics([NewTopic(f"{prefix}-b", 2)])
        produce(bootstrap, f"{prefix}-b", 10)
        values = set()
        deadline = time.monotonic() + 20
        while len(values) < 10 and time.monotonic() < deadline:
            values.update(r.value for r in consumer.poll(0.1) if r.topic == f"{prefix}-b")
        assert consumer.assignment() == {(f"{prefix}-a", 0), (f"{prefix}-b", 0), (f"{prefix}-b", 1)}
        assert len(values) == 10
    finally:
        consumer.close()


def test_partition_count_change_rebalances(muster_broker, topic_name):
    bootstrap = muster_broker.bootstrap
    create_topic(bootstrap, topic_name, 1)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"{topic_name}-g",
            "metadata.max.age.ms": 300,
        }
    )
    try:
        consumer.subscribe([topic_name])
        deadline = time.monotonic() + 20
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.1)
        with Admin({"bootstrap.servers": bootstrap}) as admin:
            admin.create_partitions({topic_name: 3})
        deadline = time.monotonic() + 20
        while len(consumer.assignment()) < 3 and time.monotonic() < deadline:
            consumer.poll(0.1)
        assert consumer.assignment() == {TopicPartition(topic_name, p) for p in range(3)}
    finally:
        consumer.close()


def test_max_poll_interval_leaves_and_next_poll_rejoins(muster_broker, topic_name):
    bootstrap = muster_broker.bootstrap
    create_topic(bootstrap, topic_name, 2)
    events: list[tuple[str, set]] = []

    class Listener:
        def on_partitions_assigned(self, parts):
            events.append(("assigned", set(parts)))

        def on_partitions_revoked(self, parts):
            events.append(("revoked", set(parts)))

        def on_partitions_lost(self, parts):
            events.append(("lost", set(parts)))

    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": f"{topic_name}-g",
        "max.poll.interval.ms": 1500,
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 200,
    }
    slow = Consumer(conf)
    other = Consumer(conf)
    try:
        slow.subscribe([topic_name], Listener())
        deadline = time.monotonic() + 20
        while not slow.assignment() and time.monotonic() < deadline:
            slow.poll(0.1)
        assert slow.assignment() == {(topic_name, 0), (topic_name, 1)}
        time.sleep(2.5)  # "processing" longer than max.poll.interval.ms
        # the heartbeat task left the group: another member gets everything
        other.subscribe([topic_name])
        deadline = time.monotonic() + 20
        while len(other.assignment()) < 2 and time.monotonic() < deadline:
            other.poll(0.1)
        assert other.assignment() == {(topic_name, 0), (topic_name, 1)}
        # the slow member's next poll reports the loss and rejoins
        deadline = time.monotonic() + 20
        slow.poll(0.1)
        assert ("lost", {(topic_name, 0), (topic_name, 1)}) in events
        while len(slow.assignment()) < 1 and time.monotonic() < deadline:
            slow.poll(0.1)
            other.poll(0.1)
        assert len(slow.assignment()) == 1
    finally:
        slow.close()
        other.close()


def test_revoke_callback_can_commit(broker, topic_name):
    """Callbacks run on the caller's thread, so they may call the consumer."""
    bootstrap = broker.bootstrap
    create_topic(bootstrap, topic_name, 2)
    produce(bootstrap, topic_name, 20)
    group = f"{topic_name}-g"
    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        **session_conf(broker),
    }
    consumer = Consumer(conf)
    committed: list = []

    def on_revoke(c, parts):
        committed.append(c.commit())

    try:
        consumer.subscribe([topic_name], on_revoke=on_revoke)
        got = 0
        deadline = time.monotonic() + 20
        while got < 20 and time.monotonic() < deadline:
            got += len(consumer.poll(0.1))
        assert got == 20
    finally:
        consumer.close()
    assert committed and sum(committed[0].values()) == 20
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        parts = [TopicPartition(topic_name, p) for p in range(2)]
        assert sum(admin.list_group_offsets(group, parts).values()) == 20
