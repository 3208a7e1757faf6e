"""What the coordinator shard does for consumer groups beyond their rows in
its request table (`coordinator/routes.py`): timers, the timers that follow
a restored snapshot (`retime`, see `domain.py`), replay, the member checks of
OffsetCommit / OffsetFetch, DescribeGroups / ListGroups / DeleteGroups /
OffsetDelete on a consumer group."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from muster.coordinator import errors as E
from muster.coordinator import responses as rs
from muster.coordinator.context import Effects, TimerKey
from muster.coordinator.groups.classic import timers as classic_timers
from muster.coordinator.groups.classic.members import schedule_heartbeat
from muster.coordinator.groups.classic.timers import TimerHandler
from muster.coordinator.groups.modern import classic_bridge
from muster.coordinator.groups.modern import heartbeat as hb
from muster.coordinator.groups.modern.api import (
    ConsumerGroupDescribe,
)
from muster.coordinator.groups.modern.describe import handle_describe, not_found
from muster.coordinator.groups.modern.group import ConsumerGroup, apply
from muster.coordinator.groups.modern.member import ConsumerMember, MemberState
from muster.coordinator.groups.modern.writes import tombstones
from muster.coordinator.groups.store import GroupStore
from muster.records.modern_group_records import (
    decode_consumer_group_key,
    decode_consumer_group_value,
)
from muster.records.offsets_topic import record_type

CLASSIC_TIMER_KINDS = frozenset(classic_timers.TIMERS)


def replay(store: GroupStore, key: bytes, value: bytes | None) -> None:
    """Apply a ConsumerGroup* record read from the log (the shard's replay
    table sends only those here; a key of a type this muster does not read
    is skipped, like Kafka)."""
    typed = decode_consumer_group_key(key)
    if typed is None:
        return
    decoded = None if value is None else decode_consumer_group_value(record_type(key), value)
    apply(store.modern, typed, decoded)


def retime(store: GroupStore, fx: Effects, group_ids: set[str], armed: list[TimerKey]) -> None:
    """After a revert: the timers of the reverted groups match their members
    again. A member a failed join added is gone (its timers go, or its
    session would later expire a member that never was); a member a failed
    leave or expiry removed is back (it gets a full session again, as after
    a load); a revocation timer only for a member still revoking."""
    for key in armed:
        if key.kind in CLASSIC_TIMER_KINDS and key.group_id in group_ids:
            classic = store.get(key.group_id)
            if classic is None:  # a failed downgrade's classic group
                fx.cancel(key)
            elif _orphaned(classic, key):
                # the restored classic group replaced a newer one (a classic
                # group made after the upgrade, reverted with it): that
                # group's members are gone, so are their timers
                fx.cancel(key)
        if key.kind in TIMERS and key.group_id in group_ids:
            group = store.modern.get(key.group_id)
            member = None if group is None else group.members.get(key.member_id)
            revoking = member is not None and member.state is MemberState.UNREVOKED_PARTITIONS
            if member is None or (key.kind == "consumer-revocation" and not revoking):
                fx.cancel(key)
    have = {(k.kind, k.group_id, k.member_id) for k in armed}
    for group_id in sorted(group_ids):
        classic = store.get(group_id)
        if group_id not in store.modern and classic is not None:
            for member in classic.members.values():  # a failed upgrade: classic again
                schedule_heartbeat(classic, member, fx)
        group = store.modern.get(group_id)
        for m in [] if group is None else group.members.values():
            if ("consumer-session", group_id, m.member_id) not in have:
                fx.schedule(hb.session_key(group_id, m.member_id), fx.now + session_ms(store, m))
            revoking = m.state is MemberState.UNREVOKED_PARTITIONS
            if revoking and ("consumer-revocation", group_id, m.member_id) not in have:
                fx.schedule(
                    hb.revocation_key(group_id, m.member_id),
                    fx.now + max(m.rebalance_timeout_ms, 0),
                )


def _orphaned(classic: Any, key: TimerKey) -> bool:
    """A member timer of a classic group for a member it does not have."""
    if key.kind == "pending":
        return key.member_id not in classic.pending_members
    if key.kind == "heartbeat":
        return key.member_id not in classic.members
    return False


def describe(
    store: GroupStore, fx: Effects, rid: int, req: ConsumerGroupDescribe, errors: list[int | None]
) -> None:
    resp = handle_describe(store, req)
    groups = tuple(
        g if error is None else {**not_found(g["group_id"], ""), "error_code": error}
        for g, error in zip(resp.groups, errors, strict=True)
    )
    fx.reply(rid, type(resp)(groups))


def _session_timer(store: GroupStore, fx: Effects, key: TimerKey) -> None:
    hb.on_session_timer(store, fx, key.group_id, key.member_id)


def _revocation_timer(store: GroupStore, fx: Effects, key: TimerKey) -> None:
    hb.on_revocation_timer(store, fx, key.group_id, key.member_id)


def _classic_member_timer(store: GroupStore, fx: Effects, key: TimerKey) -> None:
    classic_bridge.on_join_or_sync_timer(store, fx, key.kind, key.group_id, key.member_id)


# the consumer groups' timers, by kind (see writes.py for their keys)
TIMERS: dict[str, TimerHandler] = {
    "consumer-session": _session_timer,
    "consumer-revocation": _revocation_timer,
    "consumer-join": _classic_member_timer,  # a classic member told to rejoin did not
    "consumer-sync": _classic_member_timer,  # a classic member that joined did not sync
}


def arm_timers(store: GroupStore, fx: Effects) -> None:
    """After a load: every member gets a full session, and a member that must
    give partitions up a full rebalance timeout, from now."""
    for group in store.modern.values():
        for m in group.members.values():
            fx.schedule(
                hb.session_key(group.group_id, m.member_id),
                fx.now + session_ms(store, m),
            )
            if m.state is MemberState.UNREVOKED_PARTITIONS:
                fx.schedule(
                    hb.revocation_key(group.group_id, m.member_id),
                    fx.now + max(m.rebalance_timeout_ms, 0),
                )
        if store.get(group.group_id) is not None and not store.get(group.group_id).members:  # type: ignore[union-attr]
            # the empty classic group that replayed offsets made for it
            store.remove(group.group_id)


def validate_commit(store: GroupStore, group: ConsumerGroup, req: Any) -> int | None:
    """Kafka's ConsumerGroup.validateOffsetCommit (`req` an OffsetCommit or a
    TxnOffsetCommit; epochs travel in generation_id)."""
    if req.generation_id < 0 and not group.members:
        return None  # admin clients and assign()-mode consumers
    member = group.members.get(req.member_id)
    if member is None:
        return E.UNKNOWN_MEMBER_ID
    if member.uses_classic:  # a classic client commits with its generation
        return None if req.generation_id == member.member_epoch else E.ILLEGAL_GENERATION
    if getattr(req, "api_version", 9) < 9:
        return E.UNSUPPORTED_VERSION
    if req.generation_id != member.member_epoch:
        return E.STALE_MEMBER_EPOCH
    return None


def validate_fetch(group: ConsumerGroup, member_id: str | None, member_epoch: int) -> int | None:
    """Kafka's ConsumerGroup.validateOffsetFetch."""
    if member_id is None and member_epoch < 0:
        return None
    member = group.members.get(member_id or "")
    if member is None:
        return E.UNKNOWN_MEMBER_ID
    if member_epoch != member.member_epoch:
        return E.STALE_MEMBER_EPOCH
    return None


def all_groups(store: GroupStore) -> Iterable[ConsumerGroup]:
    return list(store.modern.values())


def delete_group(offsets: Any, fx: Effects, group: ConsumerGroup) -> int:
    """DeleteGroups on a consumer group: only an empty one goes (Kafka's
    ConsumerGroup.validateDeleteGroup), with its offsets and its records."""
    if group.members:
        return E.NON_EMPTY_GROUP
    offsets.remove_offsets(group, offsets.removable(group.group_id), fx)
    tombstones(offsets.store, fx, group)
    return E.NONE


def session_ms(store: GroupStore, m: ConsumerMember) -> int:
    """A classic member's session is its JoinGroup's; others the broker's."""
    if m.classic is not None:
        return m.classic.session_timeout_ms
    return store.cfg.consumer_session_timeout_ms


def offset_delete(offsets: Any, fx: Effects, group: ConsumerGroup, req: Any) -> Any:
    """OffsetDelete on a consumer group: refused for topics a member subscribes
    to (GROUP_SUBSCRIBED_TO_TOPIC), as Kafka's ConsumerGroup.isSubscribedToTopic."""
    subscribed = group.subscribed_topics()
    errors: dict[tuple[str, int], int] = {}
    eligible = []
    for t in req.topics:
        for p in t.partitions:
            if t.name in subscribed:
                errors[(t.name, p)] = E.GROUP_SUBSCRIBED_TO_TOPIC
            else:
                errors[(t.name, p)] = E.NONE
                eligible.append((t.name, p))
    if eligible:
        offsets.remove_offsets(group, eligible, fx)
    return rs.OffsetDeleteResponse(
        E.NONE,
        tuple(
            rs.TopicErrors(
                t.name, tuple(rs.PartitionError(p, errors[(t.name, p)]) for p in t.partitions)
            )
            for t in req.topics
        ),
    )
