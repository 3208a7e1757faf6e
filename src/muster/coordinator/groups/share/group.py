"""A share group's durable state and the one rule that changes it: `apply`,
run for a record when a handler writes it and when the log is replayed."""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass, field

from muster.records.modern_group_records import TopicPartitions
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
)

Partitions = dict[uuid.UUID, tuple[int, ...]]

# Kafka's ShareGroup.ShareGroupState, as DescribeGroups and ListGroups name it
EMPTY, STABLE = "Empty", "Stable"


@dataclass
class ShareMember:
    member_id: str
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed: tuple[str, ...] = ()
    member_epoch: int = 0
    previous_epoch: int = 0
    assigned: Partitions = field(default_factory=dict)


@dataclass
class ShareGroup:
    group_id: str
    epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    target: dict[str, Partitions] = field(default_factory=dict)

    @property
    def state(self) -> str:
        return STABLE if self.members else EMPTY

    def copy(self) -> ShareGroup:
        return copy.deepcopy(self)

    def subscribed_topics(self) -> set[str]:
        return {t for m in self.members.values() for t in m.subscribed}


def partitions_of(value: tuple[TopicPartitions, ...]) -> Partitions:
    return {tp.topic_id: tuple(tp.partitions) for tp in value}


def as_topic_partitions(parts: Partitions) -> tuple[TopicPartitions, ...]:
    return tuple(TopicPartitions(t, tuple(sorted(ps))) for t, ps in sorted(parts.items()))


def apply(groups: dict[str, ShareGroup], key: object, value: object | None) -> None:
    """Apply one ShareGroup* record (None value: a tombstone)."""
    gid: str = key.group_id  # type: ignore[attr-defined]
    if isinstance(key, ShareGroupMetadataKey):
        if value is None:
            groups.pop(gid, None)
        else:
            assert isinstance(value, ShareGroupMetadataValue)
            groups.setdefault(gid, ShareGroup(gid)).epoch = value.epoch
        return
    group = groups.get(gid)
    if group is None:
        if value is None:
            return
        # Kafka writes the member before the group's epoch; the group exists from its first record
        group = groups[gid] = ShareGroup(gid)
    if isinstance(key, ShareGroupMemberMetadataKey):
        if value is None:
            group.members.pop(key.member_id, None)
            return
        assert isinstance(value, ShareGroupMemberMetadataValue)
        member = group.members.setdefault(key.member_id, ShareMember(key.member_id))
        member.rack_id = value.rack_id
        member.client_id = value.client_id
        member.client_host = value.client_host
        member.subscribed = tuple(value.subscribed_topic_names)
    elif isinstance(key, ShareGroupTargetAssignmentMetadataKey):
        if value is not None:
            assert isinstance(value, ShareGroupTargetAssignmentMetadataValue)
            group.assignment_epoch = value.assignment_epoch
    elif isinstance(key, ShareGroupTargetAssignmentMemberKey):
        if value is None:
            group.target.pop(key.member_id, None)
        else:
            assert isinstance(value, ShareGroupTargetAssignmentMemberValue)
            group.target[key.member_id] = partitions_of(value.topic_partitions)
    elif isinstance(key, ShareGroupCurrentMemberAssignmentKey):
        member = group.members.get(key.member_id)
        if value is not None and member is not None:
            assert isinstance(value, ShareGroupCurrentMemberAssignmentValue)
            member.member_epoch = value.member_epoch
            member.previous_epoch = value.previous_member_epoch
            member.assigned = partitions_of(value.assigned_partitions)
