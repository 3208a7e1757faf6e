"""ConsumerGroupHeartbeat (Kafka's GroupMetadataManager.consumerGroupHeartbeat):
join (epoch 0), heartbeat (epoch > 0), leave (-1) and static leave (-2).

A heartbeat validates everything first, then writes records one after the
other through `write`, which applies each at once (see the README: apply at
write time, the shard reverts the group if the append fails), so each step
reads the group as the previous step left it. A check that can only be
made after some records (a static member of the classic group an upgrade
converted, a member reconciliation fences) answers an error that changes
nothing: `discard` drops the records and puts the groups back, as Kafka's
handler throws before its records are committed. The steps:

1. the member: new, rejoining, a static replacement or known; its metadata
   record when it changed;
2. the group's subscription metadata (topics some member subscribes to, with
   their ids and partition counts) and its epoch, bumped when a subscription
   or that metadata changed;
3. the target assignment, recomputed when the group epoch is ahead of it;
4. the member's reconciliation toward its target (`reconcile.py`).

The answer goes out once the records are durable, and carries the assignment
only when it changed or the request was a full one, as Kafka's does.
"""

from __future__ import annotations

import dataclasses
from functools import partial

from muster.assignors.server.registry import ASSIGNORS
from muster.coordinator import errors as E
from muster.coordinator import events_modern as ce
from muster.coordinator.context import Effects, pending_key
from muster.coordinator.groups import migration
from muster.coordinator.groups.modern import regex as regexes
from muster.coordinator.groups.modern.api import (
    ConsumerGroupHeartbeat,
    ConsumerGroupHeartbeatResponse,
    TopicPartitionList,
)
from muster.coordinator.groups.modern.group import (
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    ConsumerGroup,
    current_assignment_record,
    epoch_record,
    member_metadata_record,
    removal_records,
    subscription_metadata_record,
    target_member_record,
)
from muster.coordinator.groups.modern.member import ConsumerMember, MemberState, Partitions
from muster.coordinator.groups.modern.reconcile import FencedMemberEpoch, reconcile
from muster.coordinator.groups.modern.target import SubscribedTopic, TargetMember, build_target
from muster.coordinator.groups.modern.validate import Reject, check_epoch, validate
from muster.coordinator.groups.modern.writes import (
    discard,
    join_timer,
    revocation_key,
    session_key,
    sync_timer,
    write,
)
from muster.coordinator.groups.store import GroupStore
from muster.records.offsets_topic import GroupMetadataKey, encode_key

# ---- the handler ----------------------------------------------------------------


def handle_heartbeat(store: GroupStore, fx: Effects, rid: int, req: ConsumerGroupHeartbeat) -> None:
    try:
        validate(store, req)
        if req.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            resp = _leave(store, fx, req)
        else:
            resp = _heartbeat(store, fx, req)
    except Reject as r:
        discard(store, fx)  # e.g. FENCED_MEMBER_EPOCH after the member's records
        fx.reply(rid, ConsumerGroupHeartbeatResponse(r.code, r.message))
        return
    if fx.records:
        fx.after_durable(partial(_answer, rid, resp))
    else:
        fx.reply(rid, resp)


def _answer(rid: int, resp: ConsumerGroupHeartbeatResponse, error: int, fx: Effects) -> None:
    if error == E.NONE:
        fx.reply(rid, resp)
    else:
        fx.reply(rid, ConsumerGroupHeartbeatResponse(E.append_error_to_client(error)))


def _consumer_group(store: GroupStore, fx: Effects, req: ConsumerGroupHeartbeat) -> ConsumerGroup:
    """Kafka's getOrMaybeCreateConsumerGroup: an empty classic group of that id
    is deleted when a member joins, a live one is upgraded (`migration.py`)."""
    group = store.modern.get(req.group_id)
    if group is not None:
        return group
    classic = store.get(req.group_id)
    if classic is not None and classic.members and req.member_epoch == 0:
        return migration.upgrade(store, fx, classic, req.topics)
    if classic is not None and (classic.members or req.member_epoch != 0):
        raise Reject(E.GROUP_ID_NOT_FOUND, f"Group {req.group_id} is not a consumer group.")
    if req.member_epoch != 0:
        raise Reject(E.GROUP_ID_NOT_FOUND, f"Consumer group {req.group_id} not found.")
    if classic is not None:
        if store.persisted(req.group_id) is not None:
            fx.record((encode_key(GroupMetadataKey(req.group_id)), None))
        for pending in classic.pending_members:  # asked for a member id, never joined
            fx.cancel(pending_key(req.group_id, pending))
        fx.modern_undo.setdefault(req.group_id, classic)  # back if the join fails
        store.remove(req.group_id)
    return ConsumerGroup(req.group_id)


def _heartbeat(
    store: GroupStore, fx: Effects, req: ConsumerGroupHeartbeat
) -> ConsumerGroupHeartbeatResponse:
    cfg = store.cfg
    group = _consumer_group(store, fx, req)
    gid = req.group_id
    member_id = req.member_id or store.new_member_id(req.client_id or "consumer")
    if len(group.members) >= cfg.consumer_max_size and member_id not in group.members:
        raise Reject(
            E.GROUP_MAX_SIZE_REACHED,
            f"The consumer group has reached its maximum capacity of {cfg.consumer_max_size}"
            " members.",
        )
    known = group.members.get(member_id)
    replacing: ConsumerMember | None = None
    cause = ""
    if req.instance_id is not None:
        static = group.static_member(req.instance_id)
        if req.member_epoch == 0:
            if static is not None and static.member_id != member_id:
                if static.member_epoch != STATIC_LEAVE_EPOCH:
                    raise Reject(
                        E.UNRELEASED_INSTANCE_ID,
                        f"Static member {member_id} with instance id {req.instance_id} cannot"
                        f" join the group because the instance id is owned by"
                        f" {static.member_id} member.",
                    )
                replacing = static
        else:
            if static is None:
                raise Reject(E.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown.")
            if static.member_id != member_id:
                raise Reject(
                    E.FENCED_INSTANCE_ID,
                    f"Static member {member_id} with instance id {req.instance_id} was fenced"
                    f" by member {static.member_id}.",
                )
    if req.member_epoch > 0:
        if known is None:
            raise Reject(E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {gid}.")
        check_epoch(known, req)

    # 1. the member ------------------------------------------------------------
    if replacing is not None:
        member = dataclasses.replace(
            replacing, member_id=member_id, member_epoch=0, previous_member_epoch=0
        )
        inherited = group.targets.get(replacing.member_id, {})
        for key, value in removal_records(gid, replacing.member_id):
            write(store, fx, key, value)
        fx.cancel(session_key(gid, replacing.member_id))
        fx.cancel(revocation_key(gid, replacing.member_id))
        write(store, fx, *member_metadata_record(gid, member))
        write(store, fx, *target_member_record(gid, member_id, inherited))
        write(store, fx, *current_assignment_record(gid, member))
        group = store.modern[gid]
        cause = ce.CONSUMER_STATIC_MEMBER_REPLACED
        fx.emit(
            ce.ConsumerMemberRemoved(gid, replacing.member_id, replacing.instance_id, cause, fx.now)
        )
    elif known is None:
        member = ConsumerMember(member_id)
        cause = ce.CONSUMER_MEMBER_JOINED
    elif req.member_epoch == 0:
        # a member fenced earlier joins again under its id: it has dropped
        # everything it owned, so its partitions are free again
        member = known.with_epoch(0, state=MemberState.STABLE, assigned={}, pending_revocation={})
        write(store, fx, *current_assignment_record(gid, member))
        group = store.modern[gid]
        cause = ce.CONSUMER_MEMBER_REJOINED
    else:
        member = known
    updated = dataclasses.replace(
        member,
        instance_id=req.instance_id if req.instance_id is not None else member.instance_id,
        rack_id=req.rack_id if req.rack_id is not None else member.rack_id,
        rebalance_timeout_ms=req.rebalance_timeout_ms
        if req.rebalance_timeout_ms != -1
        else member.rebalance_timeout_ms,
        server_assignor=req.server_assignor
        if req.server_assignor is not None
        else member.server_assignor,
        subscribed_topic_names=frozenset(req.subscribed_topic_names)
        if req.subscribed_topic_names is not None
        else member.subscribed_topic_names,
        subscribed_topic_regex=req.subscribed_topic_regex
        if req.subscribed_topic_regex is not None
        else member.subscribed_topic_regex,
        client_id=req.client_id,
        client_host=req.client_host,
    )
    subscription_changed = (known is None and replacing is None) or (
        updated.subscribed_topic_names != member.subscribed_topic_names
        or updated.subscribed_topic_regex != member.subscribed_topic_regex
    )
    if (known is None and replacing is None) or _metadata(updated) != _metadata(member):
        write(store, fx, *member_metadata_record(gid, updated))
        group = store.modern[gid]
    if subscription_changed and not cause:
        cause = ce.CONSUMER_SUBSCRIPTION_CHANGED

    # 2. subscription metadata and the group epoch -------------------------------
    bump = subscription_changed
    topics = subscription_metadata(group, req.topics)
    if topics != group.topics:
        write(store, fx, *subscription_metadata_record(gid, topics))
        if not bump:
            cause = ce.CONSUMER_METADATA_CHANGED
        bump = True
    if bump:
        write(store, fx, *epoch_record(gid, group.epoch + 1))
        fx.emit(
            ce.ConsumerGroupEpochBumped(
                gid, group.epoch, cause, member_id, "", len(group.members), fx.now
            )
        )

    # 3. the target assignment ------------------------------------------------------
    if group.epoch > group.assignment_epoch:
        compute_target(store, fx, group, req.topics)

    # 4. the member's reconciliation -------------------------------------------------
    before = group.members[member_id]
    after = reconcile_member(store, fx, group, before, req.owned)
    fx.schedule(session_key(gid, member_id), fx.now + cfg.consumer_session_timeout_ms)

    # 5. regular expressions resolved (or dropped): they count from the next heartbeat
    if regexes.refresh(partial(write, store, fx), fx, group, req.topics):
        bump_after_regex(store, fx, group, req.topics, member_id)

    full = req.member_epoch == 0 or (
        req.rebalance_timeout_ms != -1
        and req.subscribed_topic_names is not None
        and req.owned is not None
    )
    changed = known is None or known.assigned != after.assigned
    return ConsumerGroupHeartbeatResponse(
        E.NONE,
        None,
        member_id,
        after.member_epoch,
        cfg.consumer_heartbeat_interval_ms,
        _assignment(after.assigned) if full or changed else None,
    )


def _metadata(m: ConsumerMember) -> tuple[object, ...]:
    return (
        m.instance_id,
        m.rack_id,
        m.client_id,
        m.client_host,
        m.subscribed_topic_names,
        m.subscribed_topic_regex,
        m.rebalance_timeout_ms,
        m.server_assignor,
        m.classic,
    )


def _assignment(assigned: Partitions) -> TopicPartitionList:
    return tuple((t, tuple(sorted(ps))) for t, ps in sorted(assigned.items()))


def subscribed_names(m: ConsumerMember, group: ConsumerGroup) -> frozenset[str]:
    """The topic names the member subscribes to: its names, and what the
    group's resolution of its regex matched (`regex.py`)."""
    if not m.subscribed_topic_regex:
        return m.subscribed_topic_names
    found = group.regexes.get(m.subscribed_topic_regex)
    return m.subscribed_topic_names if found is None else m.subscribed_topic_names | found[0]


def subscription_metadata(group: ConsumerGroup, image: object) -> dict[str, SubscribedTopic]:
    names: set[str] = set()
    for m in group.members.values():
        names |= subscribed_names(m, group)
    out = {}
    for name in sorted(names):
        found = image.get(name)  # type: ignore[attr-defined]
        if found is not None:
            out[name] = found
    return out


def bump_after_regex(
    store: GroupStore, fx: Effects, group: ConsumerGroup, image: object, member_id: str
) -> None:
    gid = group.group_id
    topics = subscription_metadata(group, image)
    if topics != group.topics:
        write(store, fx, *subscription_metadata_record(gid, topics))
    write(store, fx, *epoch_record(gid, group.epoch + 1))
    fx.emit(
        ce.ConsumerGroupEpochBumped(
            gid, group.epoch, ce.CONSUMER_REGEX_RESOLVED, member_id, "", len(group.members), fx.now
        )
    )


def preferred_assignor(store: GroupStore, group: ConsumerGroup) -> str:
    """Kafka's computePreferredServerAssignor: the one most members ask for,
    else the first of group.consumer.assignors."""
    counts: dict[str, int] = {}
    for m in group.members.values():
        if m.server_assignor:
            counts[m.server_assignor] = counts.get(m.server_assignor, 0) + 1
    if counts:
        return min(counts, key=lambda a: (-counts[a], a))
    known = [a for a in store.cfg.consumer_assignors if a in ASSIGNORS]
    return known[0] if known else "uniform"


def compute_target(store: GroupStore, fx: Effects, group: ConsumerGroup, image: object) -> None:
    gid = group.group_id
    members = {
        mid: TargetMember(subscribed_names(m, group), m.instance_id, m.rack_id)
        for mid, m in group.members.items()
    }
    assignor = preferred_assignor(store, group)
    new = build_target(gid, group.epoch, assignor, members, group.topics, group.targets)
    changed = []
    for key, value in new.records:
        write(store, fx, key, value)
        if hasattr(key, "member_id"):
            changed.append(key.member_id)
    fx.emit(
        ce.ConsumerTargetAssigned(
            gid, group.epoch, assignor, len(members), tuple(sorted(changed)), fx.now
        )
    )


def reconcile_member(
    store: GroupStore,
    fx: Effects,
    group: ConsumerGroup,
    member: ConsumerMember,
    owned: TopicPartitionList | None,
) -> ConsumerMember:
    """Kafka's maybeReconcile: one step toward the target, a record when the
    member moved, and the revocation timer armed while it must give up
    partitions."""
    gid = group.group_id
    if member.member_epoch == STATIC_LEAVE_EPOCH:
        return member
    if member.state is MemberState.STABLE and member.member_epoch == group.assignment_epoch:
        return member
    try:
        after = reconcile(
            member,
            group.assignment_epoch,
            group.targets.get(member.member_id, {}),
            group.partition_epoch,
            owned,
        )
    except FencedMemberEpoch as exc:
        raise Reject(E.FENCED_MEMBER_EPOCH, str(exc)) from None
    if after == member:
        return member
    write(store, fx, *current_assignment_record(gid, after))
    deadline = 0
    if after.state is MemberState.UNREVOKED_PARTITIONS:
        deadline = fx.now + max(after.rebalance_timeout_ms, 0)
        fx.schedule(revocation_key(gid, after.member_id), deadline)
    else:
        fx.cancel(revocation_key(gid, after.member_id))
    fx.emit(
        ce.ConsumerMemberReconciled(
            gid,
            after.member_id,
            member.member_epoch,
            after.member_epoch,
            after.state.name,
            sum(len(ps) for ps in after.assigned.values()),
            tuple(
                f"{t}:{p}" for t, ps in sorted(after.pending_revocation.items()) for p in sorted(ps)
            ),
            fx.now,
            deadline,
        )
    )
    return after


# ---- leaving and fencing ---------------------------------------------------------


def _leave(
    store: GroupStore, fx: Effects, req: ConsumerGroupHeartbeat
) -> ConsumerGroupHeartbeatResponse:
    gid = req.group_id
    group = store.modern.get(gid)
    if group is None:
        raise Reject(E.GROUP_ID_NOT_FOUND, f"Group {gid} is not a consumer group.")
    if req.instance_id is None:
        member = group.members.get(req.member_id)
        if member is None:
            raise Reject(
                E.UNKNOWN_MEMBER_ID, f"Member {req.member_id} is not a member of group {gid}."
            )
    else:
        member = group.static_member(req.instance_id)
        if member is None:
            raise Reject(E.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown.")
        if member.member_id != req.member_id:
            raise Reject(
                E.FENCED_INSTANCE_ID,
                f"Static member {req.member_id} with instance id {req.instance_id} was fenced"
                f" by member {member.member_id}.",
            )
    if req.member_epoch == STATIC_LEAVE_EPOCH:
        # the member stays (and keeps its partitions) until its session expires
        # or its instance comes back
        leaving = dataclasses.replace(
            member, member_epoch=STATIC_LEAVE_EPOCH, pending_revocation={}
        )
        write(store, fx, *current_assignment_record(gid, leaving))
        fx.cancel(revocation_key(gid, member.member_id))
        fx.emit(
            ce.ConsumerMemberReconciled(
                gid,
                member.member_id,
                member.member_epoch,
                STATIC_LEAVE_EPOCH,
                leaving.state.name,
                sum(len(ps) for ps in leaving.assigned.values()),
                (),
                fx.now,
            )
        )
    else:
        fence(store, fx, group, member, ce.CONSUMER_MEMBER_LEFT, req.topics)
    return ConsumerGroupHeartbeatResponse(E.NONE, None, req.member_id, req.member_epoch, 0)


def fence(
    store: GroupStore,
    fx: Effects,
    group: ConsumerGroup,
    member: ConsumerMember,
    cause: str,
    image: object | None,
) -> None:
    """Kafka's consumerGroupFenceMember: the member's records go, the group's
    subscription metadata follows and its epoch moves. Without the broker's
    topics (a timer) the group's own metadata stands in: the remaining
    members subscribe to a part of it. When only classic-protocol members
    remain, the group is downgraded instead (`migration.py`)."""
    gid = group.group_id
    for key in (join_timer, sync_timer):
        fx.cancel(key(gid, member.member_id))
    store.classic_join_due.pop((gid, member.member_id), None)
    if migration.should_downgrade(store, group, member):
        migration.downgrade(store, fx, group, member, cause)
        return
    for key, value in removal_records(gid, member.member_id):
        write(store, fx, key, value)
    group = store.modern[gid]
    regexes.refresh(partial(write, store, fx), fx, group, None)  # drops unused ones
    topics = subscription_metadata(group, group.topics if image is None else image)
    if topics != group.topics:
        write(store, fx, *subscription_metadata_record(gid, topics))
    write(store, fx, *epoch_record(gid, group.epoch + 1))
    fx.cancel(session_key(gid, member.member_id))
    fx.cancel(revocation_key(gid, member.member_id))
    fx.emit(ce.ConsumerMemberRemoved(gid, member.member_id, member.instance_id, cause, fx.now))
    fx.emit(
        ce.ConsumerGroupEpochBumped(
            gid, group.epoch, cause, member.member_id, "", len(group.members), fx.now
        )
    )


def on_session_timer(store: GroupStore, fx: Effects, group_id: str, member_id: str) -> None:
    group = store.modern.get(group_id)
    member = None if group is None else group.members.get(member_id)
    if group is not None and member is not None:
        fence(store, fx, group, member, ce.CONSUMER_SESSION_EXPIRED, None)


def on_revocation_timer(store: GroupStore, fx: Effects, group_id: str, member_id: str) -> None:
    group = store.modern.get(group_id)
    member = None if group is None else group.members.get(member_id)
    if group is not None and member is not None:
        if member.state is MemberState.UNREVOKED_PARTITIONS:
            fence(store, fx, group, member, ce.CONSUMER_REVOCATION_TIMEOUT, None)
