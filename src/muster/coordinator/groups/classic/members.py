"""What happens to one member of a classic group, whatever the request: its
session timer, answering its parked JoinGroup/SyncGroup, taking it out."""

from __future__ import annotations

from muster.coordinator import errors as E
from muster.coordinator import events as ev
from muster.coordinator.context import Effects, heartbeat_key, sync_key
from muster.coordinator.groups.classic.group import ClassicGroup, Member
from muster.coordinator.responses import JoinGroupResponse, SyncGroupResponse


def schedule_heartbeat(group: ClassicGroup, member: Member, fx: Effects) -> None:
    fx.schedule(heartbeat_key(group.group_id, member.member_id), fx.now + member.session_timeout_ms)


def propagate_assignment(group: ClassicGroup, fx: Effects, error: int) -> None:
    """Answer every parked SyncGroup: each member's assignment, or `error`."""
    ok = error == E.NONE
    for member in group.members.values():
        if member.awaiting_sync is not None:
            fx.reply(
                member.awaiting_sync,
                SyncGroupResponse(
                    error,
                    group.protocol_type if ok else None,
                    group.protocol_name if ok else None,
                    member.assignment,
                ),
            )
            member.awaiting_sync = None
            schedule_heartbeat(group, member, fx)


def reset_and_propagate_assignment_error(group: ClassicGroup, fx: Effects, error: int) -> None:
    for member in group.members.values():
        member.assignment = b""
    propagate_assignment(group, fx, error)


def remove_pending_sync_member(group: ClassicGroup, member_id: str, fx: Effects) -> None:
    if member_id in group.pending_sync_members:
        group.pending_sync_members.discard(member_id)
        if not group.pending_sync_members:
            fx.cancel(sync_key(group.group_id))


def remove_member(
    group: ClassicGroup, member: Member, fx: Effects, cause: str, reason: str | None
) -> None:
    """Take the member out (answering its parked requests) without any rebalance."""
    if member.awaiting_join is not None:
        fx.reply(member.awaiting_join, JoinGroupResponse(E.UNKNOWN_MEMBER_ID))
        member.awaiting_join = None
    if member.awaiting_sync is not None:
        fx.reply(member.awaiting_sync, SyncGroupResponse(E.UNKNOWN_MEMBER_ID))
        member.awaiting_sync = None
    had_pending_sync = bool(group.pending_sync_members)
    group.remove(member.member_id)
    if had_pending_sync and not group.pending_sync_members:
        fx.cancel(sync_key(group.group_id))
    fx.cancel(heartbeat_key(group.group_id, member.member_id))
    fx.emit(
        ev.MemberRemoved(
            group.group_id, member.member_id, member.group_instance_id, cause, reason, fx.now
        )
    )
