"""A group's history derived from `__consumer_offsets` (what the console and
`muster groups explain` show for a broker without `__muster_group_events`),
held against Apache Kafka 4.4 and against muster: a classic group that
rebalances on three joins, a LeaveGroup and a member killed with SIGKILL lists
those generations with their members; on muster it agrees with the
RebalanceCompleted events muster itself wrote. `muster analyze` runs the same
derivation per group on Spark: on Kafka it finds the generations the driver
finds and says the history is derived; on muster its derived rebalances agree
with those muster's events give. One scenario per broker, shared by its tests."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, ConsumerGroupState, KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from muster.cli.main import app
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


@pytest.fixture(scope="module")
def kafka_group(kafka_broker: KafkaProcess, tmp_path_factory: pytest.TempPathFactory) -> str:
    group = "derive-kafka"
    _rebalance_on_join_leave_and_kill(kafka_broker.bootstrap, group, tmp_path_factory.mktemp("k"))
    return group


@pytest.fixture(scope="module")
def muster_group(shared_muster: MusterProcess, tmp_path_factory: pytest.TempPathFactory) -> str:
    group = "derive-muster"
    _rebalance_on_join_leave_and_kill(shared_muster.bootstrap, group, tmp_path_factory.mktemp("m"))
    return group


def test_derived_history_on_kafka_4_4(kafka_broker: KafkaProcess, kafka_group: str) -> None:
    derived, events = asyncio.run(_read(kafka_broker.bootstrap, kafka_group))
    assert events == []  # Kafka has no __muster_group_events: the derivation is all there is
    _check_derived(derived)


def test_derived_history_on_muster_agrees_with_its_events(
    shared_muster: MusterProcess, muster_group: str
) -> None:
    derived, events = asyncio.run(_read(shared_muster.bootstrap, muster_group))
    _check_derived(derived)
    completed = {e.generation: e.member_count for e in events if isinstance(e, RebalanceCompleted)}
    generations = {g.number: len(g.members) for g in derived if g.kind == "generation"}
    assert len(completed) >= 5
    # every generation muster completed is derived, with its member count
    assert {n: generations.get(n) for n in completed} == completed


def _rows(path: Path, group: str) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq  # the spark extra's

    return [r for r in pq.read_table(path).to_pylist() if r["group_id"] == group]


def _step(g: Generation) -> tuple[Any, ...]:
    members = sorted((m.member_id, m.client_id, tuple(sorted(m.assignment))) for m in g.members)
    return (g.kind, g.number, g.at_ms, g.member_id, members, g.joined, g.left, g.moved)


def _spark_step(r: dict[str, Any]) -> tuple[Any, ...]:
    members = sorted(
        (
            m["member_id"],
            m["client_id"],
            tuple((p["topic"], p["partition"]) for p in m["assignment"]),
        )
        for m in r["members"]
    )
    return (
        r["kind"], r["number"], r["at_ms"], r["member_id"], members,
        tuple(r["joined"]), tuple(r["left"]), tuple(r["moved"]),
    )  # fmt: skip


def test_muster_analyze_on_kafka_derives_on_spark_what_the_driver_derives(
    spark: Any, kafka_broker: KafkaProcess, kafka_group: str, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    # the command reuses the test session (one SparkSession per run) and leaves it running
    out = tmp_path / "analysis"
    args = ["analyze", "-b", kafka_broker.bootstrap, "--out", str(out), "--group", kafka_group]
    result = CliRunner().invoke(app, [*args, "-q"])
    assert result.exit_code == 0, result.output
    assert "history derived from __consumer_offsets" in result.output
    assert "between generations" in result.output

    derived, _ = asyncio.run(_read(kafka_broker.bootstrap, kafka_group))
    steps = sorted(_rows(out / "tables" / "generations", kafka_group), key=lambda r: r["step"])
    assert [_spark_step(r) for r in steps] == [_step(g) for g in derived]

    rebalances = sorted(
        _rows(out / "tables" / "rebalances", kafka_group), key=lambda r: r["rebalance"]
    )
    # every generation but 0 (Kafka stores the group, Empty, before its first join)
    numbers = {g.number for g in derived if g.kind == "generation"}
    assert 0 in numbers and [r["generation"] for r in rebalances] == sorted(numbers - {0})
    counts = [r["members_after"] for r in rebalances]
    # a joins, b, c; b leaves, c is killed, a closes (a count repeated: a join in two rounds)
    assert [n for i, n in enumerate(counts) if i == 0 or counts[i - 1] != n] == [1, 2, 3, 2, 1, 0]
    # what __consumer_offsets does not hold is left out, not made up
    assert {(r["cause"], r["started_ms"], r["duration_ms"]) for r in rebalances} == {(None,) * 3}
    assert _rows(out / "tables" / "rebalance_causes", kafka_group) == []
    [summary] = _rows(out / "tables" / "group_summary", kafka_group)
    assert summary["history"] == "derived" and summary["rebalances"] == len(rebalances)
    assert summary["not_consuming_ms"] is None and summary["mean_between_rebalances_ms"] > 0
    assert "history derived from __consumer_offsets" in (out / "report.html").read_text()


def test_analytics_derivation_on_muster_agrees_with_its_events(
    spark: Any, shared_muster: MusterProcess, muster_group: str, tmp_path: Path
) -> None:
    from muster.analytics import derived as derived_mod
    from muster.analytics.job import EVENTS, run_analysis
    from muster.analytics.load import source_loader
    from muster.analytics.schema import OFFSETS_TOPIC

    result = run_analysis(spark, shared_muster.bootstrap, tmp_path, [muster_group], progress=False)
    assert result.history == EVENTS  # muster has events: they, not the derivation, tell it
    events = sorted(_rows(result.tables["rebalances"], muster_group), key=lambda r: r["rebalance"])
    records = source_loader(spark, shared_muster.bootstrap)([OFFSETS_TOPIC])
    group_rows = derived_mod.group_records(records).where(f"group_id = '{muster_group}'")
    table = derived_mod.rebalance_table(derived_mod.derive_groups(group_rows))
    derived = sorted((r.asDict(True) for r in table.collect()), key=lambda r: r["rebalance"])

    def shape(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        keys = ("generation", "previous_generation", "members_before", "members_after")
        return [tuple(r[k] for k in keys) for r in rows]

    assert len(events) >= 5 and shape(derived) == shape(events)
    # the same rebalances, each completed where muster's events say (to the millisecond
    # the group metadata's state timestamp is taken at: within its sync)
    for d, e in zip(derived, events, strict=True):
        assert e["started_ms"] <= d["completed_ms"] <= e["completed_ms"]
    steps = _rows(result.tables["generations"], muster_group)
    assert {r["number"] for r in steps if r["kind"] == "generation"} == {
        r["generation"] for r in events
    }
