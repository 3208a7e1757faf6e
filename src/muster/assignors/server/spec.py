"""The input of a server-side assignor (KIP-848), as plain data.

A group's target assignment is computed by the coordinator from, per member,
the topics it subscribes to (names already resolved from its regex, if any)
and the partitions the *current target* gives it; per topic, its partition
count. Kafka's GroupSpec/SubscribedTopicDescriber carry the same (with topic
ids: any hashable, orderable key works here, names or ids as strings).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from muster.assignors.model import java_key

# member id -> topic -> sorted partitions; every member present, {} when it gets nothing.
TargetAssignment = dict[str, dict[str, list[int]]]


@dataclass(frozen=True)
class MemberSpec:
    """One member as an assignor sees it. `assignment` is its partitions in the
    group's current target assignment, topic -> partitions."""

    topics: frozenset[str]
    assignment: Mapping[str, frozenset[int]] = field(default_factory=dict)
    instance_id: str | None = None
    rack: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.topics, str):
            raise TypeError("topics must be a collection of names, not a string")
        object.__setattr__(self, "topics", frozenset(self.topics))
        object.__setattr__(
            self,
            "assignment",
            {t: frozenset(ps) for t, ps in self.assignment.items() if ps},
        )


def member_spec(
    topics: Iterable[str],
    assignment: Mapping[str, Iterable[int]] | None = None,
    instance_id: str | None = None,
) -> MemberSpec:
    return MemberSpec(
        frozenset(topics), {t: frozenset(p) for t, p in (assignment or {}).items()}, instance_id
    )


def existing_topics(spec: MemberSpec, partitions_per_topic: Mapping[str, int]) -> frozenset[str]:
    """The member's subscribed topics that exist with at least one partition: as in
    Kafka, where the coordinator hands the assignor only topics it has metadata for."""
    return frozenset(t for t in spec.topics if partitions_per_topic.get(t, 0) > 0)


def is_homogeneous(members: Mapping[str, MemberSpec]) -> bool:
    """Kafka's SubscriptionType.HOMOGENEOUS: every member subscribes to the same topics."""
    subscriptions = {m.topics for m in members.values()}
    return len(subscriptions) <= 1


def sorted_members(members: Iterable[str]) -> list[str]:
    return sorted(members, key=java_key)


def sorted_topics(topics: Iterable[str]) -> list[str]:
    return sorted(topics, key=java_key)


def as_result(owned: Mapping[str, Mapping[str, set[int]]]) -> TargetAssignment:
    """member -> topic -> set into the result shape (topics in Java order, partitions
    ascending, topics with no partition left out)."""
    return {
        member: {t: sorted(parts[t]) for t in sorted_topics(parts) if parts[t]}
        for member, parts in owned.items()
    }
