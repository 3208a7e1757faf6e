"""confluent-kafka's `ShareConsumer` (2.16, librdkafka's KIP-932 share
consumer, ShareGroupHeartbeat/ShareFetch/ShareAcknowledge v1) against
muster and against Apache Kafka 4.4, the same steps and the same
assertions on both: more members than partitions with every record held
by one member at a time; explicit ACCEPT / RELEASE / REJECT (a released
record comes back with a higher delivery count, a rejected one never);
the delivery-count limit (5, both brokers' default, or the group's
`share.delivery.count.limit`) archives; a member
that closes, or is killed with SIGKILL, loses its locks at once, long
before they would expire.

One muster for the module; Kafka is the run's shared one (tests/conftest).
Every test uses a topic and a group of its own."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import AcknowledgeType, Message, Producer, ShareConsumer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from tests.support.brokers import MusterProcess
from tests.support.kafka import KafkaProcess

Key = tuple[int, int]  # (partition, offset)

# a lock outlives every wait below: a record seen again came back because
# its holder went away, never because its lock expired (60 s is the most
# Kafka's default group.share.max.record.lock.duration.ms allows)
LONG_LOCK_MS = "60000"


@pytest.fixture(scope="module", params=["muster", "kafka"])
def bootstrap(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    if request.param == "kafka":
        kafka: KafkaProcess = request.getfixturevalue("kafka_broker")
        yield kafka.bootstrap
        return
    broker = MusterProcess(tmp_path_factory.mktemp("share-ck") / "data", {"muster.fsync": "never"})
    broker.start()
    try:
        yield broker.bootstrap
    finally:
        broker.close()


def _names(stem: str) -> tuple[str, str]:
    tag = uuid.uuid4().hex[:8]
    return f"{stem}-{tag}", f"{stem}-g-{tag}"


def _setup(bootstrap: str, topic: str, partitions: int, group: str, **configs: str) -> None:
    """The topic, and the group's configs (earliest: records produced before
    the group's first fetch are handed out)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    entries = [
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
        for name, value in {"share.auto.offset.reset": "earliest", **configs}.items()
    ]
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)


def _produce(bootstrap: str, topic: str, partitions: int, count: int) -> list[Key]:
    """`count` records, round-robin over the partitions, one record per batch
    (so a broker acquiring whole batches still hands them out one by one)."""
    acked: list[Key] = []

    def on_delivery(err: object, msg: Message) -> None:
        assert err is None, err
        acked.append((msg.partition(), msg.offset()))

    producer = Producer({"bootstrap.servers": bootstrap, "batch.num.messages": 1, "linger.ms": 0})
    for i in range(count):
        producer.produce(topic, str(i).encode(), partition=i % partitions, on_delivery=on_delivery)
    assert producer.flush(30) == 0
    assert len(acked) == count
    return acked


def _consumer(
    bootstrap: str, group: str, topic: str, explicit: bool = True, max_records: int = 5
) -> ShareConsumer:
    consumer = ShareConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "share.acknowledgement.mode": "explicit" if explicit else "implicit",
            "max.poll.records": max_records,
        }
    )
    consumer.subscribe([topic])
    return consumer


def _poll(consumer: ShareConsumer, timeout: float = 0.5) -> list[Message]:
    out = []
    for msg in consumer.poll(timeout):
        assert msg.error() is None, msg.error()
        out.append(msg)
    return out


def _commit(consumer: ShareConsumer) -> None:
    results = consumer.commit_sync(30)
    assert all(error is None for error in results.values()), results


def _until(what: str, seconds: float, step: Callable[[], bool]) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if step():
            return
    raise AssertionError(f"timed out after {seconds} s: {what}")


def test_more_members_than_partitions_one_holder_at_a_time(bootstrap: str) -> None:
    """Four members on two partitions: each record is held by one member
    until it is accepted, several members read each partition, every record
    is delivered once (all accepted before their locks expire)."""
    topic, group = _names("share-ck-members")
    _setup(bootstrap, topic, 2, group)
    produced = set(_produce(bootstrap, topic, 2, 60))
    members = [_consumer(bootstrap, group, topic) for _ in range(4)]
    held: list[set[Key]] = [set() for _ in members]
    readers: dict[int, set[int]] = {0: set(), 1: set()}
    accepted: list[Key] = []
    counts: list[int] = []
    try:

        def round_robin() -> bool:
            for i, member in enumerate(members):
                if held[i]:
                    _commit(member)  # acknowledged at poll time, sent now
                    accepted.extend(held[i])
                    held[i].clear()
                for msg in _poll(member, 0.3):
                    key = (msg.partition(), msg.offset())
                    holders = [j for j, keys in enumerate(held) if key in keys]
                    assert not holders, f"{key} handed to member {i} while {holders} hold it"
                    held[i].add(key)
                    readers[key[0]].add(i)
                    counts.append(msg.delivery_count())
                    member.acknowledge(msg, AcknowledgeType.ACCEPT)
            return set(accepted) == produced

        _until("all 60 records accepted", 90, round_robin)
    finally:
        for member in members:
            member.close()
    assert sorted(accepted) == sorted(produced)  # each record once
    assert counts == [1] * 60
    assert len(readers[0] | readers[1]) >= 3, readers  # more readers than partitions


def test_a_new_group_gets_its_partitions_one_answer_at_a_time(bootstrap: str) -> None:
    """A new group's share partitions start one by one (Kafka initialises
    them off the fetch path): the first answers hold one partition's records
    each; once started, one answer holds both (librdkafka 0179 counts on it)."""
    topic, group = _names("share-ck-start")
    _setup(bootstrap, topic, 2, group)
    _produce(bootstrap, topic, 2, 100)
    consumer = _consumer(bootstrap, group, topic, explicit=False, max_records=500)
    consumer_polls: list[list[int]] = []

    def drain(rounds: list[list[int]]) -> Callable[[], bool]:
        def step() -> bool:
            got = [msg.partition() for msg in _poll(consumer, 1.0)]
            if got:
                rounds.append(got)
            return sum(map(len, rounds)) >= 100

        return step

    try:
        _until("the first 100 records", 30, drain(consumer_polls))
        _produce(bootstrap, topic, 2, 100)
        time.sleep(1)
        later: list[list[int]] = []
        _until("the next 100 records", 30, drain(later))
    finally:
        consumer.close()
    assert [sorted(set(p)) for p in consumer_polls] in ([[0], [1]], [[1], [0]])
    assert [sorted(set(p)) for p in later] == [[0, 1]]


def test_release_redelivers_reject_never_returns(bootstrap: str) -> None:
    """A RELEASEd record comes back with delivery count 2; a REJECTed one
    never comes back; accepted ones neither."""
    topic, group = _names("share-ck-acks")
    _setup(bootstrap, topic, 1, group)
    _produce(bootstrap, topic, 1, 10)
    consumer = _consumer(bootstrap, group, topic)
    first: dict[int, int] = {}
    again: list[tuple[int, int]] = []
    try:

        def step() -> bool:
            for msg in _poll(consumer):
                offset, count = msg.offset(), msg.delivery_count()
                if offset in first:
                    again.append((offset, count))
                    consumer.acknowledge(msg, AcknowledgeType.ACCEPT)
                    continue
                first[offset] = count
                kind = {0: AcknowledgeType.RELEASE, 1: AcknowledgeType.REJECT}
                consumer.acknowledge(msg, kind.get(offset, AcknowledgeType.ACCEPT))
            _commit(consumer)
            return len(first) == 10 and bool(again)

        _until("all ten records and the released one again", 60, step)
        # a while longer: nothing else comes back (offset 1 was rejected)
        quiet_until = time.monotonic() + 3
        while time.monotonic() < quiet_until:
            step()
    finally:
        consumer.close()
    assert first == {offset: 1 for offset in range(10)}
    assert again == [(0, 2)]


@pytest.mark.parametrize("limit", [None, 3])
def test_delivery_count_limit_archives(bootstrap: str, limit: int | None) -> None:
    """A record released at every delivery is delivered as often as the
    delivery-count limit allows (the broker's default 5, or the group's
    `share.delivery.count.limit`), then archived: it never comes back, and a
    record produced after it is handed out."""
    topic, group = _names("share-ck-limit")
    own = {} if limit is None else {"share.delivery.count.limit": str(limit)}
    _setup(bootstrap, topic, 1, group, **own)
    deliveries = limit or 5
    _produce(bootstrap, topic, 1, 1)
    consumer = _consumer(bootstrap, group, topic)
    counts: list[int] = []
    later: list[tuple[int, int]] = []
    try:

        def release_it() -> bool:
            for msg in _poll(consumer):
                assert msg.offset() == 0
                counts.append(msg.delivery_count())
                consumer.acknowledge(msg, AcknowledgeType.RELEASE)
                _commit(consumer)
            return len(counts) == deliveries

        _until(f"{deliveries} deliveries", 60, release_it)
        _produce(bootstrap, topic, 1, 1)  # offset 1

        def next_one() -> bool:
            for msg in _poll(consumer):
                later.append((msg.offset(), msg.delivery_count()))
                consumer.acknowledge(msg, AcknowledgeType.ACCEPT)
                _commit(consumer)
            return bool(later)

        _until("the record after the archived one", 30, next_one)
        quiet_until = time.monotonic() + 2
        while time.monotonic() < quiet_until:
            next_one()
    finally:
        consumer.close()
    assert counts == list(range(1, deliveries + 1))
    assert later == [(1, 1)]


def _takes_over(survivor: ShareConsumer, wanted: set[Key], seconds: float) -> dict[Key, int]:
    """Poll `survivor` (accepting) until it got every record of `wanted`:
    {record: delivery count}."""
    got: dict[Key, int] = {}

    def step() -> bool:
        for msg in _poll(survivor):
            got[(msg.partition(), msg.offset())] = msg.delivery_count()
            survivor.acknowledge(msg, AcknowledgeType.ACCEPT)
        if got:
            _commit(survivor)
        return wanted <= set(got)

    _until(f"the survivor got {sorted(wanted)}", seconds, step)
    return got


def test_closed_member_loses_its_locks(bootstrap: str) -> None:
    """A member holding records (not acknowledged) closes: another member
    gets them at once (well within the 60 s lock), delivery count 2."""
    topic, group = _names("share-ck-close")
    _setup(bootstrap, topic, 1, group, **{"share.record.lock.duration.ms": LONG_LOCK_MS})
    _produce(bootstrap, topic, 1, 5)
    holder = _consumer(bootstrap, group, topic)
    held: list[Message] = []
    _until("the holder's first records", 30, lambda: bool(held.extend(_poll(holder)) or held))
    survivor = _consumer(bootstrap, group, topic)
    try:
        _poll(survivor, 1.0)  # joined, nothing for it yet (the rest may come)
        holder.close()  # nothing acknowledged: the locks go back
        keys = {(m.partition(), m.offset()) for m in held}
        got = _takes_over(survivor, keys, 30)
    finally:
        survivor.close()
    assert {got[k] for k in keys} == {2}


KILLED_HOLDER = """
import sys
import time
from pathlib import Path
from confluent_kafka import ShareConsumer
bootstrap, group, topic, out = sys.argv[1:]
c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                   "share.acknowledgement.mode": "explicit", "max.poll.records": 5})
c.subscribe([topic])
while True:
    msgs = [m for m in c.poll(0.5) if m.error() is None]
    if msgs:
        Path(out + ".tmp").write_text(" ".join(f"{m.partition()}:{m.offset()}" for m in msgs))
        Path(out + ".tmp").rename(out)
        break
while True:  # holds its records, polls no more, until killed
    time.sleep(1)
"""


def test_killed_member_loses_its_locks(bootstrap: str, tmp_path: Path) -> None:
    """A member killed with SIGKILL while it holds records: its connection
    closes, its share session ends, another member gets the records long
    before their 60 s locks would expire, with delivery count 2."""
    topic, group = _names("share-ck-kill")
    _setup(bootstrap, topic, 1, group, **{"share.record.lock.duration.ms": LONG_LOCK_MS})
    _produce(bootstrap, topic, 1, 5)
    out = tmp_path / "held"
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED_HOLDER, bootstrap, group, topic, str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    survivor: ShareConsumer | None = None
    try:
        _until("the child holds records", 60, out.exists)
        keys: set[Key] = set()
        for item in out.read_text().split():
            partition, offset = item.split(":")
            keys.add((int(partition), int(offset)))
        survivor = _consumer(bootstrap, group, topic)
        _poll(survivor, 1.0)
        child.kill()
        child.wait(10)
        got = _takes_over(survivor, keys, 40)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
        if survivor is not None:
            survivor.close()
    assert {got[k] for k in keys} == {2}
