"""The uniform assignor for a group whose members subscribe to different
topics (Kafka's UniformHeterogeneousAssignmentBuilder, in its steps):

1. each member keeps its current partitions of topics it still subscribes to;
2. the unassigned partitions go, topic by topic, each to the subscriber of
   that topic with the fewest partitions in total (ties: member id order);
3. balancing: for each topic, while its most loaded subscriber that owns one of
   its partitions has two or more partitions more than its least loaded
   subscriber, the former's highest partition of that topic moves to the
   latter; passes over the topics repeat until one moves nothing.

Topics are taken in Kafka's order: partitions per subscriber descending, then
subscriber count ascending, then name. Every move lowers the sum of squared
member sizes, so step 3 ends; Kafka stops it after 16 passes for speed, this
runs it to the end, so the result is always balanced per topic: no subscriber
of a topic that owns one of its partitions has two more than another
subscriber of that topic. (Across topics with overlapping, unequal
subscriptions that is not always globally even, as in Kafka.)
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from fractions import Fraction

from muster.assignors.model import java_key
from muster.assignors.server.spec import (
    MemberSpec,
    TargetAssignment,
    as_result,
    existing_topics,
    sorted_members,
    sorted_topics,
)


def assign(
    members: Mapping[str, MemberSpec], partitions_per_topic: Mapping[str, int]
) -> TargetAssignment:
    order = sorted_members(members)
    index = {m: i for i, m in enumerate(order)}
    subscriptions = {m: existing_topics(members[m], partitions_per_topic) for m in order}
    subscribers: dict[str, list[str]] = {}
    for member_id in order:
        for topic in subscriptions[member_id]:
            subscribers.setdefault(topic, []).append(member_id)
    owner: dict[str, list[str | None]] = {t: [None] * partitions_per_topic[t] for t in subscribers}
    owned: dict[str, dict[str, set[int]]] = {m: {} for m in order}
    size = dict.fromkeys(order, 0)

    def give(member_id: str, topic: str, partition: int) -> None:
        previous = owner[topic][partition]
        if previous is not None:
            owned[previous][topic].discard(partition)
            size[previous] -= 1
        owner[topic][partition] = member_id
        owned[member_id].setdefault(topic, set()).add(partition)
        size[member_id] += 1

    for member_id in order:
        current = members[member_id].assignment
        for topic in sorted_topics(current):
            if topic not in subscriptions[member_id]:
                continue
            for partition in sorted(current[topic]):
                if partition < partitions_per_topic[topic] and owner[topic][partition] is None:
                    give(member_id, topic, partition)

    topic_order = sorted(
        subscribers,
        key=lambda t: (
            -Fraction(partitions_per_topic[t], len(subscribers[t])),
            len(subscribers[t]),
            java_key(t),
        ),
    )
    for topic in topic_order:
        free = [p for p, o in enumerate(owner[topic]) if o is None]
        if not free:
            continue
        heap = [(size[m], index[m], m) for m in subscribers[topic]]
        heapq.heapify(heap)
        for partition in free:
            _, _, member_id = heapq.heappop(heap)
            give(member_id, topic, partition)
            heapq.heappush(heap, (size[member_id], index[member_id], member_id))

    moved = True
    while moved:
        moved = False
        for topic in topic_order:
            candidates = subscribers[topic]
            if len(candidates) < 2:
                continue
            while True:
                least = min(candidates, key=lambda m: (size[m], index[m]))
                givers = [m for m in candidates if owned[m].get(topic)]
                most = max(givers, key=lambda m: (size[m], -index[m]))
                if size[most] - size[least] <= 1:
                    break
                give(least, topic, max(owned[most][topic]))
                moved = True
    return as_result(owned)
