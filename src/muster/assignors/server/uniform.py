"""Kafka's server-side "uniform" assignor (KIP-848), the default of
`group.consumer.assignors`: balance first, then stickiness toward the
group's current target assignment.

Two builders, chosen as Kafka's UniformAssignor chooses them: when every
member subscribes to the same topics (homogeneous) the quota builder below,
otherwise the per-topic balancer in `heterogeneous.py`.

Homogeneous, in Kafka's UniformHomogeneousAssignmentBuilder's steps:
1. total = partitions of the subscribed topics; each member's quota is
   total // members, and total % members of them get one more;
2. each member keeps its current partitions up to its quota (partitions of
   topics it no longer subscribes to, or that are gone, are dropped);
3. the partitions nobody kept fill the members below their quota.
Kafka walks the members in hash order, so which members get the extra
partition is arbitrary there; here the members that keep the most get it
(ties by member id), so an assignment that is already balanced is returned
unchanged and no member gives up a partition it could have kept.
"""

from __future__ import annotations

from collections.abc import Mapping

import muster.assignors.server.heterogeneous as heterogeneous
from muster.assignors.model import java_key
from muster.assignors.server.spec import (
    MemberSpec,
    TargetAssignment,
    as_result,
    existing_topics,
    is_homogeneous,
    sorted_members,
    sorted_topics,
)

NAME = "uniform"

TopicPartition = tuple[str, int]


def assign(
    members: Mapping[str, MemberSpec], partitions_per_topic: Mapping[str, int]
) -> TargetAssignment:
    if not members:
        return {}
    if is_homogeneous(members):
        return assign_homogeneous(members, partitions_per_topic)
    return heterogeneous.assign(members, partitions_per_topic)


def assign_homogeneous(
    members: Mapping[str, MemberSpec], partitions_per_topic: Mapping[str, int]
) -> TargetAssignment:
    order = sorted_members(members)
    topics = sorted_topics(existing_topics(members[order[0]], partitions_per_topic))
    subscribed = set(topics)
    claimed: set[TopicPartition] = set()
    kept: dict[str, list[TopicPartition]] = {}
    for member_id in order:
        current = members[member_id].assignment
        keep: list[TopicPartition] = []
        for topic in sorted_topics(current):
            if topic not in subscribed:
                continue
            for partition in sorted(current[topic]):
                # Two members claiming one partition cannot come from a valid target;
                # the first in member order keeps it so the result stays exact.
                if partition < partitions_per_topic[topic] and (topic, partition) not in claimed:
                    claimed.add((topic, partition))
                    keep.append((topic, partition))
        kept[member_id] = keep

    total = sum(partitions_per_topic[t] for t in topics)
    min_quota, extra = divmod(total, len(order))
    by_kept = sorted(order, key=lambda m: (-len(kept[m]), java_key(m)))
    unassigned = [(t, p) for t in topics for p in range(partitions_per_topic[t])]
    unassigned = [tp for tp in unassigned if tp not in claimed]
    quota: dict[str, int] = {}
    for i, member_id in enumerate(by_kept):
        quota[member_id] = min_quota + (1 if i < extra else 0)
        over = kept[member_id][quota[member_id] :]
        if over:
            unassigned.extend(over)
            del kept[member_id][quota[member_id] :]
    pending = iter(unassigned)
    for member_id in by_kept:
        for _ in range(quota[member_id] - len(kept[member_id])):
            kept[member_id].append(next(pending))

    owned: dict[str, dict[str, set[int]]] = {m: {} for m in order}
    for member_id, tps in kept.items():
        for topic, partition in tps:
            owned[member_id].setdefault(topic, set()).add(partition)
    return as_result(owned)
