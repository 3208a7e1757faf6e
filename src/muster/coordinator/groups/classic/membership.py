"""SyncGroup, Heartbeat, LeaveGroup and the liveness timers (spec §5, §6)."""

from __future__ import annotations

from muster.coordinator import errors as E
from muster.coordinator import events as ev
from muster.coordinator.context import Effects
from muster.coordinator.groups.classic.group import ClassicGroup
from muster.coordinator.groups.classic.rebalance import (
    maybe_complete_join,
    maybe_prepare_rebalance,
    prepare_rebalance,
    propagate_assignment,
    rebalance_completed,
    remove_member,
    remove_member_and_update_group,
    remove_pending_sync_member,
    reset_and_propagate_assignment_error,
    schedule_heartbeat,
    store_error_to_client,
    store_group,
)
from muster.coordinator.groups.classic.state import GroupState as S
from muster.coordinator.groups.store import GroupStore
from muster.coordinator.requests import Heartbeat, LeaveGroup, SyncGroup
from muster.coordinator.responses import (
    HeartbeatResponse,
    LeaveGroupMemberResponse,
    LeaveGroupResponse,
    SyncGroupResponse,
)

# ---- SyncGroup -------------------------------------------------------------


def handle_sync_group(env: GroupStore, fx: Effects, rid: int, req: SyncGroup) -> None:
    group = env.get(req.group_id)
    error = _sync_error(group, req)
    if error is not None:
        fx.reply(rid, SyncGroupResponse(error))
        return
    assert group is not None
    member = group.members[req.member_id]
    if group.is_(S.STABLE):
        remove_pending_sync_member(group, member.member_id, fx)
        fx.reply(
            rid,
            SyncGroupResponse(E.NONE, group.protocol_type, group.protocol_name, member.assignment),
        )
        schedule_heartbeat(group, member, fx)
        return
    # CompletingRebalance: park until the leader's assignment is durable
    if member.awaiting_sync is not None and member.awaiting_sync != rid:
        fx.reply(member.awaiting_sync, SyncGroupResponse(E.REBALANCE_IN_PROGRESS))
    member.awaiting_sync = rid
    remove_pending_sync_member(group, member.member_id, fx)
    if not group.is_leader(member.member_id):
        return
    if group.storing_generation == group.generation:
        return  # the leader retried: one store per generation, its answer covers both
    given = dict(req.assignments)
    assignment = {mid: given.get(mid, b"") for mid in group.members}
    generation = group.generation

    def stored(error: int, fx2: Effects) -> None:
        if group.storing_generation == generation:
            group.storing_generation = None
        if env.get(group.group_id) is not group:
            return
        if not (group.is_(S.COMPLETING_REBALANCE) and group.generation == generation):
            return
        if error != E.NONE:
            fx2.emit(ev.GroupStoreFailed(group.group_id, generation, error, fx2.now))
            reset_and_propagate_assignment_error(group, fx2, store_error_to_client(error))
            maybe_prepare_rebalance(
                env,
                group,
                fx2,
                ev.GROUP_STORE_FAILED,
                member.member_id,
                None,
                f"storing generation {generation} failed: {error}",
            )
            return
        for m in group.members.values():
            m.assignment = assignment.get(m.member_id, b"")
        propagate_assignment(group, fx2, E.NONE)
        group.transition_to(S.STABLE, ev.SYNC_COMPLETED, fx2)
        rebalance_completed(group, fx2)

    group.storing_generation = generation
    store_group(group, fx, assignment, stored)


def _sync_error(group: ClassicGroup | None, req: SyncGroup) -> int | None:
    if group is None:
        return E.UNKNOWN_MEMBER_ID
    if group.is_(S.DEAD):
        return E.COORDINATOR_NOT_AVAILABLE
    error = group.validate_current_member(req.member_id, req.group_instance_id)
    if error is not None:
        return error
    if req.generation_id != group.generation:
        return E.ILLEGAL_GENERATION
    if req.protocol_type is not None and req.protocol_type != group.protocol_type:
        return E.INCONSISTENT_GROUP_PROTOCOL
    if req.protocol_name is not None and req.protocol_name != group.protocol_name:
        return E.INCONSISTENT_GROUP_PROTOCOL
    if group.is_(S.EMPTY):
        return E.UNKNOWN_MEMBER_ID
    if group.is_(S.PREPARING_REBALANCE):
        return E.REBALANCE_IN_PROGRESS
    return None


# ---- Heartbeat -------------------------------------------------------------


def handle_heartbeat(env: GroupStore, fx: Effects, rid: int, req: Heartbeat) -> None:
    group = env.get(req.group_id)
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
    elif group.is_(S.EMPTY):
        error = E.UNKNOWN_MEMBER_ID
    else:
        schedule_heartbeat(group, group.members[req.member_id], fx)
        error = E.REBALANCE_IN_PROGRESS if group.is_(S.PREPARING_REBALANCE) else E.NONE
    fx.reply(rid, HeartbeatResponse(error))


# ---- LeaveGroup ------------------------------------------------------------


def handle_leave_group(env: GroupStore, fx: Effects, rid: int, req: LeaveGroup) -> None:
    group = env.get(req.group_id)
    if group is None:
        fx.reply(
            rid,
            LeaveGroupResponse(
                E.NONE,
                tuple(
                    LeaveGroupMemberResponse(m.member_id, m.group_instance_id, E.UNKNOWN_MEMBER_ID)
                    for m in req.members
                ),
            ),
        )
        return
    if group.is_(S.DEAD):
        fx.reply(rid, LeaveGroupResponse(E.COORDINATOR_NOT_AVAILABLE))
        return
    results = []
    for leaving in req.members:
        mid, instance = leaving.member_id, leaving.group_instance_id
        reason = leaving.reason if leaving.reason is not None else "not provided"
        if mid == "":
            current = group.static_member_id(instance)
            if current is None:
                error = E.UNKNOWN_MEMBER_ID
            else:
                _leave(env, group, fx, current, reason)
                error = E.NONE
        elif mid in group.pending_members:
            group.pending_members.discard(mid)
            fx.emit(ev.MemberRemoved(group.group_id, mid, None, ev.MEMBER_LEFT, reason, fx.now))
            maybe_complete_join(env, group, fx)
            error = E.NONE
        else:
            error = group.validate_current_member(mid, instance) or E.NONE
            if error == E.NONE:
                _leave(env, group, fx, mid, reason)
        results.append(LeaveGroupMemberResponse(mid, instance, error))
    fx.reply(rid, LeaveGroupResponse(E.NONE, tuple(results)))


def _leave(env: GroupStore, group: ClassicGroup, fx: Effects, member_id: str, reason: str) -> None:
    member = group.members[member_id]
    remove_member_and_update_group(
        env, group, member, fx, ev.MEMBER_LEFT, reason, f"member {member_id} left: {reason}"
    )


# ---- timers ----------------------------------------------------------------


def on_heartbeat_timer(env: GroupStore, group: ClassicGroup, member_id: str, fx: Effects) -> None:
    member = group.members.get(member_id)
    if member is None or group.is_(S.DEAD):
        return
    if not member.is_new and (member.awaiting_join is not None or member.awaiting_sync is not None):
        return  # waiting on the coordinator counts as alive; re-armed when answered
    cause = ev.NEW_MEMBER_JOIN_TIMEOUT if member.is_new else ev.SESSION_EXPIRED
    remove_member_and_update_group(
        env, group, member, fx, cause, None, f"member {member_id} {cause.replace('_', ' ')}"
    )


def on_pending_timer(env: GroupStore, group: ClassicGroup, member_id: str, fx: Effects) -> None:
    if member_id not in group.pending_members:
        return
    group.pending_members.discard(member_id)
    fx.emit(
        ev.MemberRemoved(group.group_id, member_id, None, ev.PENDING_MEMBER_EXPIRED, None, fx.now)
    )
    maybe_complete_join(env, group, fx)


def on_sync_timer(env: GroupStore, group: ClassicGroup, fx: Effects) -> None:
    if not group.is_(S.COMPLETING_REBALANCE, S.STABLE) or not group.pending_sync_members:
        return
    laggards = [group.members[m] for m in list(group.pending_sync_members) if m in group.members]
    for member in laggards:
        remove_member(group, member, fx, ev.SYNC_TIMEOUT, None)
    prepare_rebalance(
        env,
        group,
        fx,
        ev.SYNC_TIMEOUT,
        "",
        None,
        "removed members that did not send SyncGroup in time: "
        + ", ".join(m.member_id for m in laggards),
    )
