"""confluent-kafka 2.16 with `group.protocol=consumer` (KIP-848) against muster
over real sockets: formation, a leave that moves only the leaver's partitions,
a kill -9 restart that keeps offsets and the group, static rejoin, and the
AdminClient's view of the group."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import ConsumerGroupState, TopicPartition
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
    wait_until,
)

WIDE = {"COLUMNS": "250"}  # the CLI's tables unwrapped
SETTINGS = {
    "group.consumer.session.timeout.ms": "6000",
    "group.consumer.heartbeat.interval.ms": "300",
}
CONSUMER = {"group.protocol": "consumer"}


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[MusterProcess]:
    b = MusterProcess(tmp_path / "data", SETTINGS).start()
    try:
        yield b
    finally:
        b.close()


def _balanced(members: list[GroupMember], topic: str, n: int) -> bool:
    each = n // len(members)
    return exact_cover(members, all_partitions(topic, n)) and all(
        len(m.assignment()) in (each, each + 1) for m in members
    )


def _member(b: MusterProcess, group: str, topic: str, name: str, **conf: str) -> GroupMember:
    return GroupMember(b.bootstrap, group, [topic], **CONSUMER, **{"client.id": name}, **conf)


def test_three_form_one_leaves_and_only_its_partitions_move(broker: MusterProcess) -> None:
    b, topic, group = broker.bootstrap, "cp-form", "cp-form-g"
    create_topic(b, topic, partitions=6)
    members = [_member(broker, group, topic, f"c{i}") for i in range(3)]
    try:
        wait_until(lambda: _balanced(members, topic, 6), 30, "a balanced group of 3")
        before = [m.assignment() for m in members[:2]]
        revoked_before = [len([e for e in m.event_log() if e[0] != "assign"]) for m in members[:2]]
        members[2].close()
        wait_until(lambda: _balanced(members[:2], topic, 6), 30, "the leaver's partitions moved")
        for m, had, revokes in zip(members[:2], before, revoked_before, strict=True):
            assert had <= m.assignment()  # kept what it had: moved partitions only were added
            assert len([e for e in m.event_log() if e[0] != "assign"]) == revokes
        client = admin(b)  # kept: the futures need their client alive
        desc = client.describe_consumer_groups([group])[group].result(30)
        assert desc.state == ConsumerGroupState.STABLE
        assert len(desc.members) == 2
        shown = CliRunner().invoke(
            app, ["groups", "describe", group, "--members", "--bootstrap-server", b], env=WIDE
        )
        assert shown.exit_code == 0, shown.output
        assert "Type: consumer" in shown.output and "Target" in shown.output
        assert not [m.errors for m in members if m.errors]
    finally:
        for m in members:
            m.abandon()


def test_commit_then_kill_9_restart_keeps_offsets_and_the_group(broker: MusterProcess) -> None:
    b, topic, group = broker.bootstrap, "cp-restart", "cp-restart-g"
    create_topic(b, topic, partitions=4)
    produce_values(b, topic, [f"v{i}".encode() for i in range(40)], 4)
    m = _member(broker, group, topic, "solo", **{"enable.auto.commit": "false"})
    try:
        wait_until(lambda: len(m.values()) == 40, 30, "40 messages consumed")
        m.call(lambda c: c.commit(asynchronous=False))
        owned = m.assignment()
        broker.kill()
        broker.start()

        client = admin(b)  # kept: the futures need their client alive
        tps = [TopicPartition(topic, p) for p in range(4)]
        got = client.list_consumer_group_offsets([_request(group, tps)])[group].result(30)
        assert [tp.offset for tp in got.topic_partitions] == [10, 10, 10, 10]
        desc = client.describe_consumer_groups([group])[group].result(30)
        assert [mm.client_id for mm in desc.members] == ["solo"]
        # the member goes on heartbeating at its epoch: same partitions, nothing revoked
        produce_values(b, topic, [f"w{i}".encode() for i in range(8)], 4)
        wait_until(lambda: len(m.values()) == 48, 30, "new messages after the restart")
        assert m.assignment() == owned
        assert [e[0] for e in m.event_log()] == ["assign"]
    finally:
        m.abandon()


def _request(group: str, tps: list[TopicPartition]) -> object:
    from confluent_kafka import ConsumerGroupTopicPartitions

    return ConsumerGroupTopicPartitions(group, tps)


def test_static_member_rejoin_keeps_its_partitions(broker: MusterProcess) -> None:
    b, topic, group = broker.bootstrap, "cp-static", "cp-static-g"
    create_topic(b, topic, partitions=4)
    other = _member(broker, group, topic, "dyn")
    static = _member(broker, group, topic, "st", **{"group.instance.id": "inst-1"})
    try:
        wait_until(lambda: _balanced([other, static], topic, 4), 30, "a balanced group of 2")
        kept = static.assignment()
        static.close()  # static: leaves with epoch -2, the partitions stay its own
        again = _member(broker, group, topic, "st2", **{"group.instance.id": "inst-1"})
        static = again
        wait_until(lambda: again.assignment() == kept, 30, "the same partitions back")
        assert other.assignment() == all_partitions(topic, 4) - kept
    finally:
        other.abandon()
        static.abandon()


def test_partitions_added_are_assigned_without_any_member_rejoining(
    broker: MusterProcess,
) -> None:
    from confluent_kafka.admin import NewPartitions

    b, topic, group = broker.bootstrap, "cp-grow", "cp-grow-g"
    create_topic(b, topic, partitions=2)
    members = [_member(broker, group, topic, f"g{i}") for i in range(2)]
    try:
        wait_until(lambda: _balanced(members, topic, 2), 30, "a balanced group of 2")
        before = [m.assignment() for m in members]
        seen = [len(m.event_log()) for m in members]
        client = admin(b)
        client.create_partitions([NewPartitions(topic, 6)])[topic].result(30)
        wait_until(lambda: _balanced(members, topic, 6), 30, "the 4 new partitions assigned")
        for m, had, n in zip(members, before, seen, strict=True):
            assert had <= m.assignment()
            assert all(e[0] == "assign" for e in m.event_log()[n:]), m.event_log()
    finally:
        for m in members:
            m.abandon()
