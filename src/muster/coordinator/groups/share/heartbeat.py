"""ShareGroupHeartbeat (76): join, stay, change subscription, leave.

A share member never revokes anything (its partitions are shared, records
are locked one by one in the share partitions), so there is no
reconciliation as in modern groups: every heartbeat that sees the target
moved gets the new target at once, with the assignment epoch as its member
epoch (Kafka's ShareGroupAssignmentBuilder likewise). Records are applied
when written (`write`), as modern groups do, and restored by the domain
if the append fails.
"""

from __future__ import annotations

from muster.coordinator import errors as E
from muster.coordinator.context import Effects, TimerKey
from muster.coordinator.groups.share import assignor
from muster.coordinator.groups.share.api import (
    Assignment,
    ShareGroupHeartbeat,
    ShareGroupHeartbeatResponse,
    ShareOffsetsChange,
    ShareOffsetsChangeResponse,
)
from muster.coordinator.groups.share.group import (
    ShareGroup,
    apply,
    as_topic_partitions,
)
from muster.coordinator.groups.store import GroupStore
from muster.records.share_group_records import (
    ShareGroupCurrentMemberAssignmentKey,
    ShareGroupCurrentMemberAssignmentValue,
    ShareGroupMemberMetadataKey,
    ShareGroupMemberMetadataValue,
    ShareGroupMetadataKey,
    ShareGroupMetadataValue,
    ShareGroupTargetAssignmentMemberKey,
    ShareGroupTargetAssignmentMemberValue,
    ShareGroupTargetAssignmentMetadataKey,
    ShareGroupTargetAssignmentMetadataValue,
    share_group_record,
)

LEAVE_EPOCH = -1
SESSION = "share-session"


def session_key(group_id: str, member_id: str) -> TimerKey:
    return TimerKey(SESSION, group_id, member_id)


def write(store: GroupStore, fx: Effects, key: object, value: object | None) -> None:
    """Append one ShareGroup* record and apply it now, remembering the group
    as it was before this step (the domain restores it if the append fails)."""
    gid: str = key.group_id  # type: ignore[attr-defined]
    if gid not in fx.share_undo:
        before = store.share.get(gid)
        fx.share_undo[gid] = None if before is None else before.copy()
    fx.record(share_group_record(key, value))
    apply(store.share, key, value)


def _error(fx: Effects, rid: int, code: int, message: str | None = None) -> None:
    fx.reply(rid, ShareGroupHeartbeatResponse(code, message))


def handle_heartbeat(store: GroupStore, fx: Effects, rid: int, req: ShareGroupHeartbeat) -> None:
    """The share kind's row (a classic id nobody uses yet becomes a share group)."""
    gid, mid = req.group_id, req.member_id
    if not mid:
        return _error(fx, rid, E.INVALID_REQUEST, "MemberId can't be empty.")
    if req.member_epoch < LEAVE_EPOCH:
        return _error(fx, rid, E.INVALID_REQUEST, "MemberEpoch is invalid.")
    if req.member_epoch == 0 and not req.subscribed_topic_names:
        return _error(
            fx, rid, E.INVALID_REQUEST, "SubscribedTopicNames must be set in first request."
        )
    classic = store.get(gid)
    if gid not in store.share and (
        gid in store.modern or (classic is not None and bool(classic.members))
    ):
        return _error(fx, rid, E.GROUP_ID_NOT_FOUND, f"Group {gid} is not a share group.")
    group = store.share.get(gid)
    member = None if group is None else group.members.get(mid)
    if req.member_epoch == LEAVE_EPOCH:
        if group is not None and member is not None:
            _remove(store, fx, group, mid, req.topics)
        fx.reply(rid, ShareGroupHeartbeatResponse(E.NONE, None, mid, LEAVE_EPOCH))
        return None
    if req.member_epoch != 0:
        if group is None:  # Kafka: only a join makes the group
            return _error(fx, rid, E.GROUP_ID_NOT_FOUND, f"Group {gid} not found.")
        if member is None:
            return _error(
                fx, rid, E.UNKNOWN_MEMBER_ID, f"Member {mid} is not a member of group {gid}."
            )
        if req.member_epoch != member.member_epoch:
            return _error(
                fx, rid, E.FENCED_MEMBER_EPOCH, "The share group member has a smaller member epoch."
            )
    elif group is not None and member is None and len(group.members) >= store.cfg.share_max_size:
        return _error(
            fx, rid, E.GROUP_MAX_SIZE_REACHED, "The share group has reached its maximum capacity."
        )
    # transient: what a session timer retargets against
    store.share_topics[gid] = req.topics
    if group is None:
        write(store, fx, ShareGroupMetadataKey(gid), ShareGroupMetadataValue(0))
        group = store.share[gid]
    # the member's metadata, written when new or changed
    subscribed = (
        tuple(req.subscribed_topic_names)
        if req.subscribed_topic_names is not None
        else (member.subscribed if member else ())
    )
    new_meta = ShareGroupMemberMetadataValue(
        req.rack_id, req.client_id, req.client_host, tuple(sorted(subscribed))
    )
    old = member
    if old is None or (
        old.rack_id,
        old.client_id,
        old.client_host,
        tuple(sorted(old.subscribed)),
    ) != (
        new_meta.rack_id,
        new_meta.client_id,
        new_meta.client_host,
        new_meta.subscribed_topic_names,
    ):
        write(store, fx, ShareGroupMemberMetadataKey(gid, mid), new_meta)
    _retarget(store, fx, group, req.topics)
    member = group.members[mid]
    sent: Assignment | None = None
    target = group.target.get(mid, {})
    if (
        member.member_epoch != group.assignment_epoch
        or member.assigned != target
        or req.member_epoch == 0
    ):
        if member.member_epoch != group.assignment_epoch or member.assigned != target:
            write(
                store,
                fx,
                ShareGroupCurrentMemberAssignmentKey(gid, mid),
                ShareGroupCurrentMemberAssignmentValue(
                    group.assignment_epoch, member.member_epoch, 0, as_topic_partitions(target)
                ),
            )
        sent = tuple((t, tuple(sorted(ps))) for t, ps in sorted(target.items()))
    fx.schedule(session_key(gid, mid), fx.now + store.cfg.share_session_timeout_ms)
    fx.reply(
        rid,
        ShareGroupHeartbeatResponse(
            E.NONE,
            None,
            mid,
            member.member_epoch,
            store.cfg.share_heartbeat_interval_ms,
            sent,
        ),
    )
    return None


def handle_offsets_change(
    store: GroupStore, fx: Effects, rid: int, req: ShareOffsetsChange
) -> None:
    """The share kind's row (and an unused id's) for Alter/DeleteShareGroupOffsets."""
    gid = req.group_id
    classic = store.get(gid)
    if gid not in store.share and (
        gid in store.modern or (classic is not None and bool(classic.members))
    ):
        fx.reply(
            rid,
            ShareOffsetsChangeResponse(E.GROUP_ID_NOT_FOUND, f"Group {gid} is not a share group."),
        )
        return
    group = store.share.get(gid)
    if group is not None and group.members:
        fx.reply(
            rid, ShareOffsetsChangeResponse(E.NON_EMPTY_GROUP, f"Share group {gid} is not empty.")
        )
        return
    if group is None:
        write(store, fx, ShareGroupMetadataKey(gid), ShareGroupMetadataValue(0))
    fx.reply(rid, ShareOffsetsChangeResponse(E.NONE))


def _retarget(store: GroupStore, fx: Effects, group: ShareGroup, topics: object) -> None:
    """Compute the target assignment; if it moved, bump the group epoch and
    write the new target (Kafka bumps on membership, subscription and topic
    metadata changes; computing the target every time catches all three)."""
    target = assignor.assign(group.members, topics)  # type: ignore[arg-type]
    if target == group.target and group.assignment_epoch == group.epoch and group.epoch > 0:
        return
    gid = group.group_id
    epoch = group.epoch + 1
    write(store, fx, ShareGroupMetadataKey(gid), ShareGroupMetadataValue(epoch))
    for mid, parts in sorted(target.items()):
        if group.target.get(mid) != parts:
            write(
                store,
                fx,
                ShareGroupTargetAssignmentMemberKey(gid, mid),
                ShareGroupTargetAssignmentMemberValue(as_topic_partitions(parts)),
            )
    write(
        store,
        fx,
        ShareGroupTargetAssignmentMetadataKey(gid),
        ShareGroupTargetAssignmentMetadataValue(epoch),
    )


def _remove(store: GroupStore, fx: Effects, group: ShareGroup, mid: str, topics: object) -> None:
    """A member leaves or its session expired: its records go, the rest are retargeted."""
    gid = group.group_id
    write(store, fx, ShareGroupCurrentMemberAssignmentKey(gid, mid), None)
    write(store, fx, ShareGroupTargetAssignmentMemberKey(gid, mid), None)
    write(store, fx, ShareGroupMemberMetadataKey(gid, mid), None)
    fx.cancel(session_key(gid, mid))
    _retarget(store, fx, group, topics)


def session_expired(store: GroupStore, fx: Effects, key: TimerKey) -> None:
    """A member stopped heartbeating: it is removed and the rest retargeted
    over the topics the group's last heartbeat saw (a timer has no image)."""
    group = store.share.get(key.group_id)
    if group is None or key.member_id not in group.members:
        return
    _remove(store, fx, group, key.member_id, store.share_topics.get(key.group_id, {}))


def tombstones(store: GroupStore, fx: Effects, group: ShareGroup) -> None:
    """An empty share group's records go (DeleteGroups)."""
    gid = group.group_id
    store.share_topics.pop(gid, None)
    for mid in list(group.target):
        write(store, fx, ShareGroupTargetAssignmentMemberKey(gid, mid), None)
    write(store, fx, ShareGroupTargetAssignmentMetadataKey(gid), None)
    write(store, fx, ShareGroupMetadataKey(gid), None)


def arm_timers(store: GroupStore, fx: Effects) -> None:
    """After a load every member gets a fresh session (Kafka does likewise)."""
    for group in store.share.values():
        for mid in group.members:
            fx.schedule(
                session_key(group.group_id, mid), fx.now + store.cfg.share_session_timeout_ms
            )
