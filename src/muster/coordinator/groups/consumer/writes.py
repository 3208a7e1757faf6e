"""How a consumer-group handler writes a record (applied at once, see the
README) and names its timers."""

from __future__ import annotations

from muster.coordinator.context import Effects, TimerKey
from muster.coordinator.groups.consumer.group import apply
from muster.coordinator.groups.store import GroupStore
from muster.records.consumer_group_records import consumer_group_record


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
    if group_id not in fx.undo:
        before = store.consumer.get(group_id)
        fx.undo[group_id] = None if before is None else before.copy()
    fx.record(consumer_group_record(key, value))
    apply(store.consumer, key, value)
