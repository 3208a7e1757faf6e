"""JoinGroup (spec §3, §7): new and known members, pending members, static
members, admission by group.max.size.

What a known member's JoinGroup does depends on the group's state; the table
`_KNOWN_MEMBER_JOIN` says it, one function per state."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from muster.coordinator import errors as E
from muster.coordinator import events as ev
from muster.coordinator.context import Effects, heartbeat_key, pending_key
from muster.coordinator.groups.classic.group import ClassicGroup, Member
from muster.coordinator.groups.classic.members import remove_member, schedule_heartbeat
from muster.coordinator.groups.classic.persist import store_error_to_client, store_group
from muster.coordinator.groups.classic.rebalance import (
    join_answer,
    maybe_complete_join,
    maybe_prepare_rebalance,
    prepare_rebalance,
)
from muster.coordinator.groups.classic.state import GroupState as S
from muster.coordinator.groups.store import GroupStore
from muster.coordinator.requests import JoinGroup
from muster.coordinator.responses import JoinGroupResponse, SyncGroupResponse


def _error(rid: int, fx: Effects, error: int, member_id: str = "") -> None:
    fx.reply(rid, JoinGroupResponse(error, member_id=member_id))


def handle_join_group(store: GroupStore, fx: Effects, rid: int, req: JoinGroup) -> None:
    cfg = store.cfg
    if not (
        cfg.group_min_session_timeout_ms
        <= req.session_timeout_ms
        <= cfg.group_max_session_timeout_ms
    ):
        _error(rid, fx, E.INVALID_SESSION_TIMEOUT, req.member_id)
        return
    unknown = req.member_id == ""
    group = store.get(req.group_id)
    if group is None:
        if not unknown:
            _error(rid, fx, E.UNKNOWN_MEMBER_ID, req.member_id)
            return
        group = store.get_or_create(req.group_id)
    if not _accept_joining_member(store, group, req.member_id):
        member = group.members.get(req.member_id)
        if member is not None:
            remove_member(group, member, fx, ev.GROUP_MAX_SIZE, None)
        group.pending_members.discard(req.member_id)
        _error(rid, fx, E.GROUP_MAX_SIZE_REACHED)
    elif unknown:
        _new_member_join(store, group, fx, rid, req)
    else:
        _current_member_join(store, group, fx, rid, req)
    _tell_join_waiting(group, fx, rid, req)
    maybe_complete_join(store, group, fx)


def _tell_join_waiting(group: ClassicGroup, fx: Effects, rid: int, req: JoinGroup) -> None:
    """A JoinWaiting event when this request is now held by the join phase.
    The member is the one named in the request or, for a new one, the member
    just added (dicts keep insertion order): O(1), not a scan of the group."""
    if not group.is_(S.PREPARING_REBALANCE) or not group.members:
        return
    candidates = (group.members.get(req.member_id), next(reversed(group.members.values())))
    member = next((m for m in candidates if m is not None and m.awaiting_join == rid), None)
    if member is None:
        return
    fx.emit(
        ev.JoinWaiting(
            group.group_id,
            group.generation,
            member.member_id,
            member.group_instance_id,
            member.client_id,
            group.num_awaiting_join,
            len(group.members),
            group.join_deadline_ms,
            fx.now,
        )
    )


def _accept_joining_member(store: GroupStore, group: ClassicGroup, member_id: str) -> bool:
    limit = store.cfg.group_max_size
    if group.is_(S.EMPTY, S.DEAD):
        return True
    member = group.members.get(member_id)
    if group.is_(S.PREPARING_REBALANCE):
        return (member is not None and member.awaiting_join is not None) or (
            group.num_awaiting_join < limit
        )
    return member is not None or len(group.members) < limit


def _new_member_join(
    store: GroupStore, group: ClassicGroup, fx: Effects, rid: int, req: JoinGroup
) -> None:
    if group.is_(S.DEAD):
        _error(rid, fx, E.COORDINATOR_NOT_AVAILABLE, req.member_id)
        return
    if not group.supports_protocols(req.protocol_type, [n for n, _ in req.protocols]):
        _error(rid, fx, E.INCONSISTENT_GROUP_PROTOCOL, req.member_id)
        return
    # Kafka: "<instance id or client id>-<UUID>"
    new_id = store.new_member_id(req.group_instance_id or req.client_id)
    if req.group_instance_id is not None:
        old_id = group.static_member_id(req.group_instance_id)
        if old_id is None:
            _add_member_and_rebalance(store, group, fx, rid, req, new_id)
        else:
            _replace_static_member(store, group, fx, rid, req, old_id, new_id)
    elif req.require_known_member_id:
        group.pending_members.add(new_id)
        fx.schedule(pending_key(group.group_id, new_id), fx.now + req.session_timeout_ms)
        _error(rid, fx, E.MEMBER_ID_REQUIRED, new_id)
    else:
        _add_member_and_rebalance(store, group, fx, rid, req, new_id)


def _current_member_join(
    store: GroupStore, group: ClassicGroup, fx: Effects, rid: int, req: JoinGroup
) -> None:
    mid = req.member_id
    if group.is_(S.DEAD):
        _error(rid, fx, E.COORDINATOR_NOT_AVAILABLE, mid)
        return
    if not group.supports_protocols(req.protocol_type, [n for n, _ in req.protocols]):
        _error(rid, fx, E.INCONSISTENT_GROUP_PROTOCOL, mid)
        return
    if mid in group.pending_members:
        _add_member_and_rebalance(store, group, fx, rid, req, mid)
        return
    error = group.validate_current_member(mid, req.group_instance_id)
    if error is not None:
        _error(rid, fx, error, mid)
        return
    _KNOWN_MEMBER_JOIN[group.state](store, group, fx, rid, req, group.members[mid])


# ---- a known member's JoinGroup, per group state ----------------------------

KnownMemberJoin = Callable[[GroupStore, ClassicGroup, Effects, int, JoinGroup, Member], None]


def _join_while_preparing(
    store: GroupStore, group: ClassicGroup, fx: Effects, rid: int, req: JoinGroup, member: Member
) -> None:
    """It joins the rebalance in progress (parked until the join completes)."""
    mid = member.member_id
    _update_member_and_rebalance(
        store,
        group,
        fx,
        rid,
        req,
        member,
        ev.MEMBER_JOINED,
        f"member {mid} joining during PreparingRebalance",
    )


def _join_while_completing(
    store: GroupStore, group: ClassicGroup, fx: Effects, rid: int, req: JoinGroup, member: Member
) -> None:
    """Same metadata: it missed the JoinGroup answer, so it gets the current
    generation again. Changed metadata: a new rebalance."""
    mid = member.member_id
    if member.matches(list(req.protocols)):
        fx.reply(rid, join_answer(group, mid, group.is_leader(mid)))
    else:
        _metadata_changed(store, group, fx, rid, req, member)


def _join_while_stable(
    store: GroupStore, group: ClassicGroup, fx: Effects, rid: int, req: JoinGroup, member: Member
) -> None:
    """The leader rejoining, or changed metadata, starts a rebalance; a
    follower with the same metadata gets the current generation."""
    mid = member.member_id
    if group.is_leader(mid):
        _update_member_and_rebalance(
            store, group, fx, rid, req, member, ev.LEADER_REJOINED, f"leader {mid} rejoined"
        )
    elif not member.matches(list(req.protocols)):
        _metadata_changed(store, group, fx, rid, req, member)
    else:
        fx.reply(rid, join_answer(group, mid, False))


def _join_while_empty(
    store: GroupStore, group: ClassicGroup, fx: Effects, rid: int, req: JoinGroup, member: Member
) -> None:
    """The member must reset and rejoin."""
    _error(rid, fx, E.UNKNOWN_MEMBER_ID, member.member_id)


def _metadata_changed(
    store: GroupStore, group: ClassicGroup, fx: Effects, rid: int, req: JoinGroup, member: Member
) -> None:
    mid = member.member_id
    _update_member_and_rebalance(
        store,
        group,
        fx,
        rid,
        req,
        member,
        ev.MEMBER_METADATA_CHANGED,
        f"member {mid} changed its metadata",
    )


# Dead groups never get here (COORDINATOR_NOT_AVAILABLE above)
_KNOWN_MEMBER_JOIN: dict[S, KnownMemberJoin] = {
    S.EMPTY: _join_while_empty,
    S.PREPARING_REBALANCE: _join_while_preparing,
    S.COMPLETING_REBALANCE: _join_while_completing,
    S.STABLE: _join_while_stable,
}


# ---- members -----------------------------------------------------------------


def _park_join(member: Member, fx: Effects, rid: int) -> None:
    if member.awaiting_join is not None and member.awaiting_join != rid:
        # a second JoinGroup from the same member supersedes the first
        fx.reply(
            member.awaiting_join,
            JoinGroupResponse(E.REBALANCE_IN_PROGRESS, member_id=member.member_id),
        )
    member.awaiting_join = rid


def _update_member(member: Member, fx: Effects, rid: int, req: JoinGroup) -> None:
    member.protocols = list(req.protocols)
    member.rebalance_timeout_ms = req.rebalance_timeout_ms
    member.session_timeout_ms = req.session_timeout_ms
    member.supports_skip_assignment = req.supports_skip_assignment
    _park_join(member, fx, rid)


def _update_member_and_rebalance(
    store: GroupStore,
    group: ClassicGroup,
    fx: Effects,
    rid: int,
    req: JoinGroup,
    member: Member,
    cause: str,
    detail: str,
) -> None:
    _update_member(member, fx, rid, req)
    maybe_prepare_rebalance(store, group, fx, cause, member.member_id, req.reason, detail)


def _add_member_and_rebalance(
    store: GroupStore, group: ClassicGroup, fx: Effects, rid: int, req: JoinGroup, member_id: str
) -> None:
    member = Member(
        member_id=member_id,
        group_instance_id=req.group_instance_id,
        client_id=req.client_id,
        client_host=req.client_host,
        rebalance_timeout_ms=req.rebalance_timeout_ms,
        session_timeout_ms=req.session_timeout_ms,
        protocol_type=req.protocol_type,
        protocols=list(req.protocols),
        awaiting_join=rid,
        is_new=True,
        supports_skip_assignment=req.supports_skip_assignment,
    )
    if group.is_(S.PREPARING_REBALANCE) and group.generation == 0:
        group.new_member_added = True
    if member_id in group.pending_members:
        fx.cancel(pending_key(group.group_id, member_id))
    group.add(member)
    # a new member cannot heartbeat before its join completes: bound the wait
    fx.schedule(
        heartbeat_key(group.group_id, member_id), fx.now + store.cfg.new_member_join_timeout_ms
    )
    maybe_prepare_rebalance(
        store, group, fx, ev.MEMBER_JOINED, member_id, req.reason, f"member {member_id} joined"
    )


# ---- static members ------------------------------------------------------------


@dataclass(frozen=True)
class _StaticRejoin:
    """A static member rejoined a Stable group under a new id without a
    rebalance; what its answer and, if the store fails, the undo need."""

    rid: int
    instance_id: str
    old_id: str
    new_id: str
    member: Member
    leader_before: str | None
    saved: tuple[list[tuple[str, bytes]], int, int]  # protocols, rebalance, session timeouts
    supports_skip_assignment: bool


def _replace_static_member(
    store: GroupStore,
    group: ClassicGroup,
    fx: Effects,
    rid: int,
    req: JoinGroup,
    old_id: str,
    new_id: str,
) -> None:
    instance_id = req.group_instance_id
    assert instance_id is not None
    current_leader = group.leader_id
    old = group.members[old_id]
    # fence whoever still waits under the old identity
    if old.awaiting_join is not None:
        fx.reply(old.awaiting_join, JoinGroupResponse(E.FENCED_INSTANCE_ID, member_id=old_id))
        old.awaiting_join = None
    if old.awaiting_sync is not None:
        fx.reply(old.awaiting_sync, SyncGroupResponse(E.FENCED_INSTANCE_ID))
        old.awaiting_sync = None
    member = group.replace_static_member(instance_id, old_id, new_id)
    fx.cancel(heartbeat_key(group.group_id, old_id))
    schedule_heartbeat(group, member, fx)
    saved = (member.protocols, member.rebalance_timeout_ms, member.session_timeout_ms)
    _update_member(member, fx, rid, req)
    detail = f"static member {instance_id} replaced {old_id} by {new_id}"
    quiet = group.is_(S.STABLE) and group.protocol_name == group.select_protocol()
    fx.emit(
        ev.StaticMemberReplaced(
            group.group_id,
            instance_id,
            old_id,
            new_id,
            group.is_(S.COMPLETING_REBALANCE) or (group.is_(S.STABLE) and not quiet),
            fx.now,
        )
    )
    if group.is_(S.STABLE):
        if not quiet:  # the group's protocol would change: rebalance
            maybe_prepare_rebalance(
                store,
                group,
                fx,
                ev.STATIC_MEMBER_REPLACED,
                new_id,
                req.reason,
                detail + " with a protocol change",
            )
            return
        rejoin = _StaticRejoin(
            rid,
            instance_id,
            old_id,
            new_id,
            member,
            current_leader,
            saved,
            req.supports_skip_assignment,
        )
        store_group(group, fx, None, partial(_static_rejoin_stored, group, rejoin))
    elif group.is_(S.COMPLETING_REBALANCE):
        prepare_rebalance(store, group, fx, ev.STATIC_MEMBER_REPLACED, new_id, req.reason, detail)
    # PreparingRebalance: the pending join completes with the new identity


def _static_rejoin_stored(
    group: ClassicGroup, rejoin: _StaticRejoin, error: int, fx: Effects
) -> None:
    """The group record naming the new id is durable (answer the member) or
    failed (the old id comes back and the member is told why)."""
    member, new_id, rid = rejoin.member, rejoin.new_id, rejoin.rid
    if group.members.get(new_id) is not member:
        return
    if error != E.NONE:
        member.protocols, member.rebalance_timeout_ms, member.session_timeout_ms = rejoin.saved
        member.awaiting_join = None
        group.replace_static_member(rejoin.instance_id, new_id, rejoin.old_id)
        fx.cancel(heartbeat_key(group.group_id, new_id))
        schedule_heartbeat(group, member, fx)
        fx.reply(
            rid,
            JoinGroupResponse(
                store_error_to_client(error),
                group.generation,
                group.protocol_type,
                group.protocol_name,
                rejoin.leader_before or "",
                False,
                "",
            ),
        )
        return
    if member.awaiting_join != rid or not group.is_(S.STABLE):
        return  # a rebalance took over; its completion answers the member
    member.awaiting_join = None
    if rejoin.supports_skip_assignment:
        leader = group.is_leader(new_id)
        fx.reply(rid, join_answer(group, new_id, leader, skip_assignment=leader))
    else:
        # older clients: keep the old leader id so nobody recomputes an assignment
        fx.reply(rid, join_answer(group, new_id, False, leader=rejoin.leader_before or ""))
