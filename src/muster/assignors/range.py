"""Kafka's RangeAssignor ("range"), eager.

Per topic: the members subscribed to it in Kafka's member order (static
members by group.instance.id first, then dynamic ones by member id), the
partitions in numeric order, divided into contiguous ranges; the first
`count % members` members get one extra. So with several topics of equal
size the same members get the extras on each (range is balanced per topic,
not across topics), and partition i of co-partitioned topics lands on the
same member.

Kafka's rack-aware variant (KIP-881) needs partition replica racks, which
this input does not carry; without them Kafka falls back to exactly this.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from muster.assignors.model import (
    GroupAssignment,
    Member,
    empty_result,
    member_order_key,
    normalize,
    to_group_assignment,
)

NAME = "range"


def assign(
    members: Mapping[str, Member | Iterable[Any]], partitions_per_topic: Mapping[str, int]
) -> GroupAssignment:
    ms = normalize(members)
    result = empty_result(ms)
    consumers_per_topic: dict[str, list[str]] = {}
    for member_id, member in ms.items():
        for topic in member.topics:
            consumers_per_topic.setdefault(topic, []).append(member_id)
    for topic, consumers in consumers_per_topic.items():
        count = partitions_per_topic.get(topic, 0)
        if count <= 0:
            continue
        consumers.sort(key=lambda m: member_order_key(m, ms[m]))
        per_member, extra = divmod(count, len(consumers))
        for i, member_id in enumerate(consumers):
            start = per_member * i + min(i, extra)
            length = per_member + (1 if i < extra else 0)
            result[member_id].extend((topic, p) for p in range(start, start + length))
    return to_group_assignment(result)
