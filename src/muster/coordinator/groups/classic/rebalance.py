"""The rebalance of a classic group (spec §4-§6): PreparingRebalance starts,
the join phase ends (by its JoinPhase), and the group moves on to
CompletingRebalance (or Empty). SyncGroup (`sync.py`) finishes it."""

from __future__ import annotations

from muster.coordinator import errors as E
from muster.coordinator import events as ev
from muster.coordinator.context import Effects, join_key, sync_key
from muster.coordinator.groups.classic.group import ClassicGroup, Member, RebalanceTrace
from muster.coordinator.groups.classic.members import (
    remove_member,
    reset_and_propagate_assignment_error,
    schedule_heartbeat,
)
from muster.coordinator.groups.classic.persist import store_group
from muster.coordinator.groups.classic.state import GroupState as S
from muster.coordinator.groups.classic.state import JoinPhase
from muster.coordinator.groups.store import GroupStore
from muster.coordinator.responses import JoinGroupMember, JoinGroupResponse


def join_answer(
    group: ClassicGroup,
    member_id: str,
    leader_view: bool,
    leader: str | None = None,
    skip_assignment: bool = False,
) -> JoinGroupResponse:
    """A successful JoinGroup answer for the current generation; the leader's
    view lists every member's metadata."""
    members = (
        tuple(
            JoinGroupMember(m.member_id, m.group_instance_id, m.metadata(group.protocol_name))
            for m in group.members.values()
        )
        if leader_view
        else ()
    )
    return JoinGroupResponse(
        error_code=E.NONE,
        generation_id=group.generation,
        protocol_type=group.protocol_type,
        protocol_name=group.protocol_name,
        leader=(group.leader_id if leader is None else leader) or "",
        skip_assignment=skip_assignment,
        member_id=member_id,
        members=members,
    )


# ---- prepare ---------------------------------------------------------------


def maybe_prepare_rebalance(
    store: GroupStore,
    group: ClassicGroup,
    fx: Effects,
    cause: str,
    member_id: str = "",
    reason: str | None = None,
    detail: str = "",
) -> None:
    if group.can_rebalance():
        prepare_rebalance(store, group, fx, cause, member_id, reason, detail)


def prepare_rebalance(
    store: GroupStore,
    group: ClassicGroup,
    fx: Effects,
    cause: str,
    member_id: str = "",
    reason: str | None = None,
    detail: str = "",
) -> None:
    if group.is_(S.COMPLETING_REBALANCE):
        reset_and_propagate_assignment_error(group, fx, E.REBALANCE_IN_PROGRESS)
    if group.pending_sync_members:
        group.pending_sync_members.clear()
    fx.cancel(sync_key(group.group_id))
    from_state = group.state
    if group.is_(S.EMPTY):
        delay = store.cfg.group_initial_rebalance_delay_ms
        group.join_phase = JoinPhase.INITIAL_DELAY
        group.initial_delay_ms = delay
        group.initial_remaining_ms = max(group.rebalance_timeout_ms() - delay, 0)
        deadline = fx.now + delay
    else:
        group.join_phase = JoinPhase.REBALANCE_TIMEOUT
        deadline = fx.now + group.rebalance_timeout_ms()
    if group.trace is None:
        group.trace = RebalanceTrace(started_ms=fx.now)
    group.trace.causes.append(cause)
    fx.emit(
        ev.RebalanceStarted(
            group.group_id,
            group.generation,
            from_state.value,
            cause,
            member_id,
            reason,
            detail,
            len(group.members),
            fx.now,
        )
    )
    group.transition_to(S.PREPARING_REBALANCE, cause, fx)
    _schedule_join(group, fx, deadline)
    maybe_complete_join(store, group, fx)


def _schedule_join(group: ClassicGroup, fx: Effects, deadline_ms: int) -> None:
    group.join_deadline_ms = deadline_ms
    fx.schedule(join_key(group.group_id), deadline_ms)


# ---- complete the join -----------------------------------------------------


def maybe_complete_join(store: GroupStore, group: ClassicGroup, fx: Effects) -> None:
    """The rebalance-timeout phase completes early once everyone has rejoined;
    the initial delay never does (Kafka's InitialDelayedJoin)."""
    if (
        group.is_(S.PREPARING_REBALANCE)
        and group.join_phase is JoinPhase.REBALANCE_TIMEOUT
        and group.has_all_members_joined()
    ):
        complete_join(store, group, fx, ev.ALL_MEMBERS_JOINED)


def on_join_timer(store: GroupStore, group: ClassicGroup, fx: Effects) -> None:
    if not group.is_(S.PREPARING_REBALANCE):
        return
    if group.join_phase is JoinPhase.INITIAL_DELAY:
        if group.new_member_added and group.initial_remaining_ms != 0:
            group.new_member_added = False
            delay = min(store.cfg.group_initial_rebalance_delay_ms, group.initial_remaining_ms)
            group.initial_remaining_ms = max(group.initial_remaining_ms - group.initial_delay_ms, 0)
            group.initial_delay_ms = delay
            _schedule_join(group, fx, fx.now + delay)
            return
        complete_join(store, group, fx, ev.INITIAL_DELAY_ELAPSED)
    else:
        waited = (
            ev.ALL_MEMBERS_JOINED
            if group.has_all_members_joined()
            else ev.REBALANCE_TIMEOUT_EXPIRED
        )
        complete_join(store, group, fx, waited)


def complete_join(store: GroupStore, group: ClassicGroup, fx: Effects, waited_for: str) -> None:
    fx.cancel(join_key(group.group_id))
    group.join_phase = None
    removed = []
    for member in group.not_yet_rejoined():
        if not member.is_static:
            remove_member(group, member, fx, ev.REBALANCE_TIMEOUT, None)
            removed.append(member.member_id)
    if group.is_(S.DEAD):
        return
    if not group.maybe_elect_new_joined_leader() and group.members:
        # nobody rejoined (only static members left): wait another round
        group.join_phase = JoinPhase.REBALANCE_TIMEOUT
        _schedule_join(group, fx, fx.now + group.rebalance_timeout_ms())
        return
    group.generation += 1
    if group.members:
        group.protocol_name = group.select_protocol()
        group.subscribed_topics = group.compute_subscribed_topics()
        group.transition_to(S.COMPLETING_REBALANCE, ev.JOIN_COMPLETED, fx)
    else:
        group.protocol_name = None
        group.subscribed_topics = group.compute_subscribed_topics()
        group.transition_to(S.EMPTY, ev.JOIN_COMPLETED, fx)
    group.pending_sync_members.clear()
    trace = group.trace or RebalanceTrace(started_ms=fx.now)
    group.trace = trace
    trace.join_completed_ms = fx.now
    trace.waited_for = waited_for
    fx.emit(
        ev.JoinCompleted(
            group.group_id,
            group.generation,
            group.protocol_name,
            group.leader_id,
            len(group.members),
            waited_for,
            tuple(removed),
            fx.now - trace.started_ms,
            fx.now,
        )
    )
    if group.is_(S.EMPTY):
        store_group(group, fx, {})
        rebalance_completed(group, fx)
        return
    for member in list(group.members.values()):
        if member.awaiting_join is not None:
            fx.reply(
                member.awaiting_join,
                join_answer(group, member.member_id, group.is_leader(member.member_id)),
            )
            member.awaiting_join = None
        schedule_heartbeat(group, member, fx)
        member.is_new = False
        group.pending_sync_members.add(member.member_id)
    fx.schedule(sync_key(group.group_id), fx.now + group.rebalance_timeout_ms())


def rebalance_completed(group: ClassicGroup, fx: Effects) -> None:
    trace = group.trace
    if trace is None:
        return
    fx.emit(
        ev.RebalanceCompleted(
            group.group_id,
            group.generation,
            group.protocol_type,
            group.protocol_name,
            group.leader_id,
            len(group.members),
            len(group.static_members),
            tuple(trace.causes),
            trace.started_ms,
            trace.join_completed_ms,
            fx.now,
            fx.now - trace.started_ms,
            trace.waited_for,
        )
    )
    group.trace = None


def remove_member_and_update_group(
    store: GroupStore,
    group: ClassicGroup,
    member: Member,
    fx: Effects,
    cause: str,
    reason: str | None = None,
    detail: str = "",
) -> None:
    """A member is gone (left, expired): the group rebalances without it, or
    the join phase in progress may now be complete."""
    remove_member(group, member, fx, cause, reason)
    if group.is_(S.STABLE, S.COMPLETING_REBALANCE):
        maybe_prepare_rebalance(store, group, fx, cause, member.member_id, reason, detail)
    elif group.is_(S.PREPARING_REBALANCE):
        maybe_complete_join(store, group, fx)
