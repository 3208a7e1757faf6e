"""A consumer (KIP-848) group as its records describe it, and the one apply
path of those records (`apply`): used when a handler writes them (at write
time, see the README) and when the shard replays `__consumer_offsets` at load.

Everything in `ConsumerGroup` is durable state: a group rebuilt by replaying
its records equals the live one. Timers are the shard's (transient); nothing
else is kept beside the group. `owners` is derived from the members (rebuilt
by `set_member`) and so is replayed too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field

from muster.coordinator.groups.modern.member import (
    ConsumerMember,
    MemberState,
    Partitions,
    TopicId,
    partitions,
)
from muster.coordinator.groups.modern.target import SubscribedTopic, topic_partitions
from muster.records.modern_group_records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    TopicMetadata,
    TopicPartitions,
)

LEAVE_EPOCH = -1  # Kafka's LEAVE_GROUP_MEMBER_EPOCH
STATIC_LEAVE_EPOCH = -2  # Kafka's LEAVE_GROUP_STATIC_MEMBER_EPOCH

# Kafka's ConsumerGroupState names
EMPTY, ASSIGNING, RECONCILING, STABLE, DEAD = "Empty", "Assigning", "Reconciling", "Stable", "Dead"


@dataclass
class ConsumerGroup:
    group_id: str
    epoch: int = 0
    assignment_epoch: int = 0  # the target assignment's epoch
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    targets: dict[str, Partitions] = field(default_factory=dict)
    # subscription metadata: every topic some member subscribes to that exists
    topics: dict[str, SubscribedTopic] = field(default_factory=dict)
    # regular expressions members subscribe with -> (matching topics, when
    # resolved, ms); ConsumerGroupRegularExpression records
    regexes: dict[str, tuple[frozenset[str], int]] = field(default_factory=dict)
    # (topic id, partition) -> the member holding it (assigned or pending
    # revocation); derived from `members`
    owners: dict[tuple[TopicId, int], str] = field(default_factory=dict)

    def copy(self) -> ConsumerGroup:
        """A snapshot: members and targets are immutable values, so shallow
        copies of the maps are enough."""
        return dataclasses.replace(
            self,
            members=dict(self.members),
            targets=dict(self.targets),
            topics=dict(self.topics),
            regexes=dict(self.regexes),
            owners=dict(self.owners),
        )

    @property
    def state(self) -> str:
        if not self.members:
            return EMPTY
        if self.epoch != self.assignment_epoch:
            return ASSIGNING
        for m in self.members.values():
            # a static member away (epoch -2) counts as reconciling too, as in Kafka 4.4
            if m.state is not MemberState.STABLE or m.member_epoch != self.assignment_epoch:
                return RECONCILING
        return STABLE

    def static_member(self, instance_id: str) -> ConsumerMember | None:
        for m in self.members.values():
            if m.instance_id == instance_id:
                return m
        return None

    def partition_epoch(self, topic: TopicId, partition: int) -> int:
        """Kafka's currentPartitionEpoch: the holder's epoch, -1 when free."""
        owner = self.owners.get((topic, partition))
        return -1 if owner is None else self.members[owner].member_epoch

    def set_member(self, member: ConsumerMember) -> None:
        self._release(self.members.get(member.member_id))
        self.members[member.member_id] = member
        for held in (member.assigned, member.pending_revocation):
            for topic, parts in held.items():
                for p in parts:
                    self.owners[(topic, p)] = member.member_id

    def remove_member(self, member_id: str) -> None:
        self._release(self.members.pop(member_id, None))

    def _release(self, member: ConsumerMember | None) -> None:
        if member is None:
            return
        for held in (member.assigned, member.pending_revocation):
            for topic, parts in held.items():
                for p in parts:
                    if self.owners.get((topic, p)) == member.member_id:
                        del self.owners[(topic, p)]

    def subscribed_topics(self) -> set[str]:
        """Topics some member subscribes to (Kafka's isSubscribedToTopic)."""
        names = set(self.topics)
        for m in self.members.values():
            names |= m.subscribed_topic_names
        return names

    def topic_names(self) -> dict[TopicId, str]:
        return {t.topic_id: name for name, t in self.topics.items()}


# ---- records -------------------------------------------------------------------


def _parts(tps: tuple[TopicPartitions, ...]) -> Partitions:
    return partitions({tp.topic_id: tp.partitions for tp in tps})


def member_metadata_record(group_id: str, m: ConsumerMember) -> tuple[object, object]:
    return (
        ConsumerGroupMemberMetadataKey(group_id, m.member_id),
        ConsumerGroupMemberMetadataValue(
            instance_id=m.instance_id,
            rack_id=m.rack_id,
            client_id=m.client_id,
            client_host=m.client_host,
            subscribed_topic_names=tuple(sorted(m.subscribed_topic_names)),
            subscribed_topic_regex=m.subscribed_topic_regex or None,
            rebalance_timeout_ms=m.rebalance_timeout_ms,
            server_assignor=m.server_assignor,
            classic_member_metadata=m.classic,
        ),
    )


def current_assignment_record(group_id: str, m: ConsumerMember) -> tuple[object, object]:
    return (
        ConsumerGroupCurrentMemberAssignmentKey(group_id, m.member_id),
        ConsumerGroupCurrentMemberAssignmentValue(
            member_epoch=m.member_epoch,
            previous_member_epoch=m.previous_member_epoch,
            state=int(m.state),
            assigned_partitions=topic_partitions(m.assigned),
            partitions_pending_revocation=topic_partitions(m.pending_revocation),
        ),
    )


def target_member_record(
    group_id: str, member_id: str, target: Partitions
) -> tuple[object, object]:
    return (
        ConsumerGroupTargetAssignmentMemberKey(group_id, member_id),
        ConsumerGroupTargetAssignmentMemberValue(topic_partitions(target)),
    )


def removal_records(group_id: str, member_id: str) -> list[tuple[object, object | None]]:
    """Kafka's removeMember tombstones, in its order."""
    return [
        (ConsumerGroupCurrentMemberAssignmentKey(group_id, member_id), None),
        (ConsumerGroupTargetAssignmentMemberKey(group_id, member_id), None),
        (ConsumerGroupMemberMetadataKey(group_id, member_id), None),
    ]


def regex_record(
    group_id: str, regex: str, topics: frozenset[str] | None, now: int
) -> tuple[object, object | None]:
    """A resolved regular expression (None: no member uses it any more)."""
    key = ConsumerGroupRegularExpressionKey(group_id, regex)
    if topics is None:
        return key, None
    return key, ConsumerGroupRegularExpressionValue(tuple(sorted(topics)), 0, now)


def epoch_record(group_id: str, epoch: int) -> tuple[object, object]:
    return ConsumerGroupMetadataKey(group_id), ConsumerGroupMetadataValue(epoch)


def subscription_metadata_record(
    group_id: str, topics: dict[str, SubscribedTopic]
) -> tuple[object, object]:
    return (
        ConsumerGroupPartitionMetadataKey(group_id),
        ConsumerGroupPartitionMetadataValue(
            tuple(
                TopicMetadata(t.topic_id, name, t.partitions) for name, t in sorted(topics.items())
            )
        ),
    )


# ---- the apply path ---------------------------------------------------------------


def apply(groups: dict[str, ConsumerGroup], key: object, value: object | None) -> None:
    """Apply one typed ConsumerGroup* record (Kafka's GroupMetadataManager.replay)."""
    group_id: str = key.group_id  # type: ignore[attr-defined]
    group = groups.get(group_id)
    if group is None:
        if value is None:
            return  # a tombstone of something already gone (compaction order)
        group = groups[group_id] = ConsumerGroup(group_id)
    kind = type(key)
    if kind is ConsumerGroupMetadataKey:
        if value is None:
            del groups[group_id]
        else:
            group.epoch = value.epoch  # type: ignore[attr-defined]
    elif kind is ConsumerGroupPartitionMetadataKey:
        group.topics = (
            {}
            if value is None
            else {
                t.topic_name: SubscribedTopic(t.topic_id, t.num_partitions)
                for t in value.topics  # type: ignore[attr-defined]
            }
        )
    elif kind is ConsumerGroupTargetAssignmentMetadataKey:
        group.assignment_epoch = (
            0 if value is None else value.assignment_epoch  # type: ignore[attr-defined]
        )
    elif kind is ConsumerGroupTargetAssignmentMemberKey:
        member_id = key.member_id  # type: ignore[attr-defined]
        if value is None:
            group.targets.pop(member_id, None)
        else:
            group.targets[member_id] = _parts(value.topic_partitions)  # type: ignore[attr-defined]
    elif kind is ConsumerGroupMemberMetadataKey:
        _apply_member_metadata(group, key.member_id, value)  # type: ignore[attr-defined]
    elif kind is ConsumerGroupCurrentMemberAssignmentKey:
        _apply_current_assignment(group, key.member_id, value)  # type: ignore[attr-defined]
    elif kind is ConsumerGroupRegularExpressionKey:
        regex = key.regular_expression  # type: ignore[attr-defined]
        if value is None:
            group.regexes.pop(regex, None)
        else:
            v: ConsumerGroupRegularExpressionValue = value  # type: ignore[assignment]
            group.regexes[regex] = (frozenset(v.topics), v.timestamp)


def _apply_member_metadata(group: ConsumerGroup, member_id: str, value: object | None) -> None:
    if value is None:
        group.remove_member(member_id)
        return
    v: ConsumerGroupMemberMetadataValue = value  # type: ignore[assignment]
    old = group.members.get(member_id) or ConsumerMember(member_id)
    group.set_member(
        dataclasses.replace(
            old,
            instance_id=v.instance_id,
            rack_id=v.rack_id,
            client_id=v.client_id,
            client_host=v.client_host,
            subscribed_topic_names=frozenset(v.subscribed_topic_names),
            subscribed_topic_regex=v.subscribed_topic_regex or "",
            rebalance_timeout_ms=v.rebalance_timeout_ms,
            server_assignor=v.server_assignor,
            classic=v.classic_member_metadata,
        )
    )


def _apply_current_assignment(group: ConsumerGroup, member_id: str, value: object | None) -> None:
    old = group.members.get(member_id) or ConsumerMember(member_id)
    if value is None:
        if member_id not in group.members:
            return
        group.set_member(
            dataclasses.replace(
                old,
                member_epoch=LEAVE_EPOCH,
                previous_member_epoch=LEAVE_EPOCH,
                state=MemberState.STABLE,
                assigned={},
                pending_revocation={},
            )
        )
        return
    v: ConsumerGroupCurrentMemberAssignmentValue = value  # type: ignore[assignment]
    group.set_member(
        dataclasses.replace(
            old,
            member_epoch=v.member_epoch,
            previous_member_epoch=v.previous_member_epoch,
            state=MemberState.from_record(v.state),
            assigned=_parts(v.assigned_partitions),
            pending_revocation=_parts(v.partitions_pending_revocation),
        )
    )


def durable_view(groups: dict[str, ConsumerGroup]) -> dict[str, object]:
    """Every group as a comparable snapshot (tests: live == replayed).
    Members and targets are immutable, so a shallow copy is a snapshot, and
    it costs far less than a deep `astuple` (the simulation compares the
    durable state after every step)."""
    return {gid: g.copy() for gid, g in sorted(groups.items())}


def iter_members(group: ConsumerGroup) -> Iterator[ConsumerMember]:
    return iter(sorted(group.members.values(), key=lambda m: m.member_id))
