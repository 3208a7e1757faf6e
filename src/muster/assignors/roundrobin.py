"""Kafka's RoundRobinAssignor ("roundrobin"), eager.

All partitions of all subscribed topics, sorted by topic then partition,
are dealt to the members in Kafka's member order (static members by
group.instance.id first, then dynamic ones by member id) in a circle; a
member not subscribed to a partition's topic is skipped for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from muster.assignors.model import (
    GroupAssignment,
    Member,
    empty_result,
    java_key,
    member_order_key,
    normalize,
    subscribed_partition_counts,
    to_group_assignment,
)

NAME = "roundrobin"


def assign(
    members: Mapping[str, Member | Iterable[Any]], partitions_per_topic: Mapping[str, int]
) -> GroupAssignment:
    ms = normalize(members)
    result = empty_result(ms)
    order = sorted(ms, key=lambda m: member_order_key(m, ms[m]))
    counts = subscribed_partition_counts(ms, partitions_per_topic)
    at = 0
    for topic in sorted(counts, key=java_key):
        for partition in range(counts[topic]):
            # someone subscribes to `topic`, so this terminates
            while topic not in ms[order[at]].topics:
                at = (at + 1) % len(order)
            result[order[at]].append((topic, partition))
            at = (at + 1) % len(order)
    return to_group_assignment(result)
