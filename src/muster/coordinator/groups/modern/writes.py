"""How a consumer-group handler writes a record (applied at once, see the
README), how what it wrote is undone (a failed append, or a request that
ends in an error), and how it names its timers."""

from __future__ import annotations

from collections.abc import Mapping

from muster.coordinator.context import Effects, TimerKey
from muster.coordinator.groups.classic.group import ClassicGroup
from muster.coordinator.groups.modern.group import ConsumerGroup, apply, regex_record
from muster.coordinator.groups.store import GroupStore
from muster.records.modern_group_records import (
    ConsumerGroupMetadataKey,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupTargetAssignmentMetadataKey,
    consumer_group_record,
)


def session_key(group_id: str, member_id: str) -> TimerKey:
    return TimerKey("consumer-session", group_id, member_id)


def revocation_key(group_id: str, member_id: str) -> TimerKey:
    return TimerKey("consumer-revocation", group_id, member_id)


def join_timer(group_id: str, member_id: str) -> TimerKey:
    """A classic member told to rejoin must do so within its rebalance timeout."""
    return TimerKey("consumer-join", group_id, member_id)


def sync_timer(group_id: str, member_id: str) -> TimerKey:
    """A classic member that joined must send SyncGroup within its rebalance timeout."""
    return TimerKey("consumer-sync", group_id, member_id)


def write(store: GroupStore, fx: Effects, key: object, value: object | None) -> None:
    """Append one ConsumerGroup* record and apply it now, remembering the
    group as it was before this step (restored if the append fails)."""
    group_id: str = key.group_id  # type: ignore[attr-defined]
    if group_id not in fx.modern_undo:
        before = store.modern.get(group_id)
        fx.modern_undo[group_id] = None if before is None else before.copy()
    fx.record(consumer_group_record(key, value))
    apply(store.modern, key, value)


def revert(store: GroupStore, undo: Mapping[str, ConsumerGroup | ClassicGroup | None]) -> None:
    """Put the groups back as they were before a write: a consumer group as
    it was, or the classic group an upgrade (or a join of an empty classic
    group's id) replaced; a classic group a downgrade made goes."""
    for group_id, before in undo.items():
        if isinstance(before, ClassicGroup):
            store.modern.pop(group_id, None)
            store.groups[group_id] = before
        elif before is None:
            store.modern.pop(group_id, None)
        else:
            store.modern[group_id] = before.copy()
            classic = store.get(group_id)
            # a classic group made after the write (a member asked for its
            # id counts: its pending timer would outlive it) goes with it
            if classic is not None and (classic.members or classic.pending_members):
                store.remove(group_id)


def discard(store: GroupStore, fx: Effects) -> None:
    """A request answered with an error changes nothing, as in Kafka, whose
    handler throws before its records reach the log: its records, timer
    changes and events are dropped and the groups it applied records to are
    put back (the undo a failed append uses). `fx` must be the request's
    own (the shard gives each request a fresh one). Replies already sent
    stay: an upgrade that gets undone has answered the classic group's
    parked JoinGroups, and those members rejoin (Kafka completes them too)."""
    revert(store, fx.modern_undo)
    fx.modern_undo.clear()
    fx.records.clear()
    fx.timers.clear()
    fx.events.clear()


def tombstones(store: GroupStore, fx: Effects, group: ConsumerGroup) -> None:
    """Write an empty consumer group's tombstones (DeleteGroups, or a classic
    JoinGroup taking its id over): regexes, target and subscription metadata,
    then the group itself."""
    gid = group.group_id
    for regex in sorted(group.regexes):
        write(store, fx, *regex_record(gid, regex, None, fx.now))
    for key in (
        ConsumerGroupTargetAssignmentMetadataKey(gid),
        ConsumerGroupPartitionMetadataKey(gid),
        ConsumerGroupMetadataKey(gid),
    ):
        write(store, fx, key, None)
