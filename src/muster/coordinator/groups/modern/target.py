"""A consumer group's new target assignment (Kafka's TargetAssignmentBuilder).

When the group epoch moves (a member joined, left or changed its
subscription, or a subscribed topic changed), the server-side assignor
computes what every member should own, starting from the current target so
that it stays sticky. Only members whose target changed get a
`ConsumerGroupTargetAssignmentMember` record; the
`ConsumerGroupTargetAssignmentMetadata` record then moves the target epoch.
A static member that replaced another (same instance id, new member id)
starts from its predecessor's target, so the replacement keeps the partitions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from muster.assignors.server.registry import assign
from muster.assignors.server.spec import MemberSpec
from muster.coordinator.groups.modern.member import Partitions, TopicId, partitions
from muster.records.modern_group_records import (
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    TopicPartitions,
)


@dataclass(frozen=True, slots=True)
class SubscribedTopic:
    """What the group knows of a topic a member subscribes to."""

    topic_id: TopicId
    partitions: int


@dataclass(frozen=True, slots=True)
class TargetMember:
    """One member as the target computation sees it."""

    subscribed: frozenset[str]  # topic names, the regex already resolved
    instance_id: str | None = None
    rack_id: str | None = None
    replaces: str | None = None  # the member id a static member took over from


@dataclass(frozen=True, slots=True)
class NewTarget:
    epoch: int
    assignment: dict[str, Partitions]  # member id -> its target
    records: list[tuple[object, object]]  # (key, value) to append, in order


def build_target(
    group_id: str,
    group_epoch: int,
    assignor: str,
    members: Mapping[str, TargetMember],
    topics: Mapping[str, SubscribedTopic],
    current: Mapping[str, Partitions],
) -> NewTarget:
    """UnknownAssignorError when `assignor` is not one the broker has."""
    names = {t.topic_id: name for name, t in topics.items()}
    specs = {}
    for member_id, m in members.items():
        start = current.get(member_id)
        if start is None and m.replaces is not None:
            start = current.get(m.replaces)
        specs[member_id] = MemberSpec(
            m.subscribed,
            {names[t]: ps for t, ps in (start or {}).items() if t in names},
            m.instance_id,
            m.rack_id,
        )
    computed = assign(assignor, specs, {name: t.partitions for name, t in topics.items()})
    assignment: dict[str, Partitions] = {}
    records: list[tuple[object, object]] = []
    for member_id in members:
        got = partitions(
            {topics[name].topic_id: parts for name, parts in computed.get(member_id, {}).items()}
        )
        assignment[member_id] = got
        if got != current.get(member_id):
            records.append(
                (
                    ConsumerGroupTargetAssignmentMemberKey(group_id, member_id),
                    ConsumerGroupTargetAssignmentMemberValue(topic_partitions(got)),
                )
            )
    records.append(
        (
            ConsumerGroupTargetAssignmentMetadataKey(group_id),
            ConsumerGroupTargetAssignmentMetadataValue(group_epoch),
        )
    )
    return NewTarget(group_epoch, assignment, records)


def topic_partitions(assigned: Partitions) -> tuple[TopicPartitions, ...]:
    """The record form: topics in id order, partitions ascending."""
    return tuple(
        TopicPartitions(topic, tuple(sorted(parts))) for topic, parts in sorted(assigned.items())
    )
