"""The assignors on the wire: subscription user data, reading members from
decoded subscriptions as Kafka's assignors do, the leader step over real
bytes, a cross-check against kafka-python's own assignors, and purity."""

from __future__ import annotations

import ast
import struct
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment as KafkaAssignment
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription as KafkaSubscription

import muster.assignors
from muster.assignors.registry import ASSIGNORS, Member, perform_assignment, subscription_for
from muster.assignors.user_data import (
    decode_cooperative_user_data,
    decode_sticky_user_data,
    encode_cooperative_user_data,
    encode_sticky_user_data,
)
from muster.protocol.consumer_protocol import (
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_subscription,
)


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def s(v: str) -> bytes:
    return i16(len(v.encode())) + v.encode()


# -- StickyAssignor user data (Java: no version prefix; v1, fall back to v0) --

STICKY_V0 = i32(2) + s("a") + i32(2) + i32(0) + i32(3) + s("b") + i32(1) + i32(1)
STICKY_V1 = STICKY_V0 + i32(7)


def test_sticky_user_data_golden() -> None:
    owned = {("b", 1), ("a", 3), ("a", 0)}
    assert encode_sticky_user_data(owned, 7) == STICKY_V1
    assert decode_sticky_user_data(STICKY_V1) == (frozenset(owned), 7)
    assert decode_sticky_user_data(STICKY_V0) == (frozenset(owned), None)
    assert decode_sticky_user_data(None) is None
    assert decode_sticky_user_data(b"") is None
    # unparseable: ignored, as Kafka does
    assert decode_sticky_user_data(b"\x00\x00\x00\x09junk") == (frozenset(), -1)
    assert encode_sticky_user_data((), -1) == i32(0) + i32(-1)


def test_sticky_user_data_matches_kafka_python_layout() -> None:
    # kafka-python 3.0.12 wraps this in a version prefix inside user_data
    # (Java does not); its header-less encoding is Java's layout
    theirs = StickyAssignorUserData([("a", [0, 3]), ("b", [1])], 7).encode(header=False)
    assert theirs == STICKY_V1
    back = StickyAssignorUserData.decode(encode_sticky_user_data({("a", 0)}, 2), 1, header=False)
    assert (back.previous_assignment[0].topic, back.generation) == ("a", 2)


def test_cooperative_user_data() -> None:
    assert encode_cooperative_user_data(12) == i32(12)
    assert decode_cooperative_user_data(i32(12)) == 12
    assert decode_cooperative_user_data(None) is None
    assert decode_cooperative_user_data(b"\x01") == -1


# -- members from subscriptions -------------------------------------------------


def test_plain_members() -> None:
    sub = Subscription(("t",), None, {"t": [0]}, 4, "")
    member = ASSIGNORS["range"].member_data(sub, "inst-1")
    assert member == Member(frozenset({"t"}), frozenset({("t", 0)}), 4, None, "inst-1")
    assert ASSIGNORS["roundrobin"].member_data(Subscription(("t",), rack_id="r1"), None).rack == (
        "r1"
    )


def test_sticky_member_reads_user_data_first() -> None:
    a = ASSIGNORS["sticky"]
    # an eager member has revoked everything: its owned_partitions are empty
    sub = Subscription(("a", "b"), user_data=STICKY_V1, owned_partitions=(), generation_id=-1)
    assert a.member_data(sub, None).owned == {("a", 0), ("a", 3), ("b", 1)}
    assert a.member_data(sub, None).generation == 7
    v0 = Subscription(("a",), user_data=STICKY_V0)
    assert a.member_data(v0, None).generation == -1
    # no user data: fall back to the subscription's fields
    plain = Subscription(("a",), owned_partitions={"a": [1]}, generation_id=3)
    assert (a.member_data(plain, None).owned, a.member_data(plain, None).generation) == (
        {("a", 1)},
        3,
    )


def test_cooperative_member_data() -> None:
    a = ASSIGNORS["cooperative-sticky"]
    # testMemberDataWithInconsistentData: no generation in the subscription
    # (v1): generation from user data, owned partitions from the subscription
    sub = Subscription(("t",), user_data=i32(5), owned_partitions={"t": [0]})
    assert (a.member_data(sub, None).owned, a.member_data(sub, None).generation) == (
        {("t", 0)},
        5,
    )
    # testMemberDataWithEmptyPartitionsAndEqualGeneration: v2+ field wins
    sub = Subscription(("t",), user_data=STICKY_V1, owned_partitions=(), generation_id=1)
    assert (a.member_data(sub, None).owned, a.member_data(sub, None).generation) == (
        frozenset(),
        1,
    )
    assert a.member_data(Subscription(("t",)), None).generation == -1


def test_subscription_for_each_assignor() -> None:
    owned = [("b", 1), ("a", 3), ("a", 0)]
    for name in ("range", "roundrobin"):
        sub = subscription_for(name, ["b", "a", "a"], owned, 7)
        assert sub.topics == ("a", "b")
        assert sub.owned_partitions == (("a", (0, 3)), ("b", (1,)))
        assert sub.user_data is None
    assert subscription_for("sticky", ["a"], None, -1).user_data is None
    assert subscription_for("sticky", ["a", "b"], owned, 7).user_data == STICKY_V1
    eager = subscription_for("sticky", ["a", "b"], (), 7, previous=owned)
    assert (eager.owned_partitions, eager.user_data) == ((), STICKY_V1)
    sub = subscription_for("cooperative-sticky", ["a"], owned, 7, rack="r")
    assert (sub.user_data, sub.generation_id, sub.rack_id) == (i32(7), 7, "r")
    assert decode_subscription(encode_subscription(sub)) == sub


# -- the leader step, over bytes -------------------------------------------------


def test_perform_assignment_over_kafka_python_subscriptions() -> None:
    members = {
        "c1": (RangePartitionAssignor.metadata(["t1", "t2"]).encode(), None),
        "c2": (RangePartitionAssignor.metadata(["t1", "t2"]).encode(), None),
    }
    out = perform_assignment("range", members, {"t1": 3, "t2": 3})
    got = {m: KafkaAssignment.decode(raw) for m, raw in out.items()}
    assert [(tp.topic, tp.partitions) for tp in got["c1"].assigned_partitions] == [
        ("t1", [0, 1]),
        ("t2", [0, 1]),
    ]
    assert got["c2"].user_data is None
    assert decode_assignment(out["c2"]).as_dict() == {"t1": [2], "t2": [2]}


def test_perform_assignment_cooperative_two_phase() -> None:
    def join(owned, generation):
        return encode_subscription(subscription_for("cooperative-sticky", ["t"], owned, generation))

    members = {
        "c1": (join([("t", p) for p in range(4)], 3), None),
        "c2": (join([], -1), None),
    }
    first = {
        m: decode_assignment(b).as_dict()
        for m, b in perform_assignment("cooperative-sticky", members, {"t": 4}).items()
    }
    assert first == {"c1": {"t": [0, 1]}, "c2": {}}
    members = {"c1": (join([("t", 0), ("t", 1)], 4), None), "c2": (join([], 4), None)}
    second = {
        m: decode_assignment(b).as_dict()
        for m, b in perform_assignment("cooperative-sticky", members, {"t": 4}).items()
    }
    assert second == {"c1": {"t": [0, 1]}, "c2": {"t": [2, 3]}}


def test_perform_assignment_sticky_uses_java_user_data() -> None:
    # Java StickyAssignor members: previous assignment only in user data
    old = Subscription(("t",), user_data=encode_sticky_user_data({("t", 2), ("t", 3)}, 9))
    members = {"a": (encode_subscription(old, 0), None), "b": (Subscription(("t",)), None)}
    out = perform_assignment("sticky", members, {"t": 4}, version=0)
    assert decode_assignment(out["a"]).as_dict() == {"t": [2, 3]}
    assert out["b"][:2] == i16(0)


# -- outcome cross-check with kafka-python's own range / roundrobin ---------------


class _Cluster:
    def __init__(self, counts: dict[str, int]) -> None:
        self.counts = counts

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        n = self.counts.get(topic)
        return None if n is None else set(range(n))


@given(
    st.dictionaries(
        st.text("abc0", min_size=1, max_size=3),
        st.frozensets(st.sampled_from(["t1", "t2", "t3"]), min_size=1),
        min_size=1,
        max_size=6,
    ),
    st.fixed_dictionaries({"t1": st.integers(1, 7), "t2": st.integers(1, 7)}),
    st.booleans(),
)
@settings(max_examples=200, deadline=None)
def test_range_and_roundrobin_agree_with_kafka_python(subs, counts, same) -> None:
    if same:
        first = next(iter(subs.values()))
        subs = dict.fromkeys(subs, first)
    # dynamic members only (kafka-python 3.0.12 mis-sorts mixed static and
    # dynamic members, and its roundrobin raises KeyError when it has to skip
    # a member not subscribed to a topic, so roundrobin is compared on equal
    # subscriptions only); "t3" has no metadata
    members = {m: Member(topics) for m, topics in subs.items()}
    equal = len(set(subs.values())) == 1
    for theirs, name in (
        (RangePartitionAssignor, "range"),
        (RoundRobinPartitionAssignor, "roundrobin"),
    ):
        if name == "roundrobin" and not equal:
            continue
        kmembers = [
            SimpleNamespace(
                member_id=m,
                group_instance_id=None,
                metadata=KafkaSubscription(version=0, topics=sorted(t), user_data=None),
            )
            for m, t in subs.items()
        ]
        expected = {
            m: {t: sorted(ps) for t, ps in a.assigned_partitions if ps}  # (topic, parts) pairs
            for m, a in theirs.assign(_Cluster(counts), kmembers).items()
        }
        assert ASSIGNORS[name].assign(members, counts) == expected


# -- purity (architecture principle 9) --------------------------------------------

FORBIDDEN = ("asyncio", "socket", "selectors", "threading", "time", "datetime", "random")
FORBIDDEN_PACKAGES = ("muster.server", "muster.client", "muster.coordinator", "muster.spark")


def _files() -> list[Path]:
    root = Path(muster.assignors.__file__).parent
    return sorted(root.rglob("*.py"))


@pytest.mark.parametrize("path", _files(), ids=lambda p: p.name)
def test_assignors_are_pure(path: Path) -> None:
    tree = ast.parse(path.read_text(), str(path))
    imported: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.append(node.module)
    bad = [
        m
        for m in imported
        if m.split(".")[0] in FORBIDDEN or any(m.startswith(p) for p in FORBIDDEN_PACKAGES)
    ]
    assert bad == []
