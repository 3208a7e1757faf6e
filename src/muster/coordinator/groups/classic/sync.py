"""SyncGroup (spec §5): the leader's assignment is stored, then every member
gets its part. What a SyncGroup gets depends on the group's state; the table
`_SYNC` says it, one function per state."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from muster.coordinator import errors as E
from muster.coordinator import events as ev
from muster.coordinator.context import Effects
from muster.coordinator.groups.classic.group import ClassicGroup, Member
from muster.coordinator.groups.classic.members import (
    propagate_assignment,
    remove_pending_sync_member,
    reset_and_propagate_assignment_error,
    schedule_heartbeat,
)
from muster.coordinator.groups.classic.persist import store_error_to_client, store_group
from muster.coordinator.groups.classic.rebalance import (
    maybe_prepare_rebalance,
    rebalance_completed,
)
from muster.coordinator.groups.classic.state import GroupState as S
from muster.coordinator.groups.store import GroupStore
from muster.coordinator.requests import SyncGroup
from muster.coordinator.responses import SyncGroupResponse


def handle_sync_group(store: GroupStore, fx: Effects, rid: int, req: SyncGroup) -> None:
    group = store.get(req.group_id)
    error = _sync_error(group, req)
    if error is not None:
        fx.reply(rid, SyncGroupResponse(error))
        return
    assert group is not None
    _SYNC[group.state](store, group, fx, rid, req, group.members[req.member_id])


def _sync_error(group: ClassicGroup | None, req: SyncGroup) -> int | None:
    """Errors whatever the state: unknown group or member, wrong generation or protocol."""
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
    return None


# ---- SyncGroup per group state -------------------------------------------------

SyncInState = Callable[[GroupStore, ClassicGroup, Effects, int, SyncGroup, Member], None]


def _reject(error: int) -> SyncInState:
    def reject(
        store: GroupStore, group: ClassicGroup, fx: Effects, rid: int, req: SyncGroup, m: Member
    ) -> None:
        fx.reply(rid, SyncGroupResponse(error))

    return reject


def _sync_while_stable(
    store: GroupStore, group: ClassicGroup, fx: Effects, rid: int, req: SyncGroup, member: Member
) -> None:
    """The assignment is settled: the member gets its part at once."""
    remove_pending_sync_member(group, member.member_id, fx)
    fx.reply(
        rid,
        SyncGroupResponse(E.NONE, group.protocol_type, group.protocol_name, member.assignment),
    )
    schedule_heartbeat(group, member, fx)


def _sync_while_completing(
    store: GroupStore, group: ClassicGroup, fx: Effects, rid: int, req: SyncGroup, member: Member
) -> None:
    """Parked until the leader's assignment is durable; the leader's SyncGroup
    stores it (once per generation)."""
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
    group.storing_generation = group.generation
    store_group(
        group,
        fx,
        assignment,
        partial(_assignment_stored, store, group, member.member_id, group.generation, assignment),
    )


# Dead groups never get here (COORDINATOR_NOT_AVAILABLE above)
_SYNC: dict[S, SyncInState] = {
    S.EMPTY: _reject(E.UNKNOWN_MEMBER_ID),
    S.PREPARING_REBALANCE: _reject(E.REBALANCE_IN_PROGRESS),
    S.COMPLETING_REBALANCE: _sync_while_completing,
    S.STABLE: _sync_while_stable,
}


def _assignment_stored(
    store: GroupStore,
    group: ClassicGroup,
    leader_id: str,
    generation: int,
    assignment: dict[str, bytes],
    error: int,
    fx: Effects,
) -> None:
    """The leader's assignment is durable: members get it and the group is
    Stable. Failed: everyone is told to rejoin and a rebalance starts."""
    if group.storing_generation == generation:
        group.storing_generation = None
    if store.get(group.group_id) is not group:
        return
    if not (group.is_(S.COMPLETING_REBALANCE) and group.generation == generation):
        return
    if error != E.NONE:
        fx.emit(ev.GroupStoreFailed(group.group_id, generation, error, fx.now))
        reset_and_propagate_assignment_error(group, fx, store_error_to_client(error))
        maybe_prepare_rebalance(
            store,
            group,
            fx,
            ev.GROUP_STORE_FAILED,
            leader_id,
            None,
            f"storing generation {generation} failed: {error}",
        )
        return
    for m in group.members.values():
        m.assignment = assignment.get(m.member_id, b"")
    propagate_assignment(group, fx, E.NONE)
    group.transition_to(S.STABLE, ev.SYNC_COMPLETED, fx)
    rebalance_completed(group, fx)
