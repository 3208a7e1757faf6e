"""Committed offsets and group metadata survive a kill -9 of the broker."""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from kafka import KafkaAdminClient

from tests.support.brokers import MusterProcess
from tests.wire.clients import create_topic
from tests.wire.group_helpers import (
    ChildMember,
    GroupMember,
    admin,
    all_partitions,
    committed_offsets,
    describe_group,
    fresh_group_muster,  # noqa: F401 - fixture
    produce_values,
    wait_group_stable,
    wait_until,
)


def _answer(call: Any) -> Any:
    """The call's result, or None while the restarted coordinator is still loading."""
    try:
        return call()
    except KafkaException:
        return None


def _listed_offsets(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    client = admin(bootstrap)
    result = client.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group)], request_timeout=15
    )[group].result(timeout=20)
    return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions}


def test_commits_and_group_survive_kill_9(fresh_group_muster: MusterProcess) -> None:  # noqa: F811
    broker = fresh_group_muster
    b = broker.bootstrap
    topic, group = "durable-group-topic", "durable-group"
    create_topic(b, topic, partitions=2)
    everything = all_partitions(topic, 2)
    first = [f"first-{i}".encode() for i in range(40)]
    produce_values(b, topic, first, 2)

    member = GroupMember(
        b, group, [topic], **{"client.id": "before-crash", "enable.auto.commit": False}
    )
    try:
        wait_group_stable(b, group, [member], everything, 60)
        wait_until(lambda: set(first) <= set(member.values()), 30, "first batch consumed")
        # a synchronous commit of explicit offsets, answered only once durable
        result = member.call(
            lambda c: c.commit(
                offsets=[TopicPartition(topic, 0, 15), TopicPartition(topic, 1, 12)],
                asynchronous=False,
            )
        )
        assert [tp.error for tp in result] == [None, None]
    finally:
        member.close()
    wait_until(lambda: describe_group(b, group).state.name == "EMPTY", 20, "group Empty")

    broker.restart(hard=True)  # SIGKILL: no clean shutdown, no flush on exit

    desc = wait_until(
        lambda: _answer(lambda: describe_group(b, group)), 60, "DescribeGroups after restart"
    )
    assert desc.state.name == "EMPTY" and desc.members == []
    offsets = wait_until(
        lambda: _answer(lambda: _listed_offsets(b, group)), 60, "offsets after restart"
    )
    assert offsets == {(topic, 0): 15, (topic, 1): 12}
    assert committed_offsets(b, group, sorted(everything)) == {(topic, 0): 15, (topic, 1): 12}

    kp = KafkaAdminClient(bootstrap_servers=b)
    try:
        kp_desc = kp.describe_groups([group])[group]
        assert kp_desc["error"] is None
        assert (kp_desc["group_state"], kp_desc["protocol_type"]) == ("Empty", "consumer")
        listed = {g["group_id"] for g in kp.list_groups()}
        assert group in listed
    finally:
        kp.close()

    # a new consumer of the group resumes exactly at the committed offsets
    resumed = GroupMember(b, group, [topic], **{"client.id": "after-crash"})
    try:
        wait_group_stable(b, group, [resumed], everything, 60)
        start = {0: 15, 1: 12}  # partition -> committed offset (value i went to i % 2, i // 2)
        expected = {first[i] for i in range(40) if i // 2 >= start[i % 2]}
        wait_until(lambda: expected <= set(resumed.values()), 30, "resumed consumption")
        with resumed.lock:
            got = list(resumed.messages)
        assert sorted(v for *_x, v in got) == sorted(expected)
        firsts: dict[int, int] = {}
        for _t, p, o, _v in got:
            firsts.setdefault(p, o)
        assert firsts == start
    finally:
        resumed.close()


def test_stable_group_rides_through_kill_9_and_expires_a_member_lost_meanwhile(
    fresh_group_muster: MusterProcess,  # noqa: F811
) -> None:
    """The loaded group keeps its members (same member ids, no UNKNOWN_MEMBER_ID), and the
    member that died while the broker was down is expired by its re-armed session timer."""
    broker = fresh_group_muster
    b = broker.bootstrap
    topic, group = "riding-topic", "riding-group"
    session_s = 2.0
    create_topic(b, topic, partitions=4)
    everything = all_partitions(topic, 4)
    steady = GroupMember(
        b,
        group,
        [topic],
        **{"client.id": "steady", "session.timeout.ms": 6000, "heartbeat.interval.ms": 300},
    )
    doomed = ChildMember(b, group, topic, "doomed", int(session_s * 1000))
    try:

        def split() -> bool:
            mine, theirs = steady.assignment(), doomed.assignment()
            return bool(mine and theirs) and not mine & theirs and mine | theirs == everything

        wait_until(split, 60, "steady and doomed split the partitions")
        wait_until(
            lambda: _answer(lambda: _state_and_members(b, group)) == ("STABLE", 2),
            60,
            "group Stable with 2",
        )
        ids = {m.client_id: m.member_id for m in describe_group(b, group).members}

        broker.kill()  # SIGKILL the broker ...
        doomed.kill()  # ... and lose a member while it is down
        broker.start()
        restarted_at = time.monotonic()

        wait_until(
            lambda: steady.assignment() == everything,
            session_s + 30,
            "the surviving member to own every partition",
            interval=0.05,
        )
        took = time.monotonic() - restarted_at
        assert took <= session_s + 10, f"expiry after restart took {took:.1f}s"
        desc = wait_until(lambda: _answer(lambda: describe_group(b, group)), 30, "describe")
        wait_until(
            lambda: _answer(lambda: _state_and_members(b, group)) == ("STABLE", 1),
            30,
            "group Stable with the survivor",
        )
        desc = describe_group(b, group)
        # the survivor kept its member id across the coordinator restart
        assert [(m.client_id, m.member_id) for m in desc.members] == [("steady", ids["steady"])]

        after = [f"after-{i}".encode() for i in range(40)]
        produce_values(b, topic, after, 4)
        wait_until(lambda: set(after) <= set(steady.values()), 30, "messages after restart")
    finally:
        doomed.abandon()
        steady.abandon()


def _state_and_members(bootstrap: str, group: str) -> tuple[str, int]:
    desc = describe_group(bootstrap, group)
    return desc.state.name, len(desc.members)
