"""The simple assignor (Kafka's `group.share.assignors` default, `simple`),
homogeneous case: every partition of the subscribed topics goes to at least
one member; when members outnumber partitions, several members share a
partition (a share group reads a partition with many consumers at once)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from muster.coordinator.groups.modern.target import SubscribedTopic
from muster.coordinator.groups.share.group import Partitions, ShareMember

NAME = "simple"


def assign(
    members: Mapping[str, ShareMember], topics: Mapping[str, SubscribedTopic]
) -> dict[str, Partitions]:
    """member id -> its partitions. Deterministic (sorted ids and partitions),
    so a heartbeat that changes nothing computes the same target again."""
    out: dict[str, dict[uuid.UUID, list[int]]] = {mid: {} for mid in members}
    # each topic is spread over the members subscribed to it
    for name in sorted({t for m in members.values() for t in m.subscribed}):
        info = topics.get(name)
        if info is None or info.partitions <= 0:
            continue
        subscribers = sorted(mid for mid, m in members.items() if name in m.subscribed)
        n = info.partitions
        if len(subscribers) >= n:
            # more members than partitions: member i reads partition i mod n
            for i, mid in enumerate(subscribers):
                out[mid].setdefault(info.topic_id, []).append(i % n)
        else:
            for p in range(n):
                mid = subscribers[p % len(subscribers)]
                out[mid].setdefault(info.topic_id, []).append(p)
    return {mid: {t: tuple(ps) for t, ps in parts.items()} for mid, parts in out.items()}
