"""One member's step toward the group's target assignment (Kafka's CurrentAssignmentBuilder).

This is what lets a consumer group rebalance without a global barrier: each
member moves on its own heartbeats. A member first gives up (revokes) what the
target takes from it, staying at its epoch until its heartbeat no longer
reports those partitions; then it moves to the target epoch and gets every
target partition no other member still holds; the rest it gets on later
heartbeats, once their previous owners have let them go. A member whose
assignment does not change only has its epoch bumped, and keeps consuming.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from muster.coordinator.groups.modern.member import (
    ConsumerMember,
    MemberState,
    Partitions,
    TopicId,
)

# (topic id, partition) -> the epoch of the member holding it, or -1 when free
PartitionEpoch = Callable[[TopicId, int], int]
# what the member's heartbeat says it owns; None when the heartbeat did not say
Owned = Iterable[tuple[TopicId, Iterable[int]]] | None


class FencedMemberEpoch(Exception):
    """The member must drop every partition and join again (FENCED_MEMBER_EPOCH)."""


def reconcile(
    member: ConsumerMember,
    target_epoch: int,
    target: Partitions,
    partition_epoch: PartitionEpoch,
    owned: Owned,
) -> ConsumerMember:
    """The member after this heartbeat: the same object when it cannot move yet."""
    owned_sets = None if owned is None else [(t, frozenset(ps)) for t, ps in owned]
    state = member.state
    if state is MemberState.STABLE:
        if member.member_epoch == target_epoch:
            return member
        return _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned_sets)
    if state is MemberState.UNREVOKED_PARTITIONS:
        if _still_owns(owned_sets, member.pending_revocation):
            return member
        return _next(
            member, member.member_epoch + 1, target_epoch, target, partition_epoch, owned_sets
        )
    if state is MemberState.UNRELEASED_PARTITIONS:
        return _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned_sets)
    # UNKNOWN: written by a newer broker; start the member over from nothing
    if owned_sets is None or any(parts for _t, parts in owned_sets):
        raise FencedMemberEpoch(f"member {member.member_id} is in an unknown state; it must rejoin")
    return _next(member, target_epoch, target_epoch, target, partition_epoch, owned_sets)


def _still_owns(owned: list[tuple[TopicId, frozenset[int]]] | None, revoking: Partitions) -> bool:
    if owned is None:  # not reported: assume nothing was given up yet
        return True
    return any(parts & revoking.get(topic, frozenset()) for topic, parts in owned)


def _next(
    member: ConsumerMember,
    epoch: int,
    target_epoch: int,
    target: Partitions,
    partition_epoch: PartitionEpoch,
    owned: list[tuple[TopicId, frozenset[int]]] | None,
) -> ConsumerMember:
    current = member.assigned
    kept: dict[TopicId, frozenset[int]] = {}
    revoking: dict[TopicId, frozenset[int]] = {}
    adding: dict[TopicId, frozenset[int]] = {}
    unreleased = False
    for topic in target.keys() | current.keys():
        wanted = target.get(topic, frozenset())
        had = current.get(topic, frozenset())
        stays = had & wanted
        free = set()
        for partition in wanted - stays:
            if partition_epoch(topic, partition) == -1:
                free.add(partition)
            else:
                unreleased = True  # another member has not let it go yet
        if stays:
            kept[topic] = stays
        if had - stays:
            revoking[topic] = had - stays
        if free:
            adding[topic] = frozenset(free)
    if revoking and _still_owns(owned, revoking):
        # stay at this epoch until the member reports the partitions gone
        return member.with_epoch(
            epoch,
            state=MemberState.UNREVOKED_PARTITIONS,
            assigned=kept,
            pending_revocation=revoking,
        )
    for topic, parts in adding.items():
        kept[topic] = kept.get(topic, frozenset()) | parts
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return member.with_epoch(target_epoch, state=state, assigned=kept, pending_revocation={})
