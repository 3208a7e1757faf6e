"""A group's history derived from `__consumer_offsets` (what the console and
`muster groups explain` show for a broker without `__muster_group_events`),
held against Apache Kafka 4.4 and against muster: a classic group that
rebalances on three joins, a LeaveGroup and a member killed with SIGKILL lists
those generations with their members; on muster it agrees with the
RebalanceCompleted events muster itself wrote."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, ConsumerGroupState, KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from muster.client.admin import AIOAdmin
from muster.console.history import EventsTail, derived_history
from muster.coordinator.derived import Generation
from muster.coordinator.events import RebalanceCompleted
from tests.support.brokers import MusterProcess
from tests.support.kafka import KafkaProcess

NOT_YET = {
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
}

# the member killed with SIGKILL: a process of its own, so it cannot say goodbye
KILLED_MEMBER = """
import sys
from pathlib import Path
from confluent_kafka import Consumer
bootstrap, group, topic, flag = sys.argv[1:]
c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": "derive-c",
              "session.timeout.ms": 6000, "auto.offset.reset": "earliest"})
c.subscribe([topic])
while True:
    c.poll(0.2)
    if c.assignment():
        Path(flag).touch()
"""


def _poll_until(consumers: list[Consumer], done: Callable[[], bool], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for c in consumers:
            c.poll(0.2)
        if done():
            return
    raise AssertionError("timed out")


def _stable_with(admin: AdminClient, group: str, clients: set[str]) -> Callable[[], bool]:
    def check() -> bool:
        try:
            found = admin.describe_consumer_groups([group])[group].result(10)
        except KafkaException as exc:
            # a fresh Kafka answers so until its offsets partition is loaded
            if exc.args[0].code() in NOT_YET or exc.args[0].retriable():
                return False
            raise
        members = {m.client_id for m in found.members}
        return found.state == ConsumerGroupState.STABLE and members == clients

    return check


def _rebalance_on_join_leave_and_kill(bootstrap: str, group: str, tmp: Path) -> None:
    """Generations: {a}, {a, b}, {a, b, c}, {a, c} (b leaves), {a} (c killed)."""
    topic = group + "-topic"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(30)
    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": 6000,
    }
    a = Consumer({**conf, "client.id": "derive-a"})
    b = Consumer({**conf, "client.id": "derive-b"})
    a.subscribe([topic])
    _poll_until([a], _stable_with(admin, group, {"derive-a"}))
    b.subscribe([topic])
    _poll_until([a, b], _stable_with(admin, group, {"derive-a", "derive-b"}))
    flag = tmp / f"{group}.assigned"
    killed = subprocess.Popen(
        [sys.executable, "-c", KILLED_MEMBER, bootstrap, group, topic, str(flag)]
    )
    try:
        _poll_until([a, b], _stable_with(admin, group, {"derive-a", "derive-b", "derive-c"}))
        _poll_until([a, b], flag.exists)
        b.close()  # LeaveGroup
        _poll_until([a], _stable_with(admin, group, {"derive-a", "derive-c"}))
        killed.kill()  # SIGKILL: no LeaveGroup, the session expires
        killed.wait(10)
        _poll_until([a], _stable_with(admin, group, {"derive-a"}))
    finally:
        if killed.poll() is None:
            killed.kill()
        a.close()


async def _read(bootstrap: str, group: str) -> tuple[list[Generation], list[Any]]:
    client = {"bootstrap.servers": bootstrap}
    admin = await AIOAdmin(client).start()
    tail = EventsTail(client)
    try:
        await tail.catch_up(admin)
        derived = await derived_history(client, admin, group)
    finally:
        await tail.close()
        await admin.close()
    return derived or [], tail.events(group)


def _member_sets(derived: list[Generation]) -> list[frozenset[str]]:
    """Each generation's members by client id, repeats of the same set once."""
    sets: list[frozenset[str]] = []
    for g in derived:
        if g.kind == "generation" and g.members:
            members = frozenset(m.client_id for m in g.members)
            if not sets or sets[-1] != members:
                sets.append(members)
    return sets


def _check_derived(derived: list[Generation]) -> None:
    assert _member_sets(derived) == [
        frozenset({"derive-a"}),
        frozenset({"derive-a", "derive-b"}),
        frozenset({"derive-a", "derive-b", "derive-c"}),
        frozenset({"derive-a", "derive-c"}),
        frozenset({"derive-a"}),
    ]
    client_of = {m.member_id: m.client_id for g in derived for m in g.members}
    joined = {client_of[m] for g in derived for m in g.joined}
    left = [client_of[m] for g in derived for m in g.left]
    assert joined >= {"derive-b", "derive-c"}
    # the leave, the killed one, and a's close at the end (the group goes Empty)
    assert left == ["derive-b", "derive-c", "derive-a"]
    steps = [g.at_ms for g in derived]
    assert steps == sorted(steps) and all(at > 0 for at in steps)


def test_derived_history_on_kafka_4_4(kafka_broker: KafkaProcess, tmp_path: Path) -> None:
    _rebalance_on_join_leave_and_kill(kafka_broker.bootstrap, "derive-kafka", tmp_path)
    derived, events = asyncio.run(_read(kafka_broker.bootstrap, "derive-kafka"))
    assert events == []  # Kafka has no __muster_group_events: the derivation is all there is
    _check_derived(derived)


def test_derived_history_on_muster_agrees_with_its_events(
    shared_muster: MusterProcess, tmp_path: Path
) -> None:
    group = "derive-muster"
    _rebalance_on_join_leave_and_kill(shared_muster.bootstrap, group, tmp_path)
    derived, events = asyncio.run(_read(shared_muster.bootstrap, group))
    _check_derived(derived)
    completed = {e.generation: e.member_count for e in events if isinstance(e, RebalanceCompleted)}
    generations = {g.number: len(g.members) for g in derived if g.kind == "generation"}
    assert len(completed) >= 5
    # every generation muster completed is derived, with its member count
    assert {n: generations.get(n) for n in completed} == completed
