"""ConsumerProtocol Subscription/Assignment: golden bytes written out by hand
from Kafka's layout, and byte-compatibility with kafka-python's own encoders
in both directions."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment as KafkaAssignment,
)
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolSubscription as KafkaSubscription,
)

from muster.protocol.consumer_protocol import (
    Assignment,
    ConsumerProtocolError,
    Subscription,
    assignment_from_dict,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    subscription_version,
)


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def s(v: str) -> bytes:
    raw = v.encode()
    return i16(len(raw)) + raw


NULL_BYTES = i32(-1)
NULL_STRING = i16(-1)

SUB = Subscription(
    topics=("orders", "pay"),
    user_data=b"\x01\x02",
    owned_partitions={"orders": [0, 2], "pay": [1]},
    generation_id=7,
    rack_id="rack-a",
)
TOPICS = i32(2) + s("orders") + s("pay")
USER = i32(2) + b"\x01\x02"
OWNED = i32(2) + s("orders") + i32(2) + i32(0) + i32(2) + s("pay") + i32(1) + i32(1)

GOLDEN_SUBSCRIPTIONS = {
    0: i16(0) + TOPICS + USER,
    1: i16(1) + TOPICS + USER + OWNED,
    2: i16(2) + TOPICS + USER + OWNED + i32(7),
    3: i16(3) + TOPICS + USER + OWNED + i32(7) + s("rack-a"),
}


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_subscription_golden_bytes(version: int) -> None:
    assert encode_subscription(SUB, version) == GOLDEN_SUBSCRIPTIONS[version]


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_subscription_golden_decode_keeps_the_fields_of_its_version(version: int) -> None:
    got = decode_subscription(GOLDEN_SUBSCRIPTIONS[version])
    assert got.topics == ("orders", "pay")
    assert got.user_data == b"\x01\x02"
    owned = (("orders", (0, 2)), ("pay", (1,)))
    assert got.owned_partitions == (owned if version >= 1 else ())
    assert got.generation_id == (7 if version >= 2 else -1)
    assert got.rack_id == ("rack-a" if version >= 3 else None)


def test_subscription_nulls_and_empties() -> None:
    sub = Subscription(topics=())
    assert encode_subscription(sub, 3) == i16(3) + i32(0) + NULL_BYTES + i32(0) + i32(-1) + (
        NULL_STRING
    )
    assert encode_subscription(sub, 0) == i16(0) + i32(0) + NULL_BYTES
    assert decode_subscription(encode_subscription(sub)) == sub
    empty_user = Subscription(topics=("t",), user_data=b"")
    assert encode_subscription(empty_user, 0) == i16(0) + i32(1) + s("t") + i32(0)
    assert decode_subscription(encode_subscription(empty_user, 0)).user_data == b""


def test_subscription_default_version_is_3() -> None:
    assert encode_subscription(SUB) == GOLDEN_SUBSCRIPTIONS[3]
    assert subscription_version(GOLDEN_SUBSCRIPTIONS[1]) == 1


def test_subscription_from_a_newer_version_reads_known_fields_and_ignores_the_rest() -> None:
    newer = i16(5) + GOLDEN_SUBSCRIPTIONS[3][2:] + i32(12345) + s("a future field")
    got = decode_subscription(newer)
    assert got == decode_subscription(GOLDEN_SUBSCRIPTIONS[3])
    assert subscription_version(newer) == 5
    # trailing bytes after an older version's fields are ignored too (as Java does)
    assert decode_subscription(GOLDEN_SUBSCRIPTIONS[0] + b"junk").topics == ("orders", "pay")


def test_subscription_errors() -> None:
    with pytest.raises(ConsumerProtocolError):
        decode_subscription(b"")
    with pytest.raises(ConsumerProtocolError):
        decode_subscription(i16(-1) + TOPICS + NULL_BYTES)
    with pytest.raises(ConsumerProtocolError):
        decode_subscription(GOLDEN_SUBSCRIPTIONS[3][:-3])
    with pytest.raises(ConsumerProtocolError):
        decode_subscription(i16(0) + i32(3) + s("only-one"))
    with pytest.raises(ValueError):
        encode_subscription(SUB, 4)


ASSIGNMENT = Assignment({"orders": [0, 2], "pay": [1]}, user_data=b"\xff")
ASSIGNED = i32(2) + s("orders") + i32(2) + i32(0) + i32(2) + s("pay") + i32(1) + i32(1)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_assignment_golden_bytes(version: int) -> None:
    golden = i16(version) + ASSIGNED + i32(1) + b"\xff"
    assert encode_assignment(ASSIGNMENT, version) == golden
    assert decode_assignment(golden) == ASSIGNMENT


def test_assignment_forms_and_empties() -> None:
    assert Assignment([("orders", 0), ("pay", 1), ("orders", 2)]) == Assignment(
        {"orders": [0, 2], "pay": [1]}
    )
    assert ASSIGNMENT.as_dict() == {"orders": [0, 2], "pay": [1]}
    assert ASSIGNMENT.partition_set() == {("orders", 0), ("orders", 2), ("pay", 1)}
    # a coordinator hands zero bytes to a member the leader gave nothing
    assert decode_assignment(b"") == Assignment()
    assert decode_assignment(memoryview(b"")) == Assignment()
    assert encode_assignment(Assignment(), 0) == i16(0) + i32(0) + NULL_BYTES
    assert decode_assignment(i16(0) + i32(0) + NULL_BYTES) == Assignment()
    assert assignment_from_dict({"b": [3, 1], "a": [0]}).partitions == (
        ("a", (0,)),
        ("b", (1, 3)),
    )


def test_assignment_newer_version_and_errors() -> None:
    newer = i16(9) + ASSIGNED + NULL_BYTES + b"future fields"
    assert decode_assignment(newer) == Assignment({"orders": [0, 2], "pay": [1]})
    with pytest.raises(ConsumerProtocolError):
        decode_assignment(b"\x00")
    with pytest.raises(ConsumerProtocolError):
        decode_assignment(i16(-2) + ASSIGNED + NULL_BYTES)
    with pytest.raises(ConsumerProtocolError):
        decode_assignment(i16(0) + ASSIGNED[:-2])


# -- kafka-python (its own ConsumerProtocol encoders) --------------------------


def _kafka_subscription(sub: Subscription, version: int) -> KafkaSubscription:
    owned = [
        KafkaSubscription.TopicPartition(topic=t, partitions=list(ps))
        for t, ps in sub.owned_partitions
    ]
    return KafkaSubscription(
        topics=list(sub.topics),
        user_data=sub.user_data,
        owned_partitions=owned,
        generation_id=sub.generation_id,
        rack_id=sub.rack_id,
        version=version,
    )


def _from_kafka_subscription(k: KafkaSubscription, version: int) -> Subscription:
    return Subscription(
        topics=tuple(k.topics),
        user_data=k.user_data,
        owned_partitions=tuple((tp.topic, tuple(tp.partitions)) for tp in k.owned_partitions)
        if version >= 1
        else (),
        generation_id=k.generation_id if version >= 2 else -1,
        rack_id=k.rack_id if version >= 3 else None,
    )


def _downgrade(sub: Subscription, version: int) -> Subscription:
    """What survives a round trip through `version`."""
    return Subscription(
        topics=sub.topics,
        user_data=sub.user_data,
        owned_partitions=sub.owned_partitions if version >= 1 else (),
        generation_id=sub.generation_id if version >= 2 else -1,
        rack_id=sub.rack_id if version >= 3 else None,
    )


names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
int32s = st.integers(-(2**31), 2**31 - 1)
grouped = st.lists(st.tuples(names, st.lists(int32s, max_size=5).map(tuple)), max_size=4).map(tuple)
subscriptions = st.builds(
    Subscription,
    topics=st.lists(names, max_size=5).map(tuple),
    user_data=st.none() | st.binary(max_size=20),
    owned_partitions=grouped,
    generation_id=int32s,
    rack_id=st.none() | names,
)
assignments = st.builds(
    Assignment, partitions=grouped, user_data=st.none() | st.binary(max_size=20)
)
versions = st.integers(0, 3)


@given(subscriptions, versions)
@settings(max_examples=200, deadline=None)
def test_subscription_bytes_match_kafka_python_both_ways(sub: Subscription, v: int) -> None:
    ours = encode_subscription(sub, v)
    theirs = _kafka_subscription(sub, v).encode(version=v)
    assert ours == theirs
    assert decode_subscription(theirs) == _downgrade(sub, v)
    assert _from_kafka_subscription(KafkaSubscription.decode(ours), v) == _downgrade(sub, v)


@given(assignments, versions)
@settings(max_examples=200, deadline=None)
def test_assignment_bytes_match_kafka_python_both_ways(a: Assignment, v: int) -> None:
    ours = encode_assignment(a, v)
    k = KafkaAssignment(
        assigned_partitions=[
            KafkaAssignment.TopicPartition(topic=t, partitions=list(ps)) for t, ps in a.partitions
        ],
        user_data=a.user_data,
        version=v,
    )
    theirs = k.encode(version=v)
    assert ours == theirs
    assert decode_assignment(theirs) == a
    back = KafkaAssignment.decode(ours)
    assert [(tp.topic, tuple(tp.partitions)) for tp in back.assigned_partitions] == list(
        a.partitions
    )
    assert back.user_data == a.user_data


def test_kafka_python_reads_a_newer_version_like_we_do() -> None:
    newer = i16(4) + GOLDEN_SUBSCRIPTIONS[3][2:] + b"more"
    theirs = KafkaSubscription.decode(newer)
    assert _from_kafka_subscription(theirs, 3) == decode_subscription(newer)
