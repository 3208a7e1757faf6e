"""Online migration between the group types (Kafka's convertToConsumerGroup /
convertToClassicGroup, ConsumerGroup.fromClassicGroup,
ClassicGroup.fromConsumerGroup), under `group.consumer.migration.policy`.

- **Upgrade**: the first ConsumerGroupHeartbeat (epoch 0) for a live classic
  group whose members speak the "consumer" embedded protocol turns it into a
  consumer group: the GroupMetadata record is tombstoned and every classic
  member becomes a consumer-group member at the classic generation, with its
  last assignment as both its current and target assignment and its
  JoinGroup protocols kept (ClassicMemberMetadata). The joining member then
  bumps the epoch as any join does, and the classic members learn it from
  their next Heartbeat (REBALANCE_IN_PROGRESS).
- **Downgrade**: when the last consumer-protocol member leaves (or is fenced)
  and every other member speaks the classic protocol, the consumer group's
  records are tombstoned and a Stable classic group at the group epoch is
  stored, each member holding what it holds now (assigned or revoking; Kafka
  writes its target, see `downgrade`); it then rebalances. Likewise when a
  classic static member replaces the last consumer-protocol static member
  (same group.instance.id; `downgrade_replaced`), without a rebalance when
  every member holds its target.

Both write their records through `writes.write` (consumer records,
applied at once) or the classic GroupMetadata record (applied once durable);
a failed append restores the group as it was (`writes.revert`).
"""

from __future__ import annotations

from muster.coordinator import errors as E
from muster.coordinator import events_modern as ce
from muster.coordinator.context import (
    Effects,
    heartbeat_key,
    join_key,
    pending_key,
    sync_key,
)
from muster.coordinator.groups.classic.group import ClassicGroup, Member
from muster.coordinator.groups.classic.members import schedule_heartbeat
from muster.coordinator.groups.classic.persist import store_group
from muster.coordinator.groups.classic.rebalance import prepare_rebalance
from muster.coordinator.groups.classic.state import GroupState
from muster.coordinator.groups.modern.group import (
    ConsumerGroup,
    current_assignment_record,
    epoch_record,
    member_metadata_record,
    regex_record,
    target_member_record,
)
from muster.coordinator.groups.modern.member import ConsumerMember, MemberState, Partitions
from muster.coordinator.groups.modern.target import SubscribedTopic
from muster.coordinator.groups.modern.validate import Reject
from muster.coordinator.groups.modern.writes import (
    join_timer,
    revocation_key,
    session_key,
    sync_timer,
    write,
)
from muster.coordinator.groups.store import GroupStore
from muster.coordinator.responses import JoinGroupResponse, SyncGroupResponse
from muster.protocol import consumer_protocol as cp
from muster.records.modern_group_records import (
    ClassicMemberMetadata,
    ClassicProtocol,
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMetadataKey,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
)
from muster.records.offsets_topic import GroupMetadataKey, encode_key

PROTOCOL_TYPE = cp.PROTOCOL_TYPE


# ---- names <-> topic ids ----------------------------------------------------------


def by_id(pairs: cp.TopicPartitions, image: object) -> Partitions:
    """Partitions named by topic, keyed by topic id (topics the image does not
    know are dropped, as Kafka's toTopicPartitionMap does)."""
    out: dict[object, frozenset[int]] = {}
    for name, parts in pairs:
        found: SubscribedTopic | None = image.get(name)  # type: ignore[attr-defined]
        if found is not None and parts:
            out[found.topic_id] = out.get(found.topic_id, frozenset()) | frozenset(parts)
    return out  # type: ignore[return-value]


def encode_assignment(group: ConsumerGroup, parts: Partitions, metadata: bytes) -> bytes:
    """A member's partitions as a ConsumerProtocol Assignment, at the version
    of its subscription (Kafka's prepareAssignment)."""
    names = group.topic_names()
    pairs = {names[t]: sorted(ps) for t, ps in parts.items() if t in names}
    try:
        version = min(cp.subscription_version(metadata), cp.HIGHEST_VERSION)
    except cp.ConsumerProtocolError:
        version = cp.HIGHEST_VERSION
    return cp.encode_assignment(cp.Assignment(sorted(pairs.items())), max(version, 0))


def classic_metadata(session_timeout_ms: int, protocols: object) -> ClassicMemberMetadata:
    return ClassicMemberMetadata(
        session_timeout_ms,
        tuple(ClassicProtocol(name, bytes(data)) for name, data in protocols),  # type: ignore[attr-defined]
    )


# ---- upgrade ------------------------------------------------------------------------


def upgrade(store: GroupStore, fx: Effects, classic: ClassicGroup, image: object) -> ConsumerGroup:
    """Kafka's getOrMaybeCreateConsumerGroup on a live classic group:
    validateOnlineUpgrade, then convertToConsumerGroup."""
    gid = classic.group_id
    cfg = store.cfg
    not_consumer = Reject(E.GROUP_ID_NOT_FOUND, f"Group {gid} is not a consumer group.")
    if not cfg.upgrade_enabled or classic.protocol_type != PROTOCOL_TYPE:
        raise not_consumer
    if len(classic.members) > cfg.consumer_max_size or classic.protocol_name is None:
        raise not_consumer
    if len(classic.members) == cfg.consumer_max_size:
        raise Reject(
            E.GROUP_MAX_SIZE_REACHED,
            f"The consumer group has reached its maximum capacity of {cfg.consumer_max_size}"
            " members.",
        )
    members = [_from_classic(classic, m, image) for m in classic.members.values()]
    # the group's rebalance in flight (if any) ends: its members rejoin
    for m in classic.members.values():
        if m.awaiting_join is not None:
            fx.reply(
                m.awaiting_join, JoinGroupResponse(E.REBALANCE_IN_PROGRESS, member_id=m.member_id)
            )
            m.awaiting_join = None
        if m.awaiting_sync is not None:
            fx.reply(m.awaiting_sync, SyncGroupResponse(E.REBALANCE_IN_PROGRESS))
            m.awaiting_sync = None
        fx.cancel(heartbeat_key(gid, m.member_id))
    for pending in classic.pending_members:
        fx.cancel(pending_key(gid, pending))
    fx.cancel(join_key(gid))
    fx.cancel(sync_key(gid))
    # a failed append or an error answer puts the classic group back (`writes.revert`)
    fx.modern_undo.setdefault(gid, classic)
    fx.record((encode_key(GroupMetadataKey(gid)), None))
    store.remove(gid)
    # Kafka's ConsumerGroup.createConsumerGroupRecords, in its order
    epoch = classic.generation
    for m in members:
        write(store, fx, *member_metadata_record(gid, m))
    write(store, fx, *epoch_record(gid, epoch))
    for m in members:
        write(store, fx, *target_member_record(gid, m.member_id, m.assigned))
    write(
        store,
        fx,
        ConsumerGroupTargetAssignmentMetadataKey(gid),
        ConsumerGroupTargetAssignmentMetadataValue(epoch),
    )
    for m in members:
        write(store, fx, *current_assignment_record(gid, m))
        fx.schedule(session_key(gid, m.member_id), fx.now + m.classic.session_timeout_ms)  # type: ignore[union-attr]
    fx.emit(
        ce.ConsumerGroupConverted(
            gid, "consumer", epoch, len(members), ce.GROUP_UPGRADED, "", fx.now
        )
    )
    return store.modern[gid]


def _from_classic(classic: ClassicGroup, m: Member, image: object) -> ConsumerMember:
    try:
        sub = cp.decode_subscription(m.metadata(classic.protocol_name))
        assigned = cp.decode_assignment(m.assignment)
    except cp.ConsumerProtocolError:
        raise Reject(
            E.GROUP_ID_NOT_FOUND,
            f"Cannot upgrade the classic group {classic.group_id} to consumer group because"
            " the embedded consumer protocol is malformed.",
        ) from None
    epoch = classic.generation
    return ConsumerMember(
        m.member_id,
        member_epoch=epoch,
        previous_member_epoch=epoch,
        state=MemberState.STABLE,
        instance_id=m.group_instance_id,
        rack_id=sub.rack_id,
        rebalance_timeout_ms=m.rebalance_timeout_ms,
        client_id=m.client_id,
        client_host=m.client_host,
        subscribed_topic_names=frozenset(sub.topics),
        assigned=by_id(assigned.partitions, image),
        classic=classic_metadata(m.session_timeout_ms, m.protocols),
    )


# ---- downgrade ------------------------------------------------------------------------


def should_downgrade(store: GroupStore, group: ConsumerGroup, leaving: ConsumerMember) -> bool:
    """Kafka's validateOnlineDowngradeWithFencedMember."""
    if leaving.uses_classic or len(group.members) <= 1:
        return False
    others = [m for mid, m in group.members.items() if mid != leaving.member_id]
    if not all(m.uses_classic for m in others):
        return False
    return store.cfg.downgrade_enabled and len(others) <= store.cfg.group_max_size


def should_downgrade_replaced(store: GroupStore, group: ConsumerGroup, replaced_id: str) -> bool:
    """Kafka's validateOnlineDowngradeWithReplacedMemberId: a classic static
    member joins with the instance id of `replaced_id` (the group as it was
    before that join) and every other member is classic."""
    others = [m for mid, m in group.members.items() if mid != replaced_id]
    if not all(m.uses_classic for m in others):
        return False
    return store.cfg.downgrade_enabled and len(group.members) <= store.cfg.group_max_size


def downgrade(
    store: GroupStore, fx: Effects, group: ConsumerGroup, leaving: ConsumerMember, cause: str
) -> None:
    """Kafka's convertToClassicGroup after a member left: the consumer group's
    tombstones, the classic group's record, then a rebalance."""
    gid = group.group_id
    kept = [m for mid, m in sorted(group.members.items()) if mid != leaving.member_id]
    classic = _to_classic(store, fx, group, kept)
    fx.emit(ce.ConsumerMemberRemoved(gid, leaving.member_id, leaving.instance_id, cause, fx.now))
    fx.emit(
        ce.ConsumerGroupConverted(
            gid, "classic", group.epoch, len(kept), ce.GROUP_DOWNGRADED, leaving.member_id, fx.now
        )
    )
    prepare_rebalance(store, classic, fx, ce.GROUP_DOWNGRADED, leaving.member_id)


def downgrade_replaced(store: GroupStore, fx: Effects, group: ConsumerGroup, replaced: str) -> None:
    """Kafka's convertToClassicGroup after a classic static member replaced
    `replaced` (`group` is the group after the replacement's records, every
    member classic): the classic group is Stable at the group epoch and no
    rebalance starts, as in Kafka, when every member holds its target. Where
    Kafka writes targets, a member here holds what it holds (see
    `_to_classic`), so while a partition is still moving a rebalance starts
    to hand it out (else no classic member would get it)."""
    gid = group.group_id
    members = [m for _, m in sorted(group.members.items())]
    settled = all(
        {t: ps for t, ps in group.targets.get(m.member_id, {}).items() if ps} == _held(m)
        for m in members
    )
    classic = _to_classic(store, fx, group, members)
    fx.emit(
        ce.ConsumerGroupConverted(
            gid, "classic", group.epoch, len(members), ce.GROUP_DOWNGRADED_STATIC, replaced, fx.now
        )
    )
    if not settled:
        prepare_rebalance(store, classic, fx, ce.GROUP_DOWNGRADED_STATIC, replaced)


def _held(m: ConsumerMember) -> Partitions:
    """What the member may hold now: assigned or still revoking."""
    held = {
        t: m.assigned.get(t, frozenset()) | m.pending_revocation.get(t, frozenset())
        for t in m.assigned.keys() | m.pending_revocation.keys()
    }
    return {t: ps for t, ps in held.items() if ps}


def _to_classic(
    store: GroupStore, fx: Effects, group: ConsumerGroup, kept: list[ConsumerMember]
) -> ClassicGroup:
    """The consumer group's tombstones, then a Stable classic group of `kept`
    at the group epoch, stored, its members' heartbeats armed."""
    gid = group.group_id
    classic = ClassicGroup(gid, state=GroupState.STABLE, state_timestamp=fx.now)
    classic.generation = group.epoch
    classic.protocol_type = PROTOCOL_TYPE
    for m in kept:
        meta: ClassicMemberMetadata = m.classic  # type: ignore[assignment]
        classic.add(
            Member(
                m.member_id,
                m.instance_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout_ms,
                meta.session_timeout_ms,
                PROTOCOL_TYPE,
                [(p.name, p.metadata) for p in meta.supported_protocols],
            )
        )
    classic.protocol_name = classic.select_protocol()
    classic.subscribed_topics = classic.compute_subscribed_topics()
    for m in kept:
        # what the member may hold now (assigned or still revoking), where
        # Kafka writes its target: a group upgraded again before the member
        # rejoins must not think partitions free that the member still owns
        # (found by the simulation: a downgrade then an upgrade while a
        # classic member had yet to revoke gave its partitions away)
        member = classic.members[m.member_id]
        member.assignment = encode_assignment(
            group, _held(m), member.metadata(classic.protocol_name)
        )
    for mid in group.members:  # before the tombstones empty the group
        for key in (session_key, revocation_key, join_timer, sync_timer):
            fx.cancel(key(gid, mid))
        store.classic_join_due.pop((gid, mid), None)
    _tombstones(store, fx, group)
    store.groups[gid] = classic
    store_group(classic, fx, None)
    for member in classic.members.values():
        schedule_heartbeat(classic, member, fx)
    return classic


def _tombstones(store: GroupStore, fx: Effects, group: ConsumerGroup) -> None:
    """Kafka's ConsumerGroup.createGroupTombstoneRecords, in its order."""
    gid = group.group_id
    ids = sorted(group.members)
    for regex in sorted(group.regexes):
        write(store, fx, *regex_record(gid, regex, None, fx.now))
    for mid in ids:
        write(store, fx, ConsumerGroupCurrentMemberAssignmentKey(gid, mid), None)
    for mid in ids:
        write(store, fx, ConsumerGroupTargetAssignmentMemberKey(gid, mid), None)
    write(store, fx, ConsumerGroupTargetAssignmentMetadataKey(gid), None)
    for mid in ids:
        write(store, fx, ConsumerGroupMemberMetadataKey(gid, mid), None)
    write(store, fx, ConsumerGroupPartitionMetadataKey(gid), None)
    write(store, fx, ConsumerGroupMetadataKey(gid), None)
