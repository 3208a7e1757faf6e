"""A member's step toward the target (the cases of Kafka's CurrentAssignmentBuilderTest)."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from muster.coordinator.groups.modern.member import ConsumerMember, MemberState, partitions
from muster.coordinator.groups.modern.reconcile import FencedMemberEpoch, reconcile

T1 = uuid.UUID(int=1)
T2 = uuid.UUID(int=2)


def free(_topic: uuid.UUID, _partition: int) -> int:
    return -1


def held(_topic: uuid.UUID, _partition: int) -> int:
    return 10


def member(state: MemberState, epoch: int, assigned: dict, revoking: dict | None = None):
    return ConsumerMember(
        "m",
        member_epoch=epoch,
        previous_member_epoch=epoch,
        state=state,
        assigned=partitions(assigned),
        pending_revocation=partitions(revoking or {}),
    )


def test_stable_member_at_the_target_epoch_stays_the_same_object() -> None:
    m = member(MemberState.STABLE, 10, {T1: [1, 2]})
    assert reconcile(m, 10, partitions({T1: [1, 2, 3]}), free, None) is m


def test_stable_to_stable_with_new_free_partitions() -> None:
    m = member(MemberState.STABLE, 10, {T1: [1, 2, 3], T2: [4, 5, 6]})
    got = reconcile(m, 11, partitions({T1: [1, 2, 3, 4], T2: [4, 5, 6, 7]}), free, None)
    assert (got.state, got.member_epoch, got.previous_member_epoch) == (MemberState.STABLE, 11, 10)
    assert got.assigned == partitions({T1: [1, 2, 3, 4], T2: [4, 5, 6, 7]})


def test_stable_to_unrevoked_keeps_the_epoch_and_lists_what_to_give_up() -> None:
    m = member(MemberState.STABLE, 10, {T1: [1, 2, 3], T2: [4, 5, 6]})
    got = reconcile(m, 11, partitions({T1: [2, 3, 4], T2: [5, 6, 7]}), free, None)
    assert got.state is MemberState.UNREVOKED_PARTITIONS
    assert (got.member_epoch, got.previous_member_epoch) == (10, 10)
    assert got.assigned == partitions({T1: [2, 3], T2: [5, 6]})
    assert got.pending_revocation == partitions({T1: [1], T2: [4]})


def test_stable_to_unreleased_when_new_partitions_are_still_held() -> None:
    m = member(MemberState.STABLE, 10, {T1: [1, 2, 3], T2: [4, 5, 6]})
    got = reconcile(m, 11, partitions({T1: [1, 2, 3, 4], T2: [4, 5, 6, 7]}), held, None)
    assert (got.state, got.member_epoch) == (MemberState.UNRELEASED_PARTITIONS, 11)
    assert got.assigned == partitions({T1: [1, 2, 3], T2: [4, 5, 6]})


def test_revocation_already_done_by_the_client_skips_unrevoked() -> None:
    m = member(MemberState.STABLE, 10, {T1: [1, 2, 3], T2: [4, 5, 6]})
    target = partitions({T1: [1, 2, 3], T2: [4, 5, 7]})
    got = reconcile(m, 11, target, lambda t, _p: 10 if t == T2 else -1, [])
    assert (got.state, got.member_epoch) == (MemberState.UNRELEASED_PARTITIONS, 11)
    assert got.assigned == partitions({T1: [1, 2, 3], T2: [4, 5]})


def test_unrevoked_waits_until_the_heartbeat_no_longer_reports_them() -> None:
    m = member(MemberState.UNREVOKED_PARTITIONS, 10, {T1: [2, 3], T2: [5, 6]}, {T1: [1], T2: [4]})
    target = partitions({T1: [3], T2: [6]})
    assert reconcile(m, 12, target, free, None) is m
    assert reconcile(m, 12, target, free, [(T1, [1, 2, 3]), (T2, [5, 6])]) is m
    assert reconcile(m, 12, target, free, [(T1, [2, 3]), (T2, [4, 5, 6])]) is m


def test_unrevoked_to_stable_once_revoked() -> None:
    m = member(MemberState.UNREVOKED_PARTITIONS, 10, {T1: [2, 3], T2: [5, 6]}, {T1: [1], T2: [4]})
    got = reconcile(m, 11, partitions({T1: [2, 3], T2: [5, 6]}), free, [(T1, [2, 3]), (T2, [5, 6])])
    assert (got.state, got.member_epoch, got.previous_member_epoch) == (MemberState.STABLE, 11, 10)
    assert got.pending_revocation == {}


def test_unrevoked_to_unrevoked_when_the_target_moved_again() -> None:
    m = member(MemberState.UNREVOKED_PARTITIONS, 10, {T1: [2, 3], T2: [5, 6]}, {T1: [1], T2: [4]})
    got = reconcile(m, 12, partitions({T1: [3], T2: [6]}), free, [(T1, [2, 3]), (T2, [5, 6])])
    assert (got.state, got.member_epoch, got.previous_member_epoch) == (
        MemberState.UNREVOKED_PARTITIONS,
        11,
        10,
    )
    assert got.assigned == partitions({T1: [3], T2: [6]})
    assert got.pending_revocation == partitions({T1: [2], T2: [5]})


def test_unreleased_to_stable_when_the_partitions_are_freed() -> None:
    m = member(MemberState.UNRELEASED_PARTITIONS, 11, {T1: [2, 3], T2: [5, 6]})
    target = partitions({T1: [2, 3, 4], T2: [5, 6, 7]})
    assert reconcile(m, 11, target, held, None) == m
    got = reconcile(m, 11, target, free, None)
    assert (got.state, got.member_epoch) == (MemberState.STABLE, 11)
    assert got.assigned == target


def test_unreleased_to_unrevoked_when_the_target_takes_something() -> None:
    m = member(MemberState.UNRELEASED_PARTITIONS, 11, {T1: [1, 2, 3], T2: [4, 5, 6]})
    got = reconcile(m, 12, partitions({T1: [2, 3], T2: [5, 6]}), free, None)
    assert (got.state, got.member_epoch) == (MemberState.UNREVOKED_PARTITIONS, 11)
    assert got.pending_revocation == partitions({T1: [1], T2: [4]})


def test_unknown_state_is_fenced_unless_the_member_owns_nothing() -> None:
    m = member(MemberState.UNKNOWN, 11, {T1: [1]})
    with pytest.raises(FencedMemberEpoch):
        reconcile(m, 12, partitions({T1: [1]}), free, None)
    with pytest.raises(FencedMemberEpoch):
        reconcile(m, 12, partitions({T1: [1]}), free, [(T1, [1])])
    got = reconcile(m, 12, partitions({T1: [1, 2]}), free, [])
    assert (got.state, got.member_epoch) == (MemberState.STABLE, 12)


def test_record_values_of_states_match_kafka() -> None:
    assert [s.value for s in MemberState] == [0, 1, 2, 127]
    assert MemberState.from_record(9) is MemberState.UNKNOWN


@settings(max_examples=300, deadline=None)
@given(
    current=st.sets(st.integers(0, 15)),
    target=st.sets(st.integers(0, 15)),
    taken=st.sets(st.integers(0, 15)),
)
def test_a_member_never_gets_a_partition_another_member_holds(
    current: set[int], target: set[int], taken: set[int]
) -> None:
    taken -= current  # what others hold; never what this member holds itself
    m = member(MemberState.STABLE, 5, {T1: current})
    got = reconcile(m, 6, partitions({T1: target}), lambda _t, p: 3 if p in taken else -1, [])
    mine = got.assigned.get(T1, frozenset())
    assert not mine & taken
    assert mine <= target | current
    if got.state is MemberState.STABLE:
        assert mine == frozenset(target) and got.member_epoch == 6
