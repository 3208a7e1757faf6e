"""The classic groups' timers, by kind (the `TimerKey.kind` of `context.py`'s
key builders): what runs when each comes due. A timer of a group that is
gone meanwhile does nothing."""

from __future__ import annotations

from collections.abc import Callable

from muster.coordinator.context import Effects, TimerKey
from muster.coordinator.groups.classic import liveness, rebalance
from muster.coordinator.groups.store import GroupStore

TimerHandler = Callable[[GroupStore, Effects, TimerKey], None]


def _heartbeat(store: GroupStore, fx: Effects, key: TimerKey) -> None:
    group = store.get(key.group_id)
    if group is not None:
        liveness.on_heartbeat_timer(store, group, key.member_id, fx)


def _pending(store: GroupStore, fx: Effects, key: TimerKey) -> None:
    group = store.get(key.group_id)
    if group is not None:
        liveness.on_pending_timer(store, group, key.member_id, fx)


def _join(store: GroupStore, fx: Effects, key: TimerKey) -> None:
    group = store.get(key.group_id)
    if group is not None:
        rebalance.on_join_timer(store, group, fx)


def _sync(store: GroupStore, fx: Effects, key: TimerKey) -> None:
    group = store.get(key.group_id)
    if group is not None:
        liveness.on_sync_timer(store, group, fx)


TIMERS: dict[str, TimerHandler] = {
    "heartbeat": _heartbeat,  # a member's session ran out
    "pending": _pending,  # a member id was handed out and never joined with it
    "join": _join,  # the join phase's deadline
    "sync": _sync,  # members that joined and did not send SyncGroup in time
}
