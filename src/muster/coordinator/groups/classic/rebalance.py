"""The rebalance engine shared by every classic-group handler: prepare a
rebalance, complete the join phase, hand out assignments, remove members and
store the group (spec §4-§6)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from muster.coordinator import errors as E
from muster.coordinator import events as ev
from muster.coordinator.context import Effects, heartbeat_key, join_key, sync_key
from muster.coordinator.groups.classic.group import ClassicGroup, Member, RebalanceTrace
from muster.coordinator.groups.classic.state import GroupState as S
from muster.coordinator.groups.store import GroupStore
from muster.coordinator.responses import JoinGroupMember, JoinGroupResponse, SyncGroupResponse
from muster.records.offsets_topic import group_metadata_record

INITIAL = "initial"
DELAYED = "delayed"


def store_error_to_client(error: int) -> int:
    """Kafka's mapping of a failed group store (GroupMetadataManager.storeGroup)."""
    if error in (
        E.UNKNOWN_TOPIC_OR_PARTITION,
        E.NOT_ENOUGH_REPLICAS,
        E.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    ):
        return E.COORDINATOR_NOT_AVAILABLE
    if error in (E.NOT_LEADER_OR_FOLLOWER, E.KAFKA_STORAGE_ERROR):
        return E.NOT_COORDINATOR
    if error == E.REQUEST_TIMED_OUT:
        return E.REBALANCE_IN_PROGRESS
    if error in (E.MESSAGE_TOO_LARGE, E.RECORD_LIST_TOO_LARGE, E.INVALID_FETCH_SIZE):
        return E.UNKNOWN_SERVER_ERROR
    return error


def store_group(
    group: ClassicGroup,
    fx: Effects,
    assignment: dict[str, bytes] | None,
    then: Callable[[int, Effects], None] | None = None,
) -> None:
    """Append the group's metadata record (the shard replays it once durable);
    `then(error, fx)` runs after that."""
    fx.record(group_metadata_record(group.group_id, group.to_record(assignment)))
    group.store_seq += 1
    fx.after_durable(partial(_stored, group, group.store_seq, then))


def _stored(
    group: ClassicGroup,
    seq: int,
    then: Callable[[int, Effects], None] | None,
    error: int,
    fx: Effects,
) -> None:
    if error == E.NONE and seq > group.persisted_seq:
        group.persisted_seq = seq
    if then is not None:
        then(error, fx)


def schedule_heartbeat(group: ClassicGroup, member: Member, fx: Effects) -> None:
    fx.schedule(heartbeat_key(group.group_id, member.member_id), fx.now + member.session_timeout_ms)


def member_metadata_list(group: ClassicGroup) -> tuple[JoinGroupMember, ...]:
    return tuple(
        JoinGroupMember(m.member_id, m.group_instance_id, m.metadata(group.protocol_name))
        for m in group.members.values()
    )


def join_answer(
    group: ClassicGroup,
    member_id: str,
    leader_view: bool,
    leader: str | None = None,
    skip_assignment: bool = False,
) -> JoinGroupResponse:
    return JoinGroupResponse(
        error_code=E.NONE,
        generation_id=group.generation,
        protocol_type=group.protocol_type,
        protocol_name=group.protocol_name,
        leader=(group.leader_id if leader is None else leader) or "",
        skip_assignment=skip_assignment,
        member_id=member_id,
        members=member_metadata_list(group) if leader_view else (),
    )


# ---- prepare ---------------------------------------------------------------


def maybe_prepare_rebalance(
    env: GroupStore,
    group: ClassicGroup,
    fx: Effects,
    cause: str,
    member_id: str = "",
    reason: str | None = None,
    detail: str = "",
) -> None:
    if group.can_rebalance():
        prepare_rebalance(env, group, fx, cause, member_id, reason, detail)


def prepare_rebalance(
    env: GroupStore,
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
        delay = env.cfg.group_initial_rebalance_delay_ms
        group.join_timer = INITIAL
        group.initial_delay_ms = delay
        group.initial_remaining_ms = max(group.rebalance_timeout_ms() - delay, 0)
        deadline = fx.now + delay
    else:
        group.join_timer = DELAYED
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
    fx.schedule(join_key(group.group_id), deadline)
    maybe_complete_join(env, group, fx)


# ---- complete the join -----------------------------------------------------


def maybe_complete_join(env: GroupStore, group: ClassicGroup, fx: Effects) -> None:
    """The delayed join completes early once everyone has rejoined; the
    initial delayed join never does (Kafka's InitialDelayedJoin)."""
    if (
        group.is_(S.PREPARING_REBALANCE)
        and group.join_timer == DELAYED
        and group.has_all_members_joined()
    ):
        complete_join(env, group, fx, ev.ALL_MEMBERS_JOINED)


def on_join_timer(env: GroupStore, group: ClassicGroup, fx: Effects) -> None:
    if not group.is_(S.PREPARING_REBALANCE):
        return
    if group.join_timer == INITIAL:
        if group.new_member_added and group.initial_remaining_ms != 0:
            group.new_member_added = False
            delay = min(env.cfg.group_initial_rebalance_delay_ms, group.initial_remaining_ms)
            group.initial_remaining_ms = max(group.initial_remaining_ms - group.initial_delay_ms, 0)
            group.initial_delay_ms = delay
            fx.schedule(join_key(group.group_id), fx.now + delay)
            return
        complete_join(env, group, fx, ev.INITIAL_DELAY_ELAPSED)
    else:
        waited = (
            ev.ALL_MEMBERS_JOINED
            if group.has_all_members_joined()
            else (ev.REBALANCE_TIMEOUT_EXPIRED)
        )
        complete_join(env, group, fx, waited)


def complete_join(env: GroupStore, group: ClassicGroup, fx: Effects, waited_for: str) -> None:
    fx.cancel(join_key(group.group_id))
    group.join_timer = None
    removed = []
    for member in group.not_yet_rejoined():
        if not member.is_static:
            remove_member(group, member, fx, ev.REBALANCE_TIMEOUT, None)
            removed.append(member.member_id)
    if group.is_(S.DEAD):
        return
    if not group.maybe_elect_new_joined_leader() and group.members:
        # nobody rejoined (only static members left): wait another round
        group.join_timer = DELAYED
        fx.schedule(join_key(group.group_id), fx.now + group.rebalance_timeout_ms())
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


# ---- assignments -----------------------------------------------------------


def propagate_assignment(group: ClassicGroup, fx: Effects, error: int) -> None:
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


# ---- removing members ------------------------------------------------------


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


def remove_member_and_update_group(
    env: GroupStore,
    group: ClassicGroup,
    member: Member,
    fx: Effects,
    cause: str,
    reason: str | None = None,
    detail: str = "",
) -> None:
    remove_member(group, member, fx, cause, reason)
    if group.is_(S.STABLE, S.COMPLETING_REBALANCE):
        maybe_prepare_rebalance(env, group, fx, cause, member.member_id, reason, detail)
    elif group.is_(S.PREPARING_REBALANCE):
        maybe_complete_join(env, group, fx)
