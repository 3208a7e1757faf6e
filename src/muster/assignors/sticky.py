"""Kafka's sticky assignment (AbstractStickyAssignor semantics), and the
eager "sticky" assignor built on it.

Goals, in order: every partition of every subscribed topic assigned exactly
once, to a member subscribed to its topic; balance (no partition, nor chain
of partitions, could move from a member to a member with at least two fewer
partitions, so members with identical subscriptions differ by at most one);
stickiness (members keep the partitions they owned where balance
allows); determinism (the same input gives the same output, whatever the
order of the members mapping).

Previous ownership: a member's `owned` partitions at its `generation`. When
several members claim one partition, the claim with the highest generation
wins; a tie at the highest generation invalidates the partition for all of
them (Kafka logs this as an error and does the same). Claims on partitions
that no longer exist are dropped; a winning claim on a topic the member no
longer subscribes to is dropped (the partition is reassigned).

Two builders, as in Kafka:
- all members subscribe to the same topics ("constrained"): every member
  gets floor(P/M) or ceil(P/M). Owned partitions (sorted by partition, then
  topic) are kept up to the quota, members taken in member-id order; the
  rest is dealt round-robin to members below quota, then one each to members
  at the minimum while members with the extra partition are still due.
- otherwise ("general"): owned partitions are kept, each unowned partition
  (topics with fewest subscribers first) goes to the least-loaded member
  subscribed to its topic, then partitions move along chains (A hands one
  to B, B one to C, ...) while a chain runs from a member to one with at
  least two fewer; first moving only partitions that were not kept, then
  along chains that move the fewest kept ones (see _Balancer).
Differences from Kafka, all deliberate: Kafka iterates hash maps where this
module sorts by member id, so when several assignments are equally good the
choice may differ. Kafka's general builder only looks for single moves, so
with unequal subscriptions it can stop less balanced (sizes 3/2/1 where a
chain gives 2/2/2) and, under cooperative-sticky, can need several
follow-up rebalances (its own tests allow four); the chains make the sizes
optimal, and so the round after a cooperative revocation hands out the
revoked partitions without revoking anything else. Kafka's rack-aware
refinement needs partition replica racks, which this input does not carry.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

from muster.assignors.model import (
    GroupAssignment,
    Member,
    TopicPartition,
    java_key,
    normalize,
    subscribed_partition_counts,
    to_group_assignment,
    tp_key,
)

NAME = "sticky"


def resolve_owned(
    members: Mapping[str, Member], counts: Mapping[str, int]
) -> tuple[dict[str, list[TopicPartition]], frozenset[TopicPartition]]:
    """Each member's valid previously owned partitions after settling
    conflicting claims, and the partitions claimed by several members at the
    same (highest) generation."""
    claims: dict[TopicPartition, list[tuple[int, str]]] = {}
    for member_id, member in members.items():
        for tp in member.owned:
            topic, partition = tp
            if 0 <= partition < counts.get(topic, 0):
                claims.setdefault(tp, []).append((member.generation, member_id))
    kept: dict[str, list[TopicPartition]] = {m: [] for m in members}
    contested = set()
    for tp, claimants in claims.items():
        top = max(g for g, _ in claimants)
        winners = [m for g, m in claimants if g == top]
        if len(winners) > 1:
            contested.add(tp)
        elif tp[0] in members[winners[0]].topics:
            kept[winners[0]].append(tp)
    return kept, frozenset(contested)


def sticky_assign(
    members: Mapping[str, Member], partitions_per_topic: Mapping[str, int]
) -> dict[str, list[TopicPartition]]:
    """The sticky target: member -> [(topic, partition)]."""
    if not members:
        return {}
    counts = subscribed_partition_counts(members, partitions_per_topic)
    kept, _contested = resolve_owned(members, counts)
    first = next(iter(members.values())).topics
    if all(m.topics == first for m in members.values()):
        return _constrained(members, counts, kept)
    return _general(members, counts, kept)


def assign(
    members: Mapping[str, Member | Iterable[Any]], partitions_per_topic: Mapping[str, int]
) -> GroupAssignment:
    return to_group_assignment(sticky_assign(normalize(members), partitions_per_topic))


def _constrained(
    members: Mapping[str, Member],
    counts: Mapping[str, int],
    kept: Mapping[str, list[TopicPartition]],
) -> dict[str, list[TopicPartition]]:
    total = sum(counts.values())
    order = sorted(members, key=java_key)
    min_quota, over = divmod(total, len(order))
    max_quota = min_quota + (1 if over else 0)
    num_over = 0  # members given max_quota (> min_quota) so far
    result: dict[str, list[TopicPartition]] = {m: [] for m in order}
    under_min: list[str] = []  # members below min_quota
    at_min: list[str] = []  # members at min_quota that may still get one more

    for member_id in order:
        owned = sorted(kept[member_id], key=lambda tp: (tp[1], java_key(tp[0])))
        if len(owned) < min_quota:
            result[member_id] = owned
            under_min.append(member_id)
        elif len(owned) >= max_quota and num_over < over:
            num_over += 1
            if num_over == over:
                at_min.clear()
            result[member_id] = owned[:max_quota]
        else:
            result[member_id] = owned[:min_quota]
            if num_over < over:
                at_min.append(member_id)

    taken = {tp for tps in result.values() for tp in tps}
    unassigned = [
        (t, p)
        for t in sorted(counts, key=java_key)
        for p in range(counts[t])
        if (t, p) not in taken
    ]
    at = 0  # round-robin position in under_min
    for tp in unassigned:
        from_under = True
        if at < len(under_min):
            member_id = under_min[at]
        elif under_min:
            at = 0
            member_id = under_min[0]
        elif at_min:
            member_id = at_min.pop(0)
            from_under = False
        else:  # the quotas add up to `total`, so this cannot happen
            raise AssertionError(f"sticky: no member can take {tp}")
        result[member_id].append(tp)
        size = len(result[member_id])
        if from_under and size == min_quota:
            under_min.pop(at)  # `at` now points at the next member
            at_min.append(member_id)
        else:
            if size == max_quota and max_quota > min_quota:
                num_over += 1
                if num_over == over:
                    at_min.clear()
            if from_under:
                at += 1
    return result


def _general(
    members: Mapping[str, Member],
    counts: Mapping[str, int],
    kept: Mapping[str, list[TopicPartition]],
) -> dict[str, list[TopicPartition]]:
    key = {m: java_key(m) for m in members}
    potential = {
        t: sorted((m for m in members if t in members[m].topics), key=key.__getitem__)
        for t in counts
    }
    assignment: dict[str, set[TopicPartition]] = {m: set(kept[m]) for m in members}
    taken = {tp for tps in assignment.values() for tp in tps}
    unassigned = sorted(
        ((t, p) for t in counts for p in range(counts[t]) if (t, p) not in taken),
        key=lambda tp: (len(potential[tp[0]]), java_key(tp[0]), tp[1]),
    )
    for tp in unassigned:
        target = min(potential[tp[0]], key=lambda m: (len(assignment[m]), key[m]))
        assignment[target].add(tp)
    _Balancer(members, key, assignment, kept).run()
    return {m: sorted(tps, key=tp_key) for m, tps in assignment.items()}


class _Balancer:
    """Moves partitions along chains — a member hands one to another member
    subscribed to its topic, which hands one on, ... — while a chain runs
    from a member to one with at least two fewer partitions. Each chain
    lowers the sum of squared sizes, so this ends, and when no chain is left
    the sizes are optimally balanced (a load-balancing semi-matching is
    optimal iff it has no such chain), whatever the start.

    First only partitions a member did not keep from its previous assignment
    move; then chains moving the fewest kept partitions. So a kept partition
    moves only when balance needs it, and a second round over the same
    members (owning what the first gave them) ends where the first did
    without moving anything they kept: what cooperative rebalancing needs."""

    def __init__(
        self,
        members: Mapping[str, Member],
        key: Mapping[str, bytes],
        assignment: dict[str, set[TopicPartition]],
        kept: Mapping[str, list[TopicPartition]],
    ) -> None:
        self.members = members
        self.key = key
        self.assignment = assignment
        self.kept = {m: frozenset(tps) for m, tps in kept.items()}
        self.size = {m: len(tps) for m, tps in assignment.items()}
        self.order = sorted(members, key=key.__getitem__)
        self.topics = {m: sorted(members[m].topics, key=java_key) for m in members}
        # topic -> holder -> partitions, split by whether the holder kept them
        self.free: dict[str, dict[str, set[TopicPartition]]] = {}
        self.stuck: dict[str, dict[str, set[TopicPartition]]] = {}
        for m, tps in assignment.items():
            for tp in tps:
                self._index(m, tp).add(tp)

    def _index(self, holder: str, tp: TopicPartition) -> set[TopicPartition]:
        table = self.stuck if tp in self.kept[holder] else self.free
        return table.setdefault(tp[0], {}).setdefault(holder, set())

    def _move(self, giver: str, taker: str, tp: TopicPartition) -> None:
        held = self._index(giver, tp)
        held.remove(tp)
        if not held:
            table = self.stuck if tp in self.kept[giver] else self.free
            del table[tp[0]][giver]
        self._index(taker, tp).add(tp)
        self.assignment[giver].remove(tp)
        self.assignment[taker].add(tp)
        self.size[giver] -= 1
        self.size[taker] += 1

    def run(self) -> None:
        for allow_kept in (False, True):
            while (chain := self._find_chain(allow_kept)) is not None:
                for giver, taker, tp in chain:
                    self._move(giver, taker, tp)

    def _find_chain(self, allow_kept: bool) -> list[tuple[str, str, TopicPartition]] | None:
        """The cheapest chain (fewest kept partitions moved) from a member
        to one with at least two fewer partitions, or None. A 0-1 breadth
        first search backwards from the light members (those at or below a
        size level, lowest level first); a topic's holders are reached from
        the first member subscribed to it, so each topic is expanded once."""
        size, key = self.size, self.key
        top = max(size.values(), default=0)
        for level in sorted(set(size.values())):
            if level + 2 > top:
                return None
            cost: dict[str, int] = {}
            hop: dict[str, tuple[str, TopicPartition] | None] = {}
            queue: deque[tuple[int, str]] = deque()
            for m in self.order:
                if size[m] <= level:
                    cost[m], hop[m] = 0, None
                    queue.append((0, m))
            expanded: set[str] = set()
            while queue:
                c, taker = queue.popleft()
                if c > cost[taker]:
                    continue
                for topic in self.topics[taker]:
                    if topic in expanded:
                        continue
                    expanded.add(topic)
                    tables = [(self.free, 0)] + ([(self.stuck, 1)] if allow_kept else [])
                    for table, extra in tables:
                        holders = table.get(topic, {})
                        for giver in sorted(holders, key=key.__getitem__):
                            if giver in cost and cost[giver] <= c + extra:
                                continue
                            cost[giver] = c + extra
                            hop[giver] = (taker, min(holders[giver]))  # one topic
                            if extra:
                                queue.append((c + extra, giver))
                            else:
                                queue.appendleft((c, giver))
            heavy = [m for m in cost if size[m] >= level + 2]
            if heavy:
                start = min(heavy, key=lambda m: (cost[m], -size[m], key[m]))
                chain = []
                giver = start
                while (step := hop[giver]) is not None:
                    chain.append((giver, step[0], step[1]))
                    giver = step[0]
                return chain
        return None
