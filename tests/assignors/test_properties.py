"""Property tests (hypothesis) over random groups: members, subscriptions,
partition counts, static ids and previous ownership.

Checked for every assignor: every partition of every subscribed topic goes
to exactly one member subscribed to its topic (cooperative: at most one, and
all of them once the revoked partitions are no longer owned), the output is
well formed, and the same input (in any member order) gives the same output.
Balance: range per topic (its guarantee), roundrobin and sticky across
members with identical subscriptions, sticky also "no partition, nor chain
of partitions, could move to a member with two fewer" (optimal sizes).
Stickiness and the cooperative rule: no partition is given to a member while
another member still owns it.
"""

from __future__ import annotations

import os
import random
from collections import Counter
from collections.abc import Mapping

from hypothesis import given, settings
from hypothesis import strategies as st

from muster.assignors.cooperative_sticky import assign as cooperative
from muster.assignors.model import member_order_key
from muster.assignors.range import assign as range_assign
from muster.assignors.registry import ASSIGNORS, GroupAssignment, Member
from muster.assignors.roundrobin import assign as roundrobin
from muster.assignors.sticky import assign as sticky

randoms = st.randoms(use_true_random=False)
TOPIC_NAMES = ["a", "b", "c", "d", "e"]
member_ids = st.text(alphabet="abAB0\uff5e\U0001f600", min_size=1, max_size=4)
# MUSTER_HYPOTHESIS_EXAMPLES=5000 for a longer hunt
SETTINGS = settings(
    max_examples=int(os.environ.get("MUSTER_HYPOTHESIS_EXAMPLES", "300")), deadline=None
)


@st.composite
def groups(
    draw: st.DrawFn, *, equal: bool | None = None, conflicts: bool = False
) -> tuple[dict[str, Member], dict[str, int]]:
    """(members, partitions_per_topic). Previous ownership is a valid
    (disjoint) earlier assignment of any partitions, possibly of topics the
    member no longer subscribes to or that no longer exist, unless
    `conflicts`, where claims overlap freely."""
    universe = draw(st.lists(st.sampled_from(TOPIC_NAMES), min_size=1, max_size=4, unique=True))
    counts = {t: draw(st.integers(0, 7)) for t in universe}
    ids = draw(st.lists(member_ids, min_size=1, max_size=6, unique=True))
    topic_sets = st.frozensets(st.sampled_from([*universe, "no-metadata"]), min_size=1)
    if equal is None:
        equal = draw(st.booleans())
    shared = draw(topic_sets)
    subs = {m: shared if equal else draw(topic_sets) for m in ids}
    all_tps = [(t, p) for t in universe for p in range(counts[t] + 1)]  # +1: a vanished one
    owned: dict[str, set[tuple[str, int]]] = {m: set() for m in ids}
    if conflicts:
        for m in ids:
            owned[m] = (
                set(draw(st.lists(st.sampled_from(all_tps), max_size=6))) if all_tps else set()
            )
    else:
        for tp in all_tps:
            owner = draw(st.sampled_from([None, *ids]))
            if owner is not None:
                owned[owner].add(tp)
    gens = st.sampled_from([-1, 3, 4, 5]) if conflicts else st.sampled_from([-1, 5])
    members = {
        m: Member(
            subs[m],
            frozenset(owned[m]),
            draw(gens),
            None,
            draw(st.none() | st.sampled_from(["i1", "i2", "i3", "i4", "i5", "i6"])),
        )
        for m in ids
    }
    # group.instance.ids are unique within a group
    seen: set[str] = set()
    for m, member in members.items():
        if member.group_instance_id in seen:
            members[m] = Member(member.topics, member.owned, member.generation, None, None)
        elif member.group_instance_id is not None:
            seen.add(member.group_instance_id)
    return members, counts


def all_partitions(members: Mapping[str, Member], counts: Mapping[str, int]) -> set:
    subscribed = set().union(*(m.topics for m in members.values()))
    return {(t, p) for t, n in counts.items() if t in subscribed for p in range(n)}


def flat(result: GroupAssignment) -> list[tuple[str, str, int]]:
    return [(m, t, p) for m, topics in result.items() for t, ps in topics.items() for p in ps]


def sizes(result: GroupAssignment) -> dict[str, int]:
    return {m: sum(len(ps) for ps in topics.values()) for m, topics in result.items()}


def check_valid(members, counts, result: GroupAssignment, *, complete: bool = True) -> None:
    assert set(result) == set(members)
    for topics in result.values():
        for ps in topics.values():
            assert ps, "no empty topic lists"
            assert ps == sorted(set(ps))
    given_out = Counter((t, p) for _, t, p in flat(result))
    assert all(n == 1 for n in given_out.values()), "a partition assigned twice"
    expected = all_partitions(members, counts)
    assert set(given_out) <= expected
    if complete:
        assert set(given_out) == expected
    for m, t, _p in flat(result):
        assert t in members[m].topics, "assigned to a member not subscribed to its topic"


def check_identical_balance(members, result: GroupAssignment) -> None:
    n = sizes(result)
    by_subscription: dict[frozenset, list[int]] = {}
    for m, member in members.items():
        by_subscription.setdefault(member.topics, []).append(n[m])
    for counts in by_subscription.values():
        assert max(counts) - min(counts) <= 1, by_subscription


def check_locally_balanced(members, result: GroupAssignment) -> None:
    n = sizes(result)
    for m, t, p in flat(result):
        for other, member in members.items():
            if t in member.topics:
                assert n[m] - n[other] <= 1, f"{t}-{p} could move from {m} to {other}"


def check_no_chain(members, result: GroupAssignment) -> None:
    """No chain u -> ... -> v (each member hands a partition to the next,
    which subscribes to its topic) from a member to one with two fewer: the
    certificate that the sizes are optimally balanced."""
    n = sizes(result)
    held_topics = {m: set(topics) for m, topics in result.items()}
    for u in members:
        seen, frontier = {u}, [u]
        while frontier:
            x = frontier.pop()
            for y, member in members.items():
                if y not in seen and held_topics[x] & member.topics:
                    assert n[u] - n[y] <= 1, f"chain from {u} ({n[u]}) to {y} ({n[y]})"
                    seen.add(y)
                    frontier.append(y)


def reorder(members: dict[str, Member], rnd: random.Random) -> dict[str, Member]:
    """The same members in another order."""
    items = list(members.items())
    rnd.shuffle(items)
    return dict(items)


def next_round(members: dict[str, Member], result: GroupAssignment) -> dict[str, Member]:
    """The same members rejoining after `result`: they own what they were
    given, at the next generation."""
    gen = max(m.generation for m in members.values()) + 1
    return {
        m: Member(
            member.topics,
            frozenset((t, p) for t, ps in result[m].items() for p in ps),
            gen,
            member.rack,
            member.group_instance_id,
        )
        for m, member in members.items()
    }


# -- every assignor --------------------------------------------------------------


@given(groups(), st.sampled_from(["range", "roundrobin", "sticky"]), randoms)
@SETTINGS
def test_eager_assignors_assign_every_partition_once_deterministically(group, name, rnd) -> None:
    members, counts = group
    assign = ASSIGNORS[name].assign
    result = assign(members, counts)
    check_valid(members, counts, result)
    assert assign(members, counts) == result
    assert assign(reorder(members, rnd), counts) == result


@given(groups(), randoms)
@SETTINGS
def test_cooperative_assigns_at_most_once_then_everything(group, rnd) -> None:
    members, counts = group
    first = cooperative(members, counts)
    check_valid(members, counts, first, complete=False)
    assert cooperative(reorder(members, rnd), counts) == first
    # never a partition that another member still owns
    for m, t, p in flat(first):
        assert all((t, p) not in o.owned for om, o in members.items() if om != m)
    # it is the sticky target minus exactly those partitions
    target = sticky(members, counts)
    for m, t, p in flat(target):
        owned_elsewhere = any((t, p) in o.owned for om, o in members.items() if om != m)
        assert (p in first[m].get(t, [])) == (not owned_elsewhere)
    # the owners revoke what they lost and rejoin: now everything is assigned
    second = cooperative(next_round(members, first), counts)
    check_valid(members, counts, second)
    assert second == sticky(next_round(members, first), counts)
    # and then it stays put
    assert cooperative(next_round(members, second), counts) == second


# -- range -----------------------------------------------------------------------


@given(groups())
@SETTINGS
def test_range_is_balanced_and_contiguous_per_topic(group) -> None:
    members, counts = group
    result = range_assign(members, counts)
    for t, n in counts.items():
        subscribers = sorted(
            (m for m in members if t in members[m].topics),
            key=lambda m: member_order_key(m, members[m]),
        )
        if not subscribers or n == 0:
            continue
        got = [result[m].get(t, []) for m in subscribers]
        assert [p for ps in got for p in ps] == list(range(n)), "contiguous ranges in order"
        lengths = [len(ps) for ps in got]
        assert max(lengths) - min(lengths) <= 1
        assert lengths == sorted(lengths, reverse=True), "the first members get the extras"


@given(groups(equal=True))
@SETTINGS
def test_range_same_member_gets_the_extras_on_every_topic(group) -> None:
    # what Kafka's range does (and why it is not balanced across topics):
    # partition i of co-partitioned topics lands on the same member
    members, counts = group
    result = range_assign(members, counts)
    subscribed = next(iter(members.values())).topics
    same_size = [t for t in counts if t in subscribed and counts[t] == max(counts.values())]
    for m in members:
        assert len({tuple(result[m].get(t, [])) for t in same_size}) <= 1


# -- roundrobin --------------------------------------------------------------------


@given(groups(equal=True))
@SETTINGS
def test_roundrobin_balances_identical_subscriptions(group) -> None:
    members, counts = group
    check_identical_balance(members, roundrobin(members, counts))


# -- sticky ------------------------------------------------------------------------


@given(groups())
@SETTINGS
def test_sticky_is_balanced(group) -> None:
    members, counts = group
    result = sticky(members, counts)
    check_identical_balance(members, result)
    check_locally_balanced(members, result)
    check_no_chain(members, result)


@given(groups())
@SETTINGS
def test_sticky_and_cooperative_keep_everything_when_nothing_changed(group) -> None:
    members, counts = group
    for assign in (sticky, cooperative):
        result = assign(members, counts)
        rejoin = next_round(members, result)
        again = assign(rejoin, counts)
        if assign is sticky:
            assert again == result
        # cooperative: a second round may hand out the revoked partitions,
        # but nobody loses anything it owns
        for m, member in rejoin.items():
            assert {tp for tp in member.owned} <= {(t, p) for t, ps in again[m].items() for p in ps}


@given(groups(equal=True))
@SETTINGS
def test_sticky_keeps_owned_partitions_up_to_the_quota(group) -> None:
    members, counts = group
    result = sticky(members, counts)
    total = len(all_partitions(members, counts))
    min_quota = total // len(members)
    for m, member in members.items():
        valid = {(t, p) for t, p in member.owned if t in member.topics and p < counts.get(t, 0)}
        kept = {(t, p) for t, ps in result[m].items() for p in ps} & valid
        assert len(kept) >= min(len(valid), min_quota)


@given(groups(equal=True))
@SETTINGS
def test_sticky_keeps_a_balanced_previous_assignment_whole(group) -> None:
    members, counts = group
    previous = roundrobin(members, counts)  # balanced for identical subscriptions
    rejoin = next_round(members, previous)
    assert sticky(rejoin, counts) == previous
    assert cooperative(rejoin, counts) == previous


# -- conflicting claims -------------------------------------------------------------


@given(groups(conflicts=True), randoms)
@SETTINGS
def test_conflicting_claims(group, rnd) -> None:
    members, counts = group
    result = sticky(members, counts)
    check_valid(members, counts, result)
    check_identical_balance(members, result)
    assert sticky(reorder(members, rnd), counts) == result
    coop = cooperative(members, counts)
    check_valid(members, counts, coop, complete=False)
    assert cooperative(reorder(members, rnd), counts) == coop
    for m, t, p in flat(coop):
        rivals = [o for om, o in members.items() if om != m and (t, p) in o.owned]
        if rivals:
            # only when m's own claim is at a strictly higher generation
            assert (t, p) in members[m].owned
            assert all(members[m].generation > o.generation for o in rivals)
