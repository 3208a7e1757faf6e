"""Online KIP-848 migration with confluent-kafka 2.16 over real sockets: a
live group of classic consumers (cooperative-sticky, and eager range) is upgraded when
`group.protocol=consumer` members join it; the mixed group covers every
partition exactly once and never lets two members own a partition at once;
when the consumer-protocol members leave, the group is downgraded and the
classic members go on consuming from the committed offsets."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import ConsumerGroupType, TopicPartition
from typer.testing import CliRunner

from muster.cli.main import app
from tests.support.brokers import MusterProcess
from tests.wire.clients import create_topic
from tests.wire.group_helpers import (
    GroupMember,
    admin,
    all_partitions,
    exact_cover,
    produce_values,
    wait_group_stable,
    wait_until,
)

SETTINGS = {
    "group.min.session.timeout.ms": "1000",
    "group.consumer.session.timeout.ms": "6000",
    "group.consumer.heartbeat.interval.ms": "300",
}
TOPIC, GROUP, PARTITIONS = "mig", "mig-g", 6
WIDE = {"COLUMNS": "250"}  # the CLI's text unwrapped


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[MusterProcess]:
    b = MusterProcess(tmp_path / "data", SETTINGS).start()
    try:
        yield b
    finally:
        b.close()


class TimedMember(GroupMember):
    """A GroupMember that also notes when each partition was assigned and
    given up, to check ownership intervals across members afterwards."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        self.spans: list[tuple[str, int, str, float]] = []  # (topic, partition, what, when)
        super().__init__(*args, **kw)

    def _note(self, what: str, partitions: list[TopicPartition]) -> None:
        now = time.monotonic()
        with self.lock:
            self.spans.extend((p.topic, p.partition, what, now) for p in partitions)

    def _on_assign(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        self._note("assign", partitions)
        super()._on_assign(consumer, partitions)

    def _on_revoke(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        super()._on_revoke(consumer, partitions)
        self._note("drop", partitions)

    def _on_lost(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        super()._on_lost(consumer, partitions)
        self._note("drop", partitions)


def intervals(m: TimedMember, until: float) -> dict[tuple[str, int], list[tuple[float, float]]]:
    out: dict[tuple[str, int], list[tuple[float, float]]] = {}
    start: dict[tuple[str, int], float] = {}
    with m.lock:
        spans = list(m.spans)
    for topic, p, what, at in spans:
        if what == "assign":
            start[(topic, p)] = at
        elif (topic, p) in start:
            out.setdefault((topic, p), []).append((start.pop((topic, p)), at))
    for tp, at in start.items():
        out.setdefault(tp, []).append((at, until))
    return out


def assert_never_owned_twice(members: list[TimedMember]) -> None:
    now = time.monotonic()
    per_member = [intervals(m, now) for m in members]
    for i, a in enumerate(per_member):
        for b in per_member[i + 1 :]:
            for tp, spans in a.items():
                for s1, e1 in spans:
                    for s2, e2 in b.get(tp, []):
                        assert e1 <= s2 or e2 <= s1, (
                            f"{tp} owned by {members[i].name} and another member at once"
                        )


def committed(client: Any, tps: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    from confluent_kafka import ConsumerGroupTopicPartitions

    req = ConsumerGroupTopicPartitions(GROUP, [TopicPartition(t, p) for t, p in tps])
    got = client.list_consumer_group_offsets([req])[GROUP].result(30)
    return {(tp.topic, tp.partition): tp.offset for tp in got.topic_partitions}


def group_type(client: Any) -> Any:
    return client.describe_consumer_groups([GROUP])[GROUP].result(30).type


@pytest.mark.parametrize("strategy", ["cooperative-sticky", "range"])
def test_classic_group_upgraded_by_consumer_members_and_downgraded_when_they_leave(
    broker: MusterProcess, strategy: str
) -> None:
    b = broker.bootstrap
    create_topic(b, TOPIC, partitions=PARTITIONS)
    batches = [[f"{n}-{i}".encode() for i in range(60)] for n in range(3)]
    produce_values(b, TOPIC, batches[0], PARTITIONS)
    client = admin(b)  # kept: the futures need their client alive
    classic_conf = {"partition.assignment.strategy": strategy}
    classic = [
        TimedMember(b, GROUP, [TOPIC], **classic_conf, **{"client.id": f"classic{i}"})
        for i in range(2)
    ]
    modern: list[TimedMember] = []
    everyone = list(classic)
    expected = all_partitions(TOPIC, PARTITIONS)
    tps = sorted(expected)
    try:
        # settled: a classic rebalance still in flight when the group is
        # upgraded has its parked JoinGroups answered REBALANCE_IN_PROGRESS
        # (Kafka's convertToConsumerGroup), which librdkafka reports as an error
        wait_group_stable(b, GROUP, classic, expected, 30)
        assert group_type(client) == ConsumerGroupType.CLASSIC
        wait_until(lambda: sum(len(m.values()) for m in classic) >= 60, 30, "batch 0 consumed")

        # consumer-protocol members join the live classic group: it is upgraded
        modern = [
            TimedMember(b, GROUP, [TOPIC], **{"group.protocol": "consumer", "client.id": f"c{i}"})
            for i in range(2)
        ]
        everyone = classic + modern
        wait_until(
            lambda: exact_cover(everyone, expected) and all(m.assignment() for m in everyone),
            60,
            "all partitions covered across the mixed members",
        )
        assert group_type(client) == ConsumerGroupType.CONSUMER
        desc = client.describe_consumer_groups([GROUP])[GROUP].result(30)
        assert sorted(m.client_id for m in desc.members) == ["c0", "c1", "classic0", "classic1"]
        produce_values(b, TOPIC, batches[1], PARTITIONS)
        consumed = lambda: {v for m in everyone for v in m.values()}  # noqa: E731
        wait_until(lambda: set(batches[0] + batches[1]) <= consumed(), 60, "batch 1 consumed")
        # everything consumed is committed (auto commit) before the consumer members leave
        ends = {tp: 120 // PARTITIONS for tp in tps}
        wait_until(lambda: committed(client, tps) == ends, 30, "offsets committed")

        for m in modern:
            m.close()
        seen_before = {m.name: len(m.values()) for m in classic}
        wait_until(
            lambda: group_type(client) == ConsumerGroupType.CLASSIC, 30, "the group downgraded"
        )
        wait_until(lambda: exact_cover(classic, expected), 60, "the classic members cover all")
        produce_values(b, TOPIC, batches[2], PARTITIONS)
        wait_until(
            lambda: set(batches[2]) <= {v for m in classic for v in m.values()},
            60,
            "batch 2 consumed by the classic members",
        )
        after = [v for m in classic for v in m.values()[seen_before[m.name] :]]
        assert sorted(after) == sorted(batches[2])  # from the committed offsets: nothing again
        assert_never_owned_twice(everyone)
        assert not [m.errors for m in everyone if m.errors]
        told = CliRunner().invoke(
            app, ["groups", "explain", GROUP, "-n", "50", "--bootstrap-server", b], env=WIDE
        )
        assert told.exit_code == 0, told.output
        assert "became a consumer group" in told.output, told.output
        assert "became a classic group" in told.output, told.output
        assert "online downgrade" in told.output, told.output
    finally:
        for m in everyone:
            m.abandon()
