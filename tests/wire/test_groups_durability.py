"""Committed offsets and group metadata survive a kill -9 of the broker."""

from __future__ import annotations

from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from kafka import KafkaAdminClient

from tests.support.brokers import MusterProcess
from tests.wire.clients import create_topic
from tests.wire.group_helpers import (
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
        result = member.consumer.commit(
            offsets=[TopicPartition(topic, 0, 15), TopicPartition(topic, 1, 20)],
            asynchronous=False,
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
    assert offsets == {(topic, 0): 15, (topic, 1): 20}
    assert committed_offsets(b, group, sorted(everything)) == {(topic, 0): 15, (topic, 1): 20}

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
        expected = {first[i] for i in range(40) if (i % 2 == 0 and i // 2 >= 15) or (i % 2 and i // 2 >= 20)}
        wait_until(lambda: expected <= set(resumed.values()), 30, "resumed consumption")
        with resumed.lock:
            got = list(resumed.messages)
        assert sorted(v for *_x, v in got) == sorted(expected)
        firsts: dict[int, int] = {}
        for _t, p, o, _v in got:
            firsts.setdefault(p, o)
        assert firsts == {0: 15, 1: 20}
    finally:
        resumed.close()
