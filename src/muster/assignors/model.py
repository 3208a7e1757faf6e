"""Plain data shared by every assignor: a member's subscription as the
assignor sees it, the result shape, and Kafka's orderings.

Input of every `assign`: members, a mapping member_id -> Member (or a tuple
(topics, owned, generation, rack, group_instance_id), trailing items
optional), and partitions_per_topic, topic -> partition count. Topics a
member subscribes to that are not in partitions_per_topic (no metadata) are
skipped, as Kafka's AbstractPartitionAssignor does.

Output: member_id -> topic -> sorted partitions, every member present (an
empty dict when it gets nothing).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from muster.protocol.consumer_protocol import topic_partitions

TopicPartition = tuple[str, int]
GroupAssignment = dict[str, dict[str, list[int]]]
DEFAULT_GENERATION = -1


class RebalanceProtocol(enum.IntEnum):
    """Kafka's ConsumerPartitionAssignor.RebalanceProtocol (ids as Java's)."""

    EAGER = 0
    COOPERATIVE = 1


def java_key(s: str) -> bytes:
    """A sort key that orders strings as Java's String.compareTo does (by
    UTF-16 code unit), which differs from Python's code-point order for
    characters above U+FFFF."""
    return s.encode("utf-16-be", "surrogatepass")


def tp_key(tp: TopicPartition) -> tuple[bytes, int]:
    """Kafka's usual partition order: topic (Java order), then partition."""
    return java_key(tp[0]), tp[1]


@dataclass(frozen=True)
class Member:
    """One member's subscription as an assignor needs it. `owned` is the
    partitions the member claims to own (ConsumerProtocol owned_partitions,
    or the sticky user data), as (topic, partition) pairs or a mapping
    topic -> partitions."""

    topics: frozenset[str]
    owned: frozenset[TopicPartition] = frozenset()
    generation: int = DEFAULT_GENERATION
    rack: str | None = None
    group_instance_id: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.topics, str):
            raise TypeError("topics must be a collection of names, not a string")
        object.__setattr__(self, "topics", frozenset(self.topics))
        object.__setattr__(self, "owned", owned_set(self.owned))


def owned_set(value: Any) -> frozenset[TopicPartition]:
    """(topic, partition) pairs from any form topic_partitions accepts."""
    if isinstance(value, frozenset):
        return value
    return frozenset((t, p) for t, parts in topic_partitions(value) for p in parts)


def as_member(value: Member | Iterable[Any]) -> Member:
    if isinstance(value, Member):
        return value
    return Member(*tuple(value))


def normalize(members: Mapping[str, Member | Iterable[Any]]) -> dict[str, Member]:
    return {member_id: as_member(m) for member_id, m in members.items()}


def member_order_key(member_id: str, member: Member) -> tuple[int, bytes, bytes]:
    """Kafka's AbstractPartitionAssignor.MemberInfo order: static members
    (with a group.instance.id) first, by instance id; then dynamic members
    by member id."""
    if member.group_instance_id is not None:
        return 0, java_key(member.group_instance_id), java_key(member_id)
    return 1, java_key(member_id), b""


def empty_result(members: Iterable[str]) -> dict[str, list[TopicPartition]]:
    return {m: [] for m in members}


def to_group_assignment(raw: Mapping[str, Iterable[TopicPartition]]) -> GroupAssignment:
    """member -> [(topic, partition)] into member -> topic -> sorted partitions
    (topics in Java order)."""
    out: GroupAssignment = {}
    for member_id, tps in raw.items():
        by_topic: dict[str, list[int]] = {}
        for topic, partition in tps:
            by_topic.setdefault(topic, []).append(partition)
        out[member_id] = {t: sorted(by_topic[t]) for t in sorted(by_topic, key=java_key)}
    return out


def subscribed_partition_counts(
    members: Mapping[str, Member], partitions_per_topic: Mapping[str, int]
) -> dict[str, int]:
    """partitions_per_topic restricted to topics someone subscribes to and
    that have at least one partition."""
    wanted = set().union(*(m.topics for m in members.values())) if members else set()
    return {t: n for t, n in partitions_per_topic.items() if t in wanted and n > 0}
