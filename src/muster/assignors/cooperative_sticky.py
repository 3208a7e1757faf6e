"""Kafka's CooperativeStickyAssignor ("cooperative-sticky", KIP-429).

The sticky target (muster.assignors.sticky), minus every partition that a
*different* member still claims to own: the owner is told to revoke it (it is
absent from the owner's new assignment), and once the owner rejoins without
it the next rebalance hands it to its new member. So a partition is never
assigned while another member still owns it.

A member keeps a partition it owns when its own claim wins (the highest
generation, see sticky.resolve_owned): a claim from an older generation is
stale, the coordinator has since given the partition to the winner. A
partition claimed by several members at the same generation is held back
from everyone until they have all revoked it. Both as Kafka does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from muster.assignors.model import (
    GroupAssignment,
    Member,
    normalize,
    subscribed_partition_counts,
    to_group_assignment,
)
from muster.assignors.sticky import resolve_owned, sticky_assign

NAME = "cooperative-sticky"


def assign(
    members: Mapping[str, Member | Iterable[Any]], partitions_per_topic: Mapping[str, int]
) -> GroupAssignment:
    ms = normalize(members)
    target = sticky_assign(ms, partitions_per_topic)
    winners = resolve_winners(ms, partitions_per_topic)
    claimants: dict[tuple[str, int], set[str]] = {}
    for member_id, member in ms.items():
        for tp in member.owned:
            claimants.setdefault(tp, set()).add(member_id)

    def may_have(member_id: str, tp: tuple[str, int]) -> bool:
        others = claimants.get(tp, set()) - {member_id}
        return not others or winners.get(tp) == member_id

    return to_group_assignment(
        {m: [tp for tp in tps if may_have(m, tp)] for m, tps in target.items()}
    )


def resolve_winners(
    members: Mapping[str, Member], partitions_per_topic: Mapping[str, int]
) -> dict[tuple[str, int], str]:
    """partition -> the member whose ownership claim wins."""
    counts = subscribed_partition_counts(members, partitions_per_topic)
    kept, _contested = resolve_owned(members, counts)
    return {tp: m for m, tps in kept.items() for tp in tps}
