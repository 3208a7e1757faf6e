"""Heartbeat and the liveness timers (spec §6): a member's session, a
pending member's wait for its second JoinGroup, the wait for SyncGroups."""

from __future__ import annotations

from muster.coordinator import errors as E
from muster.coordinator import events as ev
from muster.coordinator.context import Effects
from muster.coordinator.groups.classic.group import ClassicGroup
from muster.coordinator.groups.classic.members import remove_member, schedule_heartbeat
from muster.coordinator.groups.classic.rebalance import (
    maybe_complete_join,
    prepare_rebalance,
    remove_member_and_update_group,
)
from muster.coordinator.groups.classic.state import GroupState as S
from muster.coordinator.groups.store import GroupStore
from muster.coordinator.requests import Heartbeat
from muster.coordinator.responses import HeartbeatResponse

# What a current member's Heartbeat gets per group state (Dead: answered
# COORDINATOR_NOT_AVAILABLE before), and whether it counts as alive
_HEARTBEAT: dict[S, tuple[int, bool]] = {
    S.EMPTY: (E.UNKNOWN_MEMBER_ID, False),
    S.PREPARING_REBALANCE: (E.REBALANCE_IN_PROGRESS, True),  # rejoin, please
    S.COMPLETING_REBALANCE: (E.NONE, True),
    S.STABLE: (E.NONE, True),
}


def handle_heartbeat(store: GroupStore, fx: Effects, rid: int, req: Heartbeat) -> None:
    group = store.get(req.group_id)
    if group is None:
        error = E.UNKNOWN_MEMBER_ID
    elif group.is_(S.DEAD):
        error = E.COORDINATOR_NOT_AVAILABLE
    elif (
        invalid := group.validate_current_member(req.member_id, req.group_instance_id)
    ) is not None:
        error = invalid
    elif req.generation_id != group.generation:
        error = E.ILLEGAL_GENERATION
    else:
        error, alive = _HEARTBEAT[group.state]
        if alive:
            schedule_heartbeat(group, group.members[req.member_id], fx)
    fx.reply(rid, HeartbeatResponse(error))


# ---- timers ----------------------------------------------------------------


def on_heartbeat_timer(store: GroupStore, group: ClassicGroup, member_id: str, fx: Effects) -> None:
    member = group.members.get(member_id)
    if member is None or group.is_(S.DEAD):
        return
    if not member.is_new and (member.awaiting_join is not None or member.awaiting_sync is not None):
        return  # waiting on the coordinator counts as alive; re-armed when answered
    cause = ev.NEW_MEMBER_JOIN_TIMEOUT if member.is_new else ev.SESSION_EXPIRED
    remove_member_and_update_group(
        store, group, member, fx, cause, None, f"member {member_id} {cause.replace('_', ' ')}"
    )


def on_pending_timer(store: GroupStore, group: ClassicGroup, member_id: str, fx: Effects) -> None:
    if member_id not in group.pending_members:
        return
    group.pending_members.discard(member_id)
    fx.emit(
        ev.MemberRemoved(group.group_id, member_id, None, ev.PENDING_MEMBER_EXPIRED, None, fx.now)
    )
    maybe_complete_join(store, group, fx)


def on_sync_timer(store: GroupStore, group: ClassicGroup, fx: Effects) -> None:
    if not group.is_(S.COMPLETING_REBALANCE, S.STABLE) or not group.pending_sync_members:
        return
    laggards = [group.members[m] for m in list(group.pending_sync_members) if m in group.members]
    for member in laggards:
        remove_member(group, member, fx, ev.SYNC_TIMEOUT, None)
    prepare_rebalance(
        store,
        group,
        fx,
        ev.SYNC_TIMEOUT,
        "",
        None,
        "removed members that did not send SyncGroup in time: "
        + ", ".join(m.member_id for m in laggards),
    )
