"""Kafka's server-side "range" assignor (KIP-848): per topic, its subscribers
in Kafka's order (static members by instance id first, then the others by
member id) get contiguous ranges, the first `partitions % subscribers` one
more. Members subscribed to the same topics of equal size therefore get the
same partition numbers of every topic (co-partitioning, for joins). It does
not look at the current assignment, as Kafka's does not; static members keep
their ranges through restarts because their instance ids order them.

That is exactly the classic protocol's range assignor over the same input,
so this reuses it.
"""

from __future__ import annotations

from collections.abc import Mapping

from muster.assignors import range as classic_range
from muster.assignors.model import Member
from muster.assignors.server.spec import MemberSpec, TargetAssignment, existing_topics

NAME = "range"


def assign(
    members: Mapping[str, MemberSpec], partitions_per_topic: Mapping[str, int]
) -> TargetAssignment:
    plain = {
        member_id: Member(
            existing_topics(spec, partitions_per_topic), group_instance_id=spec.instance_id
        )
        for member_id, spec in members.items()
    }
    return classic_range.assign(plain, partitions_per_topic)
