"""muster's own consumer with `group.protocol=consumer` (KIP-848) over real
sockets against a third-party broker that implements it: franz-go's kfake
(../shared/peers/kfake), and then muster's own KIP-848 coordinator.
The broker assigns; the members reconcile, revoking before a partition
moves, so no partition is ever owned by two members at once."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

import muster
from muster.client import Admin, Consumer, NewTopic, Producer
from muster.client.aio import AIOConsumer
from muster.client.errors import UnsupportedError
from tests.support.brokers import KfakeProcess


class _Muster:
    """muster's own KIP-848 coordinator, in this process, with the same 500 ms
    heartbeat interval as the kfake run."""

    def __init__(self) -> None:
        self.broker = muster.Broker({"group.consumer.heartbeat.interval.ms": 500})

    def start(self) -> _Muster:
        self.broker.start()
        self.bootstrap = self.broker.bootstrap_servers
        return self

    def close(self) -> None:
        self.broker.close()


@pytest.fixture(scope="module", params=["kfake", "muster"])
def kfake(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The KIP-848 broker under test: the third-party kfake first (it proves
    the client), then muster's own coordinator (client and broker agree)."""
    broker: Any = (
        KfakeProcess("group.consumer.heartbeat.interval.ms=500")
        if request.param == "kfake"
        else _Muster()
    )
    broker.start()
    try:
        yield broker
    finally:
        broker.close()


def setup_topic(bootstrap: str, topic: str, partitions: int, records: int) -> None:
    admin = Admin({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions)])
    admin.close()
    produce(bootstrap, topic, records)


def produce(bootstrap: str, topic: str, n: int, start: int = 0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1})
    for i in range(start, start + n):
        producer.produce(topic, b"%d" % i, key=b"%d" % i)
    assert producer.flush(20) == 0
    producer.close()


class Owners:
    """Who owns which partition, as the callbacks say: an assign of a
    partition someone else still owns is the failure this guards against."""

    def __init__(self) -> None:
        self.owner: dict[int, str] = {}
        self.violations: list[str] = []

    def callbacks(self, name: str) -> dict[str, Any]:
        def assign(_consumer: Any, parts: list[Any]) -> None:
            for tp in parts:
                if self.owner.get(tp.partition) not in (None, name):
                    self.violations.append(
                        f"{name} got {tp.partition} of {self.owner[tp.partition]}"
                    )
                self.owner[tp.partition] = name

        def revoke(_consumer: Any, parts: list[Any]) -> None:
            for tp in parts:
                if self.owner.get(tp.partition) != name:
                    self.violations.append(f"{name} revoked {tp.partition} it did not own")
                self.owner.pop(tp.partition, None)

        return {"on_assign": assign, "on_revoke": revoke, "on_lost": revoke}


def member(bootstrap: str, group: str, topic: str, name: str, owners: Owners) -> Consumer:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": "consumer",
            "group.remote.assignor": "uniform",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "client.id": name,
        }
    )
    consumer.subscribe([topic], **owners.callbacks(name))
    return consumer


def parts_of(consumer: Consumer) -> set[int]:
    return {tp.partition for tp in consumer.assignment()}


def test_a_group_of_three_covers_all_partitions_and_a_leave_moves_them_with_commits(
    kfake, topic_name
):
    setup_topic(kfake.bootstrap, topic_name, 6, 600)
    owners = Owners()
    names = ["m0", "m1", "m2"]
    members = dict(
        zip(
            names,
            (member(kfake.bootstrap, topic_name, topic_name, n, owners) for n in names),
            strict=True,
        )
    )
    seen: dict[tuple[int, int], str] = {}
    duplicates: list[tuple[int, int]] = []

    def poll_all(live: dict[str, Consumer]) -> None:
        for name, consumer in live.items():
            records = consumer.poll(0.05)
            for r in records:
                if owners.owner.get(r.partition) != name:
                    owners.violations.append(
                        f"{name} read {r.partition} owned by {owners.owner.get(r.partition)}"
                    )
                if (r.partition, r.offset) in seen:
                    duplicates.append((r.partition, r.offset))
                seen[(r.partition, r.offset)] = name
            if records:
                consumer.commit()

    def settled(live: dict[str, Consumer]) -> bool:
        sets = [parts_of(c) for c in live.values()]
        union = set().union(*sets)
        disjoint = sum(len(s) for s in sets) == len(union)
        states = {c.member_state() for c in live.values()}
        return disjoint and union == set(range(6)) and all(sets) and states == {"STABLE"}

    deadline = time.monotonic() + 30
    while not (settled(members) and len(seen) == 600) and time.monotonic() < deadline:
        poll_all(members)
    assert settled(members), {n: parts_of(c) for n, c in members.items()}
    assert len(seen) == 600 and not duplicates and not owners.violations

    # m0 leaves (epoch -1): the others take its partitions, from its commits.
    leaving = parts_of(members["m0"])
    members.pop("m0").close()
    rest = members
    deadline = time.monotonic() + 30
    while not settled(rest) and time.monotonic() < deadline:
        poll_all(rest)
    assert settled(rest), {n: parts_of(c) for n, c in rest.items()}
    assert leaving <= parts_of(rest["m1"]) | parts_of(rest["m2"])
    produce(kfake.bootstrap, topic_name, 600, start=600)
    deadline = time.monotonic() + 30
    while len(seen) < 1200 and time.monotonic() < deadline:
        poll_all(rest)
    assert len(seen) == 1200 and not duplicates, (len(seen), duplicates[:5])
    assert not owners.violations, owners.violations
    for consumer in rest.values():
        consumer.close()


def test_the_asyncio_consumer_resumes_from_the_commits_of_the_previous_member(kfake, topic_name):
    setup_topic(kfake.bootstrap, topic_name, 4, 200)
    conf = {
        "bootstrap.servers": kfake.bootstrap,
        "group.id": topic_name,
        "group.protocol": "consumer",
        "auto.offset.reset": "earliest",
        "auto.commit.interval.ms": 100,
    }

    async def consume(n: int) -> list[bytes]:
        consumer = await AIOConsumer(conf).start()
        consumer.subscribe([topic_name])
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(values) < n and time.monotonic() < deadline:
            values += [r.value for r in await consumer.poll(0.2)]
        assert consumer.membership is not None and consumer.membership.epoch > 0
        await consumer.close()  # auto-commit, revoke, leave with epoch -1
        return values

    first = asyncio.run(consume(200))
    produce(kfake.bootstrap, topic_name, 50, start=200)
    second = asyncio.run(consume(50))
    assert len(first) == 200 and sorted(second) == sorted(b"%d" % i for i in range(200, 250))


def test_a_broker_without_the_consumer_protocol_fails_the_poll(tansu_broker, topic_name):
    consumer = Consumer(
        {
            "bootstrap.servers": tansu_broker.bootstrap,
            "group.id": topic_name,
            "group.protocol": "consumer",
        }
    )
    consumer.subscribe([topic_name])
    with pytest.raises(UnsupportedError):
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            consumer.poll(0.2)
    consumer.close()
