"""Group administration through confluent-kafka's AdminClient and kafka-python's
KafkaAdminClient: list/describe/delete groups, list/alter/delete offsets, and commit
metadata round trips."""

from __future__ import annotations

import pytest
from confluent_kafka import (
    Consumer,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from kafka import KafkaAdminClient, KafkaConsumer
from kafka import TopicPartition as KTP
from kafka.errors import GroupSubscribedToTopicError, NoError, NonEmptyGroupError
from kafka.structs import OffsetAndMetadata

from tests.support.brokers import MusterProcess
from tests.wire.clients import create_topic
from tests.wire.group_helpers import (
    GroupMember,
    admin,
    all_partitions,
    describe_group,
    group_muster,  # noqa: F401 - fixture
    produce_values,
    wait_group_stable,
    wait_until,
)


def _listed_states(bootstrap: str, *states: ConsumerGroupState) -> dict[str, str]:
    client = admin(bootstrap)  # must outlive its futures
    kwargs: dict[str, object] = {"states": set(states)} if states else {}
    result = client.list_consumer_groups(request_timeout=15, **kwargs).result(timeout=20)
    assert not result.errors, result.errors
    return {g.group_id: g.state.name for g in result.valid}


def _listed_offsets(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    client = admin(bootstrap)  # must outlive its futures
    futures = client.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group)], request_timeout=15
    )
    result = futures[group].result(timeout=20)
    return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions}


def _kp_admin(bootstrap: str) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kp-admin")


def test_admin_clients_list_describe_alter_and_delete(
    group_muster: MusterProcess,  # noqa: F811
) -> None:
    b = group_muster.bootstrap
    topic, group = "adm-topic", "adm-group"
    create_topic(b, topic, partitions=3)
    everything = all_partitions(topic, 3)
    produce_values(b, topic, [f"m-{i}".encode() for i in range(30)], 3)
    members = [GroupMember(b, group, [topic], **{"client.id": f"adm-{i}"}) for i in range(2)]
    kp = _kp_admin(b)
    cadmin = admin(b)
    try:
        wait_group_stable(b, group, members, everything, 60)
        consumed = {(topic, p): 10 for p in range(3)}
        wait_until(lambda: _listed_offsets(b, group) == consumed, 30, "auto-commits listed")

        # --- a live group
        assert _listed_states(b)[group] == "STABLE"
        # ListGroups state filters (KIP-518)
        assert _listed_states(b, ConsumerGroupState.STABLE).get(group) == "STABLE"
        assert group not in _listed_states(b, ConsumerGroupState.EMPTY)
        desc = describe_group(b, group)
        assert desc.group_id == group and not desc.is_simple_consumer_group
        assert desc.state.name == "STABLE" and desc.partition_assignor == "range"
        assert sorted(m.client_id for m in desc.members) == ["adm-0", "adm-1"]
        assert all(m.host.lstrip("/") == "127.0.0.1" for m in desc.members), desc.members
        described = [
            {(tp.topic, tp.partition) for tp in m.assignment.topic_partitions} for m in desc.members
        ]
        by_client = {m.client_id: m for m in desc.members}
        for member in members:
            mine = {
                (tp.topic, tp.partition)
                for tp in by_client[member.name].assignment.topic_partitions
            }
            assert mine == set(member.assignment())
        assert set().union(*described) == everything and sum(map(len, described)) == 3

        kp_listed = {g["group_id"]: g for g in kp.list_groups()}
        assert kp_listed[group]["protocol_type"] == "consumer"
        assert kp_listed[group].get("group_state", "Stable") == "Stable"
        kp_desc = kp.describe_groups([group])[group]
        assert kp_desc["error"] is None and kp_desc["group_state"] == "Stable"
        assert kp_desc["protocol_type"] == "consumer" and kp_desc["protocol_data"] == "range"
        assert sorted(m["client_id"] for m in kp_desc["members"]) == ["adm-0", "adm-1"]

        # deleting a live group is refused with NON_EMPTY_GROUP by both clients
        fut = cadmin.delete_consumer_groups([group], request_timeout=15)[group]
        with pytest.raises(KafkaException) as refused:
            fut.result(timeout=20)
        assert refused.value.args[0].code() == KafkaError.NON_EMPTY_GROUP
        assert kp.delete_groups([group]) == {group: NonEmptyGroupError.__name__}
        # deleting offsets of a topic the live group subscribes to is refused per partition
        kp_result = kp.delete_group_offsets(group, [KTP(topic, 0)])
        assert kp_result == {KTP(topic, 0): GroupSubscribedToTopicError}
        assert _listed_offsets(b, group) == consumed

        # --- the members leave: Empty, offsets kept
        for m in members:
            m.close()
        wait_until(lambda: _listed_states(b).get(group) == "EMPTY", 20, "group listed EMPTY")
        assert _listed_states(b, ConsumerGroupState.EMPTY).get(group) == "EMPTY"
        assert group not in _listed_states(b, ConsumerGroupState.STABLE)
        assert describe_group(b, group).state.name == "EMPTY"
        assert describe_group(b, group).members == []
        assert _listed_offsets(b, group) == consumed

        # alter offsets of the Empty group (confluent, then kafka-python)
        altered = cadmin.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, 3)])],
            request_timeout=15,
        )[group].result(timeout=20)
        assert [
            (tp.topic, tp.partition, tp.offset, tp.error) for tp in altered.topic_partitions
        ] == [(topic, 0, 3, None)]
        kp_altered = kp.alter_group_offsets(group, {KTP(topic, 1): OffsetAndMetadata(5, "", -1)})
        assert kp_altered == {KTP(topic, 1): NoError}
        assert _listed_offsets(b, group) == {(topic, 0): 3, (topic, 1): 5, (topic, 2): 10}
        kp_offsets = kp.list_group_offsets({group: None})
        kp_offsets = kp_offsets.get(group, kp_offsets)
        assert {(tp.topic, tp.partition): om.offset for tp, om in kp_offsets.items()} == {
            (topic, 0): 3,
            (topic, 1): 5,
            (topic, 2): 10,
        }

        # OffsetDelete on the Empty group (kafka-python; confluent has no such call)
        assert kp.delete_group_offsets(group, [KTP(topic, 2)]) == {KTP(topic, 2): NoError}
        assert _listed_offsets(b, group) == {(topic, 0): 3, (topic, 1): 5}

        # a new member starts where the altered offsets say
        resumed = GroupMember(b, group, [topic], **{"client.id": "adm-resumed"})
        members.append(resumed)
        wait_group_stable(b, group, [resumed], everything, 60)
        wait_until(lambda: len(resumed.values()) >= 7 + 5 + 10, 30, "resumed consumer")
        with resumed.lock:
            firsts: dict[int, int] = {}
            for _t, p, o, _v in resumed.messages:
                firsts.setdefault(p, o)
        assert firsts == {0: 3, 1: 5, 2: 0}
        resumed.close()
        wait_until(lambda: _listed_states(b).get(group) == "EMPTY", 20, "group EMPTY again")

        # deleting the Empty group succeeds and it is gone
        cadmin.delete_consumer_groups([group], request_timeout=15)[group].result(timeout=20)
        assert group not in _listed_states(b)
        assert set(_listed_offsets(b, group).values()) <= {-1001}

        # kafka-python deletes an Empty group too
        other = "adm-group-kp"
        quick = GroupMember(b, other, [topic], **{"client.id": "adm-quick"})
        members.append(quick)
        wait_group_stable(b, other, [quick], everything, 60)
        quick.close()
        wait_until(lambda: _listed_states(b).get(other) == "EMPTY", 20, "second group EMPTY")
        assert kp.delete_groups([other]) == {other: "OK"}
        assert other not in _listed_states(b)
    finally:
        for m in members:
            m.abandon()
        kp.close()


def test_commit_metadata_is_returned_unchanged(group_muster: MusterProcess) -> None:  # noqa: F811
    b = group_muster.bootstrap
    topic, group = "meta-topic", "meta-group"
    create_topic(b, topic, partitions=2)
    text = "checkpoint: batch=42 \u2713 {json: true}"

    consumer = Consumer({"bootstrap.servers": b, "group.id": group, "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
        result = consumer.commit(
            offsets=[TopicPartition(topic, 0, 7, metadata=text)], asynchronous=False
        )
        assert [tp.error for tp in result] == [None]
        got = consumer.committed([TopicPartition(topic, 0)], timeout=15)
        assert [(tp.offset, tp.metadata) for tp in got] == [(7, text)]
    finally:
        consumer.close()

    kp_consumer = KafkaConsumer(bootstrap_servers=b, group_id=group, enable_auto_commit=False)
    try:
        kp_consumer.assign([KTP(topic, 0), KTP(topic, 1)])
        kp_consumer.commit({KTP(topic, 1): OffsetAndMetadata(4, "kafka-python says hi", -1)})
        assert kp_consumer.committed(KTP(topic, 1), metadata=True)[:2] == (
            4,
            "kafka-python says hi",
        )
        # each client reads what the other wrote. confluent-kafka-python puts the C
        # string's NUL on the wire (py_to_c_parts: metadata_size = strlen + 1) and reads it
        # back as a C string; a byte-exact broker hands kafka-python that NUL too.
        assert kp_consumer.committed(KTP(topic, 0), metadata=True)[:2] == (7, text + "\x00")
    finally:
        kp_consumer.close()
    reader = Consumer({"bootstrap.servers": b, "group.id": group})
    try:
        got = reader.committed([TopicPartition(topic, 1)], timeout=15)
        assert [(tp.offset, tp.metadata) for tp in got] == [(4, "kafka-python says hi")]
    finally:
        reader.close()
    kp = _kp_admin(b)
    try:
        offsets = kp.list_group_offsets({group: None})
        offsets = offsets.get(group, offsets)
        assert {tp.partition: (om.offset, om.metadata) for tp, om in offsets.items()} == {
            0: (7, text + "\x00"),
            1: (4, "kafka-python says hi"),
        }
    finally:
        kp.close()
