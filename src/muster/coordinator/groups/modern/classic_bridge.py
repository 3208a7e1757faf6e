"""Classic-protocol members inside a consumer group (Kafka's
classicGroupJoinToConsumerGroup, classicGroupSyncToConsumerGroup,
classicGroupHeartbeatToConsumerGroup, classicGroupLeaveToConsumerGroup): the
`consumer` rows of JoinGroup, SyncGroup, Heartbeat and LeaveGroup in the
shard's request table (`coordinator/routes.py`). The seam where the classic
protocol meets consumer groups: it may use the classic join (a JoinGroup for
an empty consumer group starts a classic group, Kafka's offline downgrade)
and `groups/migration.py`.

A classic client never runs an assignor here: the server assigns, as for any
member. Its JoinGroup carries its subscription (and, cooperative, what it
owns) in the ConsumerProtocol metadata; the join updates the member, bumps
the group epoch when that changed, computes the target and reconciles the
member one step, and answers with the member's epoch as the generation. Its
SyncGroup answers the member's current assignment (what reconciliation gave
it: never a partition another member has yet to revoke). Its Heartbeat
answers REBALANCE_IN_PROGRESS when the member must rejoin to move on.

Transient state: the join deadline of members told to rejoin
(`GroupStore.classic_join_due`), so repeated heartbeats do not push it back
(Kafka's scheduleIfAbsent).
"""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import Any

from muster.coordinator import errors as E
from muster.coordinator import events_modern as ce
from muster.coordinator import requests as rq
from muster.coordinator import responses as rs
from muster.coordinator.context import Effects
from muster.coordinator.groups import migration as mg
from muster.coordinator.groups.classic import join as classic_join
from muster.coordinator.groups.modern import heartbeat as hb
from muster.coordinator.groups.modern.group import (
    ConsumerGroup,
    member_metadata_record,
    removal_records,
    subscription_metadata_record,
)
from muster.coordinator.groups.modern.member import ConsumerMember, MemberState
from muster.coordinator.groups.modern.writes import discard, tombstones
from muster.coordinator.groups.store import GroupStore
from muster.protocol import consumer_protocol as cp


def _protocol_name(m: ConsumerMember) -> str:
    assert m.classic is not None
    return m.classic.supported_protocols[0].name if m.classic.supported_protocols else ""


def supports(group: ConsumerGroup, protocol_type: str, names: list[str]) -> bool:
    """Kafka's ConsumerGroup.supportsClassicProtocols: a protocol every
    classic member supports."""
    if protocol_type != cp.PROTOCOL_TYPE or not names:
        return False
    classic = [m for m in group.members.values() if m.classic is not None]
    return any(
        all(name in {p.name for p in m.classic.supported_protocols} for m in classic)  # type: ignore[union-attr]
        for name in names
    )


def _member(group: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerMember:
    """Kafka's validateConsumerGroupMember plus throwIfMemberDoesNotUseClassicProtocol."""
    if instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            raise hb.Reject(E.UNKNOWN_MEMBER_ID, f"Member {member_id} is unknown.")
    else:
        member = group.static_member(instance_id)
        if member is None:
            raise hb.Reject(E.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
        if member_id and member.member_id != member_id:
            raise hb.Reject(E.FENCED_INSTANCE_ID, f"Instance id {instance_id} is fenced.")
    if not member.uses_classic:
        raise hb.Reject(
            E.UNKNOWN_MEMBER_ID, f"Member {member_id} does not use the classic protocol."
        )
    return member


# ---- JoinGroup ------------------------------------------------------------------


def join_group(store: GroupStore, fx: Effects, rid: int, req: rq.JoinGroup) -> None:
    """A classic JoinGroup for a consumer group: a member joins it (`join`);
    for an empty one the group is dropped (its records tombstoned, its
    offsets kept) and a classic group starts, as Kafka's offline downgrade."""
    group = store.modern[req.group_id]
    if group.members:
        join(store, fx, rid, req)
    else:
        tombstones(store, fx, group)
        classic_join.handle_join_group(store, fx, rid, req)


def join(store: GroupStore, fx: Effects, rid: int, req: rq.JoinGroup) -> None:
    try:
        resp = _join(store, fx, req)
    except hb.Reject as r:
        discard(store, fx)  # an error answer changes nothing, even after a static replacement
        fx.reply(rid, rs.JoinGroupResponse(r.code, member_id=req.member_id))
        return
    if resp.error_code != E.NONE or not fx.records:
        fx.reply(rid, resp)
    else:
        fx.after_durable(partial(_joined, rid, resp))


def _joined(rid: int, resp: rs.JoinGroupResponse, error: int, fx: Effects) -> None:
    fx.reply(
        rid, resp if error == E.NONE else rs.JoinGroupResponse(E.append_error_to_client(error))
    )


def _join(store: GroupStore, fx: Effects, req: rq.JoinGroup) -> rs.JoinGroupResponse:
    gid = req.group_id
    group = store.modern[gid]
    cfg = store.cfg
    member_id = req.member_id or store.new_member_id(req.group_instance_id or req.client_id)
    if member_id not in group.members and len(group.members) >= cfg.consumer_max_size:
        raise hb.Reject(E.GROUP_MAX_SIZE_REACHED, "The consumer group is full.")
    if not supports(group, req.protocol_type, [name for name, _ in req.protocols]):
        raise hb.Reject(
            E.INCONSISTENT_GROUP_PROTOCOL, f"Member {member_id}'s protocols are not supported."
        )
    if req.require_known_member_id and not req.member_id:
        return rs.JoinGroupResponse(E.MEMBER_ID_REQUIRED, member_id=member_id)
    if not (
        cfg.group_min_session_timeout_ms
        <= req.session_timeout_ms
        <= cfg.group_max_session_timeout_ms
    ):
        raise hb.Reject(E.INVALID_SESSION_TIMEOUT, "Session timeout out of bounds.")
    try:
        sub = cp.decode_subscription(req.protocols[0][1])
    except cp.ConsumerProtocolError:
        raise hb.Reject(
            E.INCONSISTENT_GROUP_PROTOCOL, "Malformed consumer protocol metadata."
        ) from None
    image = req.topics if req.topics is not None else group.topics
    # Kafka decides on the group as it was before this join (its records
    # apply later): the static member of this instance id is the one replaced
    existing = None if req.group_instance_id is None else group.static_member(req.group_instance_id)
    downgrade = existing is not None and mg.should_downgrade_replaced(
        store, group, existing.member_id
    )
    known = group.members.get(member_id)
    if known is not None and not known.uses_classic:
        raise hb.Reject(
            E.UNKNOWN_MEMBER_ID, f"Member {member_id} does not use the classic protocol."
        )
    cause = ""
    if req.group_instance_id is not None:
        static = group.static_member(req.group_instance_id)
        if static is not None and static.member_id != member_id:
            if req.member_id:
                raise hb.Reject(
                    E.FENCED_INSTANCE_ID, f"Instance id {req.group_instance_id} is fenced."
                )
            known = _replace_static(store, fx, group, static, member_id)
            group = store.modern[gid]
            cause = ce.CONSUMER_STATIC_MEMBER_REPLACED
    member = known or ConsumerMember(member_id)
    updated = dataclasses.replace(
        member,
        instance_id=req.group_instance_id
        if req.group_instance_id is not None
        else member.instance_id,
        rack_id=sub.rack_id if sub.rack_id is not None else member.rack_id,
        rebalance_timeout_ms=req.rebalance_timeout_ms,
        server_assignor=None,
        subscribed_topic_names=frozenset(sub.topics),
        client_id=req.client_id,
        client_host=req.client_host,
        classic=mg.classic_metadata(req.session_timeout_ms, req.protocols),
    )
    changed = known is None or updated.subscribed_topic_names != member.subscribed_topic_names
    if known is None or updated != member:
        hb.write(store, fx, *member_metadata_record(gid, updated))
        group = store.modern[gid]
    cause = cause or (
        ce.CLASSIC_MEMBER_JOINED if known is None else ce.CONSUMER_SUBSCRIPTION_CHANGED
    )
    topics = hb.subscription_metadata(group, image)
    if topics != group.topics:
        hb.write(store, fx, *subscription_metadata_record(gid, topics))
        cause = cause if changed else ce.CONSUMER_METADATA_CHANGED
        changed = True
    if changed:
        hb.write(store, fx, *hb.epoch_record(gid, group.epoch + 1))
        fx.emit(
            ce.ConsumerGroupEpochBumped(
                gid, group.epoch, cause, member_id, "", len(group.members), fx.now
            )
        )
    if group.epoch > group.assignment_epoch:
        hb.compute_target(store, fx, group, image)
    owned = tuple(sorted(mg.by_id(sub.owned_partitions, _names(group, image)).items()))
    after = hb.reconcile_member(store, fx, group, group.members[member_id], owned)
    store.classic_join_due.pop((gid, member_id), None)
    fx.cancel(hb.join_timer(gid, member_id))
    if downgrade:  # the last consumer-protocol static member was replaced
        mg.downgrade_replaced(store, fx, store.modern[gid], existing.member_id)  # type: ignore[union-attr]
    else:
        fx.schedule(hb.session_key(gid, member_id), fx.now + req.session_timeout_ms)
        fx.schedule(hb.sync_timer(gid, member_id), fx.now + max(req.rebalance_timeout_ms, 0))
    return rs.JoinGroupResponse(
        E.NONE,
        generation_id=after.member_epoch,
        protocol_type=cp.PROTOCOL_TYPE,
        protocol_name=_protocol_name(after),
        leader="",
        member_id=member_id,
    )


def _names(group: ConsumerGroup, image: Any) -> Any:
    """What a classic member owns is named by topic: the broker's topics, else
    the group's own subscription metadata."""
    return image if image else group.topics


def _replace_static(
    store: GroupStore, fx: Effects, group: ConsumerGroup, old: ConsumerMember, new_id: str
) -> ConsumerMember:
    """A static member's new incarnation takes its target over (as Kafka's
    static replacement); it owns nothing yet."""
    gid = group.group_id
    inherited = group.targets.get(old.member_id, {})
    for key, value in removal_records(gid, old.member_id):
        hb.write(store, fx, key, value)
    for key in (hb.session_key, hb.revocation_key, hb.join_timer, hb.sync_timer):
        fx.cancel(key(gid, old.member_id))
    fresh = dataclasses.replace(
        old,
        member_id=new_id,
        member_epoch=0,
        previous_member_epoch=0,
        assigned={},
        pending_revocation={},
    )
    hb.write(store, fx, *member_metadata_record(gid, fresh))
    hb.write(store, fx, *hb.target_member_record(gid, new_id, inherited))
    hb.write(store, fx, *hb.current_assignment_record(gid, fresh))
    fx.emit(
        ce.ConsumerMemberRemoved(
            gid, old.member_id, old.instance_id, ce.CONSUMER_STATIC_MEMBER_REPLACED, fx.now
        )
    )
    return fresh


# ---- SyncGroup, Heartbeat -------------------------------------------------------------


def _at_generation(group: ConsumerGroup, req: rq.SyncGroup | rq.Heartbeat) -> ConsumerMember:
    """The classic member, at the generation it says (Kafka's throwIfGenerationIdUnmatched)."""
    member = _member(group, req.member_id, req.group_instance_id)
    if req.generation_id != member.member_epoch:
        raise hb.Reject(E.ILLEGAL_GENERATION, "Generation is not the member epoch.")
    return member


def sync(store: GroupStore, fx: Effects, rid: int, req: rq.SyncGroup) -> None:
    group = store.modern[req.group_id]
    try:
        member = _at_generation(group, req)
        name = _protocol_name(member)
        if (req.protocol_type is not None and req.protocol_type != cp.PROTOCOL_TYPE) or (
            req.protocol_name is not None and req.protocol_name != name
        ):
            raise hb.Reject(E.INCONSISTENT_GROUP_PROTOCOL, "Protocol does not match the join.")
        _check_rebalance(store, fx, group, member)
    except hb.Reject as r:
        fx.reply(rid, rs.SyncGroupResponse(r.code))
        return
    gid, mid = group.group_id, member.member_id
    fx.cancel(hb.sync_timer(gid, mid))
    fx.schedule(hb.session_key(gid, mid), fx.now + member.classic.session_timeout_ms)  # type: ignore[union-attr]
    metadata = member.classic.supported_protocols[0].metadata  # type: ignore[union-attr]
    assignment = mg.encode_assignment(group, member.assigned, metadata)
    fx.reply(rid, rs.SyncGroupResponse(E.NONE, cp.PROTOCOL_TYPE, name, assignment))


def _check_rebalance(
    store: GroupStore, fx: Effects, group: ConsumerGroup, member: ConsumerMember
) -> None:
    """Kafka's throwIfRebalanceInProgress: a member behind the group epoch
    rejoins, unless it is revoking (its rejoin comes once that is done)."""
    if group.epoch > member.member_epoch and member.state is not MemberState.UNREVOKED_PARTITIONS:
        _due_join(store, fx, group, member)
        raise hb.Reject(E.REBALANCE_IN_PROGRESS, "The member must rejoin.")


def _due_join(store: GroupStore, fx: Effects, group: ConsumerGroup, member: ConsumerMember) -> None:
    key = (group.group_id, member.member_id)
    if key not in store.classic_join_due:
        store.classic_join_due[key] = fx.now + max(member.rebalance_timeout_ms, 0)
        fx.schedule(hb.join_timer(*key), store.classic_join_due[key])


def heartbeat(store: GroupStore, fx: Effects, rid: int, req: rq.Heartbeat) -> None:
    group = store.modern[req.group_id]
    try:
        member = _at_generation(group, req)
    except hb.Reject as r:
        fx.reply(rid, rs.HeartbeatResponse(r.code))
        return
    fx.schedule(
        hb.session_key(group.group_id, member.member_id),
        fx.now + member.classic.session_timeout_ms,  # type: ignore[union-attr]
    )
    rejoin = (
        member.member_epoch < group.epoch
        or member.state is MemberState.UNREVOKED_PARTITIONS
        or (member.state is MemberState.UNRELEASED_PARTITIONS and not _waiting(group, member))
    )
    if rejoin:
        _due_join(store, fx, group, member)
    fx.reply(rid, rs.HeartbeatResponse(E.REBALANCE_IN_PROGRESS if rejoin else E.NONE))


def _waiting(group: ConsumerGroup, member: ConsumerMember) -> bool:
    """Kafka's waitingOnUnreleasedPartition: a target partition it lacks is still held."""
    for topic, parts in group.targets.get(member.member_id, {}).items():
        have = member.assigned.get(topic, frozenset())
        if any(p not in have and group.partition_epoch(topic, p) != -1 for p in parts):
            return True
    return False


# ---- LeaveGroup -------------------------------------------------------------------


def leave(store: GroupStore, fx: Effects, rid: int, req: rq.LeaveGroup) -> None:
    gid = req.group_id
    group = store.modern[gid]
    out = []
    left = []
    for who in req.members:
        try:
            member = _member(group, who.member_id, who.group_instance_id)
        except hb.Reject as r:
            out.append(rs.LeaveGroupMemberResponse(who.member_id, who.group_instance_id, r.code))
            continue
        if member.member_id in left:
            continue
        left.append(member.member_id)
        for key, value in removal_records(gid, member.member_id):
            hb.write(store, fx, key, value)
        for key in (hb.session_key, hb.revocation_key, hb.join_timer, hb.sync_timer):
            fx.cancel(key(gid, member.member_id))
        store.classic_join_due.pop((gid, member.member_id), None)
        fx.emit(
            ce.ConsumerMemberRemoved(
                gid, member.member_id, member.instance_id, ce.CLASSIC_MEMBER_LEFT, fx.now
            )
        )
        out.append(rs.LeaveGroupMemberResponse(member.member_id, who.group_instance_id, E.NONE))
    if left:
        group = store.modern[gid]
        topics = hb.subscription_metadata(group, group.topics)
        if topics != group.topics:
            hb.write(store, fx, *subscription_metadata_record(gid, topics))
        hb.write(store, fx, *hb.epoch_record(gid, group.epoch + 1))
        fx.emit(
            ce.ConsumerGroupEpochBumped(
                gid, group.epoch, ce.CLASSIC_MEMBER_LEFT, left[0], "", len(group.members), fx.now
            )
        )
    resp = rs.LeaveGroupResponse(E.NONE, tuple(out))
    if fx.records:
        fx.after_durable(partial(_left, rid, resp))
    else:
        fx.reply(rid, resp)


def _left(rid: int, resp: rs.LeaveGroupResponse, error: int, fx: Effects) -> None:
    fx.reply(
        rid, resp if error == E.NONE else rs.LeaveGroupResponse(E.append_error_to_client(error))
    )


# ---- timers ------------------------------------------------------------------------


def on_join_or_sync_timer(
    store: GroupStore, fx: Effects, kind: str, group_id: str, member_id: str
) -> None:
    """A classic member did not rejoin / sync in time: it is fenced."""
    store.classic_join_due.pop((group_id, member_id), None)
    group = store.modern.get(group_id)
    member = None if group is None else group.members.get(member_id)
    if group is not None and member is not None:
        cause = ce.CLASSIC_JOIN_TIMEOUT if kind == "consumer-join" else ce.CLASSIC_SYNC_TIMEOUT
        hb.fence(store, fx, group, member, cause, None)
