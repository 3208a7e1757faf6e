"""Property tests (hypothesis) for the consumer protocol's server-side
assignors over random groups: subscriptions (some to topics without
metadata), partition counts, static ids, and a current target assignment
that may name vanished topics and partitions or overlap.

For both: every partition of every subscribed, existing topic goes to exactly
one member subscribed to it, nothing else is assigned, every member is in
the result, and the same input in any order gives the same output.
uniform: homogeneous groups are balanced (sizes differ by at most one),
heterogeneous ones per topic (no subscriber of a topic holding one of its
partitions has two more than another subscriber of it); sticky: its own
output is a fixpoint, a member whose valid partitions fit under the minimum
quota keeps them all, a member that leaves lets every survivor keep all it
had, a member that joins takes partitions only from others.
range: per topic, contiguous ranges in member order, sizes differ by at
most one, and equal subscriptions to equally sized topics are co-partitioned.
"""

from __future__ import annotations

import os
import random
from collections.abc import Mapping

from hypothesis import given, settings
from hypothesis import strategies as st

from muster.assignors.model import Member, member_order_key
from muster.assignors.server.registry import ASSIGNORS, MemberSpec, TargetAssignment

TOPICS = ["a", "b", "c", "d"]
member_ids = st.text(alphabet="abAB0\uff5e\U0001f600", min_size=1, max_size=4)
SETTINGS = settings(
    max_examples=int(os.environ.get("MUSTER_HYPOTHESIS_EXAMPLES", "300")), deadline=None
)
Group = tuple[dict[str, MemberSpec], dict[str, int]]


@st.composite
def groups(draw: st.DrawFn, *, equal: bool | None = None, clean: bool = False) -> Group:
    """(members, partitions_per_topic). The current assignment is any subset of
    partitions (one past the end included: a partition that vanished) of any topic
    (a deleted one included), shared out disjointly unless overlaps are drawn."""
    universe = draw(st.lists(st.sampled_from(TOPICS), min_size=1, max_size=4, unique=True))
    counts = {t: draw(st.integers(0, 9)) for t in universe}
    ids = draw(st.lists(member_ids, min_size=1, max_size=7, unique=True))
    topic_sets = st.frozensets(st.sampled_from([*universe, "no-metadata"]))
    if equal is None:
        equal = draw(st.booleans())
    shared = draw(topic_sets)
    subs = {m: shared if equal else draw(topic_sets) for m in ids}
    owned: dict[str, dict[str, set[int]]] = {m: {} for m in ids}
    if not clean:
        overlap = draw(st.booleans())
        for t in [*universe, "deleted"]:
            for p in range(counts.get(t, 2) + 1):
                holders = draw(st.lists(st.sampled_from(ids), max_size=2 if overlap else 1))
                for m in holders:
                    owned[m].setdefault(t, set()).add(p)
    instance = {m: draw(st.one_of(st.none(), member_ids)) for m in ids}
    members = {
        m: MemberSpec(subs[m], {t: frozenset(ps) for t, ps in owned[m].items()}, instance[m])
        for m in ids
    }
    return members, counts


def expected_partitions(members: Mapping[str, MemberSpec], counts: Mapping[str, int]) -> set:
    return {
        (t, p)
        for spec in members.values()
        for t in spec.topics
        if counts.get(t, 0) > 0
        for p in range(counts[t])
    }


def check_valid(
    members: Mapping[str, MemberSpec], counts: Mapping[str, int], result: TargetAssignment
) -> None:
    assert set(result) == set(members)
    seen: list[tuple[str, int]] = []
    for member_id, parts in result.items():
        for topic, ps in parts.items():
            assert ps, "no empty topic entries"
            assert ps == sorted(set(ps))
            assert topic in members[member_id].topics, "only subscribed topics"
            seen += [(topic, p) for p in ps]
    assert len(seen) == len(set(seen)), "a partition given twice"
    assert set(seen) == expected_partitions(members, counts)


def size(parts: Mapping[str, list[int]]) -> int:
    return sum(len(ps) for ps in parts.values())


def shuffled(members: Mapping[str, MemberSpec], seed: int) -> dict[str, MemberSpec]:
    items = list(members.items())
    random.Random(seed).shuffle(items)
    return {
        m: MemberSpec(
            frozenset(random.Random(seed).sample(sorted(s.topics), len(s.topics))),
            dict(reversed(list(s.assignment.items()))),
            s.instance_id,
        )
        for m, s in items
    }


def as_current(
    result: TargetAssignment, members: Mapping[str, MemberSpec]
) -> dict[str, MemberSpec]:
    return {
        m: MemberSpec(
            members[m].topics,
            {t: frozenset(ps) for t, ps in result[m].items()},
            members[m].instance_id,
        )
        for m in members
    }


@SETTINGS
@given(groups(), st.sampled_from(sorted(ASSIGNORS)), st.integers(0, 2**32))
def test_valid_and_deterministic(group: Group, name: str, seed: int) -> None:
    members, counts = group
    result = ASSIGNORS[name](members, counts)
    check_valid(members, counts, result)
    again = ASSIGNORS[name](shuffled(members, seed), dict(reversed(list(counts.items()))))
    assert again == result


@SETTINGS
@given(groups(equal=True))
def test_uniform_homogeneous_is_balanced_and_keeps_what_fits(group: Group) -> None:
    members, counts = group
    result = ASSIGNORS["uniform"](members, counts)
    sizes = [size(p) for p in result.values()]
    assert max(sizes) - min(sizes) <= 1
    total = len(expected_partitions(members, counts))
    min_quota = total // len(members)
    claimed: set[tuple[str, int]] = set()
    for member_id in sorted(members, key=lambda m: member_order_key(m, Member(frozenset()))):
        spec = members[member_id]
        valid = {
            (t, p)
            for t, ps in spec.assignment.items()
            if t in spec.topics
            for p in ps
            if p < counts.get(t, 0)
        }
        got = {(t, p) for t, ps in result[member_id].items() for p in ps}
        if not (valid & claimed):  # overlapping claims: only the first claimant is owed
            kept = valid & got
            assert len(kept) >= min(len(valid), min_quota)
        claimed |= valid


@SETTINGS
@given(groups(equal=False))
def test_uniform_heterogeneous_is_balanced_per_topic(group: Group) -> None:
    members, counts = group
    result = ASSIGNORS["uniform"](members, counts)
    sizes = {m: size(p) for m, p in result.items()}
    for topic, count in counts.items():
        if count <= 0:
            continue
        subscribers = [m for m, s in members.items() if topic in s.topics]
        holders = [m for m in subscribers if result[m].get(topic)]
        for holder in holders:
            for other in subscribers:
                assert sizes[holder] - sizes[other] <= 1, (topic, holder, other, sizes)


@SETTINGS
@given(groups(), st.sampled_from(sorted(ASSIGNORS)))
def test_own_output_is_a_fixpoint(group: Group, name: str) -> None:
    members, counts = group
    first = ASSIGNORS[name](members, counts)
    assert ASSIGNORS[name](as_current(first, members), counts) == first


@SETTINGS
@given(groups(equal=True, clean=True), st.data())
def test_uniform_member_leaving_survivors_keep_everything(
    group: Group, data: st.DataObject
) -> None:
    members, counts = group
    stable = as_current(ASSIGNORS["uniform"](members, counts), members)
    if len(stable) < 2:
        return
    gone = data.draw(st.sampled_from(sorted(stable)))
    survivors = {m: s for m, s in stable.items() if m != gone}
    after = ASSIGNORS["uniform"](survivors, counts)
    for m, spec in survivors.items():
        for t, ps in spec.assignment.items():
            assert set(ps) <= set(after[m].get(t, [])), (m, t)


@SETTINGS
@given(groups(equal=True, clean=True), member_ids)
def test_uniform_member_joining_takes_only_from_others(group: Group, newcomer: str) -> None:
    members, counts = group
    if newcomer in members:
        return
    stable = as_current(ASSIGNORS["uniform"](members, counts), members)
    topics = next(iter(members.values())).topics
    joined = {**stable, newcomer: MemberSpec(topics)}
    after = ASSIGNORS["uniform"](joined, counts)
    for m, spec in stable.items():
        for t, ps in after[m].items():
            assert set(ps) <= spec.assignment.get(t, frozenset()), (m, t)


@SETTINGS
@given(groups())
def test_range_contiguous_balanced_per_topic_and_co_partitioned(group: Group) -> None:
    members, counts = group
    result = ASSIGNORS["range"](members, counts)
    for topic, count in counts.items():
        subscribers = sorted(
            (m for m, s in members.items() if topic in s.topics),
            key=lambda m: member_order_key(
                m, Member(frozenset(), group_instance_id=members[m].instance_id)
            ),
        )
        if count <= 0 or not subscribers:
            continue
        ranges = [result[m].get(topic, []) for m in subscribers]
        assert [p for r in ranges for p in r] == list(range(count)), "contiguous, in member order"
        lengths = [len(r) for r in ranges]
        assert max(lengths) - min(lengths) <= 1
    # Co-partitioning (Kafka's RangeAssignor guarantee): all members subscribed to the
    # same topics, all of one size: each member has the same partition numbers of each.
    topic_sets = {s.topics for s in members.values()}
    if len(topic_sets) == 1:
        same = [t for t in next(iter(topic_sets)) if counts.get(t, 0) > 0]
        if len({counts[t] for t in same}) == 1:
            for member_id in members:
                assert len({tuple(result[member_id].get(t, [])) for t in same}) == 1


@SETTINGS
@given(groups(clean=True), st.integers(0, 2**32))
def test_uniform_keeps_any_valid_balanced_assignment(group: Group, seed: int) -> None:
    """Not only its own output: the same assignment with the members' ids shuffled
    (so member order no longer matches who holds more) is kept as it is."""
    members, counts = group
    stable = as_current(ASSIGNORS["uniform"](members, counts), members)
    ids = sorted(stable)
    relabel = dict(zip(ids, random.Random(seed).sample(ids, len(ids)), strict=True))
    moved = {relabel[m]: spec for m, spec in stable.items()}
    after = ASSIGNORS["uniform"](moved, counts)
    assert after == {
        m: {t: sorted(ps) for t, ps in sorted(s.assignment.items())} for m, s in moved.items()
    }
