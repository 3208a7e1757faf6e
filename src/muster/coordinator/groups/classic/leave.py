"""LeaveGroup (spec §6, KIP-345 batch leave): members, pending members and
static members (by instance id) leave; the group rebalances without them."""

from __future__ import annotations

from muster.coordinator import errors as E
from muster.coordinator import events as ev
from muster.coordinator.context import Effects, pending_key
from muster.coordinator.groups.classic.group import ClassicGroup
from muster.coordinator.groups.classic.rebalance import (
    maybe_complete_join,
    remove_member_and_update_group,
)
from muster.coordinator.groups.classic.state import GroupState as S
from muster.coordinator.groups.store import GroupStore
from muster.coordinator.requests import LeaveGroup
from muster.coordinator.responses import LeaveGroupMemberResponse, LeaveGroupResponse


def handle_leave_group(store: GroupStore, fx: Effects, rid: int, req: LeaveGroup) -> None:
    group = store.get(req.group_id)
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
                _leave(store, group, fx, current, reason)
                error = E.NONE
        elif mid in group.pending_members:
            group.pending_members.discard(mid)
            # its admission timer goes with it (the simulation found it left behind)
            fx.cancel(pending_key(group.group_id, mid))
            fx.emit(ev.MemberRemoved(group.group_id, mid, None, ev.MEMBER_LEFT, reason, fx.now))
            maybe_complete_join(store, group, fx)
            error = E.NONE
        else:
            error = group.validate_current_member(mid, instance) or E.NONE
            if error == E.NONE:
                _leave(store, group, fx, mid, reason)
        results.append(LeaveGroupMemberResponse(mid, instance, error))
    fx.reply(rid, LeaveGroupResponse(E.NONE, tuple(results)))


def _leave(
    store: GroupStore, group: ClassicGroup, fx: Effects, member_id: str, reason: str
) -> None:
    member = group.members[member_id]
    remove_member_and_update_group(
        store, group, member, fx, ev.MEMBER_LEFT, reason, f"member {member_id} left: {reason}"
    )
