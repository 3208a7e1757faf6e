"""Small exact cases, mirroring Kafka's RangeAssignorTest,
RoundRobinAssignorTest, AbstractStickyAssignorTest and
CooperativeStickyAssignorTest (same names, inputs and expected outcomes)."""

from __future__ import annotations

import pytest

from muster.assignors import range as range_
from muster.assignors.cooperative_sticky import assign as cooperative
from muster.assignors.registry import ASSIGNORS, Member, RebalanceProtocol, get
from muster.assignors.roundrobin import assign as roundrobin
from muster.assignors.sticky import assign as sticky

range_assign = range_.assign
T, T1, T2, T3 = "topic", "topic1", "topic2", "topic3"
C1, C2, C3, C4 = "consumer1", "consumer2", "consumer3", "consumer4"


def sub(*topics: str, owned=(), generation: int = -1, instance: str | None = None) -> Member:
    return Member(frozenset(topics), owned, generation, None, instance)


# -- registry ------------------------------------------------------------------


def test_registry_names_and_protocols() -> None:
    assert list(ASSIGNORS) == ["range", "roundrobin", "sticky", "cooperative-sticky"]
    for name in ("range", "roundrobin", "sticky"):
        assert ASSIGNORS[name].supported_protocols == (RebalanceProtocol.EAGER,)
    assert ASSIGNORS["cooperative-sticky"].supported_protocols == (
        RebalanceProtocol.COOPERATIVE,
        RebalanceProtocol.EAGER,
    )
    assert all(a.name == n for n, a in ASSIGNORS.items())
    with pytest.raises(ValueError, match="unknown assignor"):
        get("uniform")


@pytest.mark.parametrize("name", list(ASSIGNORS))
def test_common_edge_cases(name: str) -> None:
    assign = ASSIGNORS[name].assign
    assert assign({}, {T: 3}) == {}
    # testOneConsumerNoTopic / testOneConsumerNonexistentTopic
    assert assign({C1: sub()}, {}) == {C1: {}}
    assert assign({C1: sub(T)}, {}) == {C1: {}}
    assert assign({C1: sub(T)}, {T: 0}) == {C1: {}}
    # testOneConsumerOneTopic / testOnlyAssignsPartitionsFromSubscribedTopics
    assert assign({C1: sub(T)}, {T: 3, "other": 3}) == {C1: {T: [0, 1, 2]}}
    # testOneConsumerMultipleTopics
    assert assign({C1: sub(T1, T2)}, {T1: 1, T2: 2}) == {C1: {T1: [0], T2: [0, 1]}}
    # testTwoConsumersOneTopicOnePartition / TwoPartitions
    assert assign({C1: sub(T), C2: sub(T)}, {T: 1}) == {C1: {T: [0]}, C2: {}}
    assert assign({C1: sub(T), C2: sub(T)}, {T: 2}) == {C1: {T: [0]}, C2: {T: [1]}}
    # plain tuples work as members too
    assert assign({C1: ([T],), C2: ([T], ())}, {T: 2}) == {C1: {T: [0]}, C2: {T: [1]}}


# -- range -----------------------------------------------------------------------


def test_range_multiple_consumers_mixed_topics() -> None:
    got = range_assign({C1: sub(T1), C2: sub(T1, T2), C3: sub(T1)}, {T1: 3, T2: 2})
    assert got == {C1: {T1: [0]}, C2: {T1: [1], T2: [0, 1]}, C3: {T1: [2]}}


def test_range_two_consumers_two_topics_six_partitions() -> None:
    got = range_assign({C1: sub(T1, T2), C2: sub(T1, T2)}, {T1: 3, T2: 3})
    assert got == {C1: {T1: [0, 1], T2: [0, 1]}, C2: {T1: [2], T2: [2]}}


def test_range_static_members_sort_by_instance_id() -> None:
    # testTwoStaticConsumersTwoTopicsSixPartitions: consumer-a sorts first by
    # member id but second by instance id
    members = {
        "consumer-b": sub(T1, T2, instance="instance1"),
        "consumer-a": sub(T1, T2, instance="instance2"),
    }
    got = range_assign(members, {T1: 3, T2: 3})
    assert got == {
        "consumer-b": {T1: [0, 1], T2: [0, 1]},
        "consumer-a": {T1: [2], T2: [2]},
    }
    # testOneStaticConsumerAndOneDynamicConsumerTwoTopicsSixPartitions
    members = {"consumer-b": sub(T1, T2, instance="instance1"), "consumer-a": sub(T1, T2)}
    got = range_assign(members, {T1: 3, T2: 3})
    assert got["consumer-b"] == {T1: [0, 1], T2: [0, 1]}


def test_range_static_member_assignment_persistent() -> None:
    members = {
        C1: sub(T1, T2, instance="instance1"),
        C2: sub(T1, T2, instance="instance2"),
        C3: sub(T1, T2, instance="instance3"),
        C4: sub(T1, T2),
    }
    expected = {
        C1: {T1: [0, 1], T2: [0]},
        C2: {T1: [2], T2: [1]},
        C3: {T1: [3], T2: [2]},
        C4: {T1: [4], T2: [3]},
    }
    assert range_assign(members, {T1: 5, T2: 4}) == expected
    # replace dynamic member 4 with a new dynamic member 5
    members["consumer5"] = members.pop(C4)
    expected["consumer5"] = expected.pop(C4)
    assert range_assign(members, {T1: 5, T2: 4}) == expected


def test_range_static_assignment_persistent_after_member_id_changes() -> None:
    members = {f"m{i}": sub(T1, T2, instance=f"instance{i}") for i in (1, 2, 3)}
    by_instance = {
        "instance1": {T1: [0, 1], T2: [0, 1]},
        "instance2": {T1: [2, 3], T2: [2, 3]},
        "instance3": {T1: [4], T2: [4]},
    }
    got = range_assign(members, {T1: 5, T2: 5})
    assert {members[m].group_instance_id: a for m, a in got.items()} == by_instance
    renamed = {"z9": members["m1"], "a0": members["m2"], "m5": members["m3"]}
    got = range_assign(renamed, {T1: 5, T2: 5})
    assert {renamed[m].group_instance_id: a for m, a in got.items()} == by_instance


def test_range_member_ids_compare_as_java_strings() -> None:
    # U+FF5E sorts after U+1F600 in Python (code points) but before it in Java
    # (UTF-16 code units: 0xFF5E < 0xD83D is false... 0xD83D < 0xFF5E)
    hi, emoji = "\uff5e", "\U0001f600"
    got = range_assign({hi: sub(T), emoji: sub(T)}, {T: 2})
    assert got == {emoji: {T: [0]}, hi: {T: [1]}}


# -- roundrobin ----------------------------------------------------------------


def test_roundrobin_multiple_consumers_mixed_topics() -> None:
    got = roundrobin({C1: sub(T1), C2: sub(T1, T2), C3: sub(T1)}, {T1: 3, T2: 2})
    assert got == {C1: {T1: [0]}, C2: {T1: [1], T2: [0, 1]}, C3: {T1: [2]}}


def test_roundrobin_two_dynamic_consumers_two_topics_six_partitions() -> None:
    got = roundrobin({C1: sub(T1, T2), C2: sub(T1, T2)}, {T1: 3, T2: 3})
    assert got == {C1: {T1: [0, 2], T2: [1]}, C2: {T1: [1], T2: [0, 2]}}


def test_roundrobin_static_members() -> None:
    members = {
        "consumer-b": sub(T1, T2, instance="instance1"),
        "consumer-a": sub(T1, T2, instance="instance2"),
    }
    got = roundrobin(members, {T1: 3, T2: 3})
    assert got == {"consumer-b": {T1: [0, 2], T2: [1]}, "consumer-a": {T1: [1], T2: [0, 2]}}
    members = {"consumer-b": sub(T1, T2, instance="instance1"), "consumer-a": sub(T1, T2)}
    got = roundrobin(members, {T1: 3, T2: 3})
    assert got == {"consumer-b": {T1: [0, 2], T2: [1]}, "consumer-a": {T1: [1], T2: [0, 2]}}


def test_roundrobin_static_member_assignment_persistent() -> None:
    members = {
        C1: sub(T1, T2, instance="instance1"),
        C2: sub(T1, T2, instance="instance2"),
        C3: sub(T1, T2, instance="instance3"),
        C4: sub(T1, T2),
    }
    expected = {
        C1: {T1: [0], T2: [1]},
        C2: {T1: [1], T2: [2]},
        C3: {T1: [2]},
        C4: {T2: [0]},
    }
    assert roundrobin(members, {T1: 3, T2: 3}) == expected
    members["consumer5"] = members.pop(C4)
    expected["consumer5"] = expected.pop(C4)
    assert roundrobin(members, {T1: 3, T2: 3}) == expected


# -- sticky (AbstractStickyAssignorTest) ---------------------------------------


@pytest.mark.parametrize("assign", [sticky, cooperative], ids=["sticky", "cooperative"])
def test_sticky_fresh_groups(assign) -> None:
    # testMultipleConsumersMixedTopicSubscriptions (general builder)
    got = assign({C1: sub(T1), C2: sub(T1, T2), C3: sub(T1)}, {T1: 3, T2: 2})
    assert got == {C1: {T1: [0, 2]}, C2: {T2: [0, 1]}, C3: {T1: [1]}}
    # testTwoConsumersTwoTopicsSixPartitions (constrained builder)
    got = assign({C1: sub(T1, T2), C2: sub(T1, T2)}, {T1: 3, T2: 3})
    assert got == {C1: {T1: [0, 2], T2: [1]}, C2: {T1: [1], T2: [0, 2]}}


G = 1  # AbstractStickyAssignorTest.generationId


def test_sticky_consumer_owning_min_quota_expected_max_quota() -> None:
    members = {
        C1: sub(T1, T2, owned=[(T1, 0), (T2, 1)], generation=G),
        C2: sub(T1, T2, owned=[(T1, 1), (T2, 2)], generation=G),
    }
    expected = {C1: {T1: [0], T2: [0, 1]}, C2: {T1: [1], T2: [2]}}
    assert sticky(members, {T1: 2, T2: 3}) == expected
    assert cooperative(members, {T1: 2, T2: 3}) == expected


def test_sticky_max_quota_consumer_more_than_expected_max_capacity_members() -> None:
    # Two members own maxQuota (2) but only one may keep it. Kafka lets the
    # first in its hash-map order keep it (consumer2 in its test); muster
    # takes members in member-id order, so consumer1 keeps both. Equally
    # balanced and sticky: one partition moves either way.
    members = {
        C1: sub(T1, T2, owned=[(T1, 0), (T2, 0)], generation=G),
        C2: sub(T1, T2, owned=[(T1, 1), (T2, 1)], generation=G),
        C3: sub(T1, T2, generation=G),
    }
    assert sticky(members, {T1: 2, T2: 2}) == {
        C1: {T1: [0], T2: [0]},
        C2: {T1: [1]},
        C3: {T2: [1]},
    }
    # cooperative: topic2-1 moves from consumer2 to consumer3, so it is
    # revoked first and handed out next round
    first = cooperative(members, {T1: 2, T2: 2})
    assert first == {C1: {T1: [0], T2: [0]}, C2: {T1: [1]}, C3: {}}
    members = {m: sub(T1, T2, owned=first[m], generation=G + 1) for m in members}
    assert cooperative(members, {T1: 2, T2: 2}) == {
        C1: {T1: [0], T2: [0]},
        C2: {T1: [1]},
        C3: {T2: [1]},
    }


def test_sticky_all_consumers_are_under_min_quota() -> None:
    members = {
        C1: sub(T1, T2, owned=[(T1, 0)], generation=G),
        C2: sub(T1, T2, owned=[(T1, 1)], generation=G),
        C3: sub(T1, T2, generation=G),
    }
    assert sticky(members, {T1: 2, T2: 3}) == {
        C1: {T1: [0], T2: [1]},
        C2: {T1: [1], T2: [2]},
        C3: {T2: [0]},
    }


def test_sticky_add_remove_consumer_one_topic() -> None:
    got = sticky({C1: sub(T)}, {T: 3})
    assert got == {C1: {T: [0, 1, 2]}}
    members = {C1: sub(T, owned=got[C1], generation=G), C2: sub(T, generation=G)}
    got = sticky(members, {T: 3})
    assert got == {C1: {T: [0, 1]}, C2: {T: [2]}}
    got = sticky({C2: sub(T, owned=got[C2], generation=G)}, {T: 3})
    assert got == {C2: {T: [0, 1, 2]}}


def test_sticky_all_consumers_reach_expected_quota() -> None:
    members = {
        C1: sub(T, owned=[(T, 0), (T, 1)], generation=G),
        C2: sub(T, owned=[(T, 2)], generation=G),
        C3: sub(T, generation=G),
    }
    expected = {C1: {T: [0, 1]}, C2: {T: [2]}, C3: {T: [3]}}
    assert sticky(members, {T: 4}) == expected
    assert cooperative(members, {T: 4}) == expected


@pytest.mark.parametrize("stale", [G + 8, -1], ids=["older", "none"])
def test_sticky_owned_partitions_of_stale_generation_are_invalidated(stale: int) -> None:
    # testOwnedPartitionsAreInvalidatedForConsumerWithStaleGeneration / ...NoGeneration
    owned = [(T, 0), (T, 2), (T2, 1)]
    members = {
        C1: sub(T, T2, owned=owned, generation=10),
        C2: sub(T, T2, owned=owned, generation=stale if stale < 0 else 9),
    }
    expected = {C1: {T: [0, 2], T2: [1]}, C2: {T: [1], T2: [0, 2]}}
    assert sticky(members, {T: 3, T2: 3}) == expected
    # the stale claims lose: consumer1 keeps its partitions in the same round
    assert cooperative(members, {T: 3, T2: 3}) == expected


def test_sticky_partitions_go_to_the_highest_generation() -> None:
    # testEnsurePartitionsAssignedToHighestGeneration
    members = {
        C1: sub(T, T2, T3, owned=[(T, 0), (T2, 0), (T3, 0)], generation=10),
        C2: sub(T, T2, T3, owned=[(T, 1), (T2, 1), (T3, 1)], generation=9),
        C3: sub(T, T2, T3, owned=[(T2, 1), (T3, 0), (T3, 2)], generation=8),
    }
    assert sticky(members, {T: 3, T2: 3, T3: 3}) == {
        C1: {T: [0], T2: [0], T3: [0]},
        C2: {T: [1], T2: [1], T3: [1]},
        C3: {T: [2], T2: [2], T3: [2]},
    }


def test_sticky_no_reassignment_on_current_members() -> None:
    all4 = (T, T1, T2, T3)
    members = {
        C1: sub(*all4, generation=-1),
        C2: sub(*all4, owned=[(T, 0), (T2, 0), (T1, 0)], generation=9),
        C3: sub(*all4, owned=[(T3, 2), (T2, 2), (T1, 1)], generation=8),
        C4: sub(*all4, owned=[(T3, 1), (T, 1), (T, 2)], generation=7),
    }
    got = sticky(members, {T: 3, T1: 3, T2: 3, T3: 3})
    assert got[C1] == {T1: [2], T2: [1], T3: [0]}
    for m in (C2, C3, C4):
        owned = {(t, p) for t, p in members[m].owned}
        assert {(t, p) for t, ps in got[m].items() for p in ps} == owned


def test_sticky_owned_partitions_with_multiple_generations() -> None:
    members = {
        C1: sub(T, T2, owned=[(T, 0), (T2, 1), (T, 1)], generation=10),
        C2: sub(T, T2, owned=[(T, 0), (T2, 1), (T2, 2)], generation=8),
    }
    assert sticky(members, {T: 3, T2: 3}) == {
        C1: {T: [0, 1], T2: [1]},
        C2: {T: [2], T2: [0, 2]},
    }


def test_sticky_partition_claimed_twice_in_one_generation() -> None:
    # testPartitionsTransferringOwnershipIncludeThePartitionClaimedByMultiple...
    members = {
        C1: sub(T, owned=[(T, 0), (T, 1)], generation=G),
        C2: sub(T, owned=[(T, 0), (T, 2)], generation=G),
        C3: sub(T, generation=G),
    }
    assert sticky(members, {T: 3}) == {C1: {T: [1]}, C2: {T: [2]}, C3: {T: [0]}}
    # CooperativeStickyAssignorTest: topic-0 counts as owned until both revoke it
    assert cooperative(members, {T: 3}) == {C1: {T: [1]}, C2: {T: [2]}, C3: {}}
    assert cooperative(members, {T: 4}) == {C1: {T: [1, 3]}, C2: {T: [2]}, C3: {}}


def test_sticky_general_case_balances_along_chains() -> None:
    # Unequal subscriptions. Sizes 3/2/1 leave no single move that helps
    # (Kafka's general builder stops there); the chain consumer1 -> consumer2
    # -> consumer3 evens them out at one kept partition moved.
    members = {
        C1: sub(T1, owned=[(T1, 0), (T1, 1), (T1, 2)], generation=3),
        C2: sub(T1, T2, owned=[(T2, 0)], generation=3),
        C3: sub(T2, generation=3),
    }
    got = sticky(members, {T1: 3, T2: 3})
    assert got == {C1: {T1: [1, 2]}, C2: {T1: [0], T2: [0]}, C3: {T2: [1, 2]}}
    # cooperative holds topic1-0 back until consumer1 has revoked it
    assert cooperative(members, {T1: 3, T2: 3}) == {
        C1: {T1: [1, 2]},
        C2: {T2: [0]},
        C3: {T2: [1, 2]},
    }
    rejoin = {
        C1: sub(T1, owned=[(T1, 1), (T1, 2)], generation=4),
        C2: sub(T1, T2, owned=[(T2, 0)], generation=4),
        C3: sub(T2, owned=[(T2, 1), (T2, 2)], generation=4),
    }
    assert cooperative(rejoin, {T1: 3, T2: 3}) == got


def test_sticky_cooperative_revokes_only_what_moves() -> None:
    # a third member joins: each old member gives up exactly what moves
    members = {
        C1: sub(T, owned=[(T, 0), (T, 1), (T, 2)], generation=5),
        C2: sub(T, owned=[(T, 3), (T, 4), (T, 5)], generation=5),
        C3: sub(T),
    }
    target = sticky(members, {T: 6})
    assert target == {C1: {T: [0, 1]}, C2: {T: [3, 4]}, C3: {T: [2, 5]}}
    assert cooperative(members, {T: 6}) == {C1: {T: [0, 1]}, C2: {T: [3, 4]}, C3: {}}
    members = {
        C1: sub(T, owned=[(T, 0), (T, 1)], generation=6),
        C2: sub(T, owned=[(T, 3), (T, 4)], generation=6),
        C3: sub(T, generation=6),
    }
    assert cooperative(members, {T: 6}) == target


def test_sticky_drops_owned_partitions_of_deleted_or_unsubscribed_topics() -> None:
    # testAssignmentUpdatedForDeletedTopic / testNewSubscription
    members = {C1: sub(T1, owned=[(T2, 0), (T1, 0), (T1, 7)], generation=2)}
    assert sticky(members, {T1: 2}) == {C1: {T1: [0, 1]}}
    assert sticky(members, {T1: 2, T2: 1}) == {C1: {T1: [0, 1]}}
    # cooperative: the member still owns topic2-0 until it revokes it; it is
    # not given to anyone else meanwhile (nobody else subscribes anyway)
    assert cooperative(members, {T1: 2, T2: 1}) == {C1: {T1: [0, 1]}}
