"""The server-side assignors of the consumer protocol (KIP-848) on the
scenarios of Kafka's UniformHomogeneousAssignmentBuilderTest (in Kafka's
tree, OptimizedUniformAssignmentBuilderTest), UniformHeterogeneous-
AssignmentBuilderTest and RangeAssignorTest. Where Kafka's expected output
depends on its hash-map member order, the test asserts what the scenario is
about (who keeps what, sizes) and the one outcome muster's order gives,
worked out by hand in the comments."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from muster.assignors.server.registry import (
    ASSIGNORS,
    DEFAULT_ASSIGNOR,
    UnknownAssignorError,
    assign,
    member_spec,
)
from tests.support.imports import imported_modules

uniform = ASSIGNORS["uniform"]
range_ = ASSIGNORS["range"]


def sizes(result: dict[str, dict[str, list[int]]]) -> dict[str, int]:
    return {m: sum(len(ps) for ps in parts.values()) for m, parts in result.items()}


def test_registry_has_kafkas_names_and_default() -> None:
    assert sorted(ASSIGNORS) == ["range", "uniform"]
    assert DEFAULT_ASSIGNOR == "uniform"  # Kafka's group.consumer.assignors default order
    with pytest.raises(UnknownAssignorError, match="sticky"):
        assign("sticky", {"a": member_spec(["t"])}, {"t": 1})


@pytest.mark.parametrize("name", ["uniform", "range"])
def test_no_members_no_topics_and_unknown_topics(name: str) -> None:
    a = ASSIGNORS[name]
    assert a({}, {"t1": 3}) == {}
    assert a({"a": member_spec([])}, {"t1": 3}) == {"a": {}}
    # Kafka's coordinator gives its assignor only topics with metadata; a topic not
    # created yet simply gets no partitions.
    assert a({"a": member_spec(["nope"]), "b": member_spec(["nope"])}, {"t1": 3}) == {
        "a": {},
        "b": {},
    }
    assert a({"a": member_spec(["t1", "nope"])}, {"t1": 2}) == {"a": {"t1": [0, 1]}}


# --- uniform, homogeneous ---------------------------------------------------------------


def test_uniform_first_assignment_two_members_two_topics() -> None:
    # 5 partitions over 2 members: quotas 3 and 2; with nothing owned, member order
    # decides who gets the extra one (a), and the partitions go in topic order.
    got = uniform(
        {"a": member_spec(["t1", "t3"]), "b": member_spec(["t3", "t1"])}, {"t1": 3, "t3": 2}
    )
    assert got == {"a": {"t1": [0, 1, 2]}, "b": {"t3": [0, 1]}}


def test_uniform_more_members_than_partitions() -> None:
    got = uniform({m: member_spec(["t3"]) for m in "abc"}, {"t3": 2})
    assert got == {"a": {"t3": [0]}, "b": {"t3": [1]}, "c": {}}


def test_uniform_unbalanced_previous_assignment_is_rebalanced_stickily() -> None:
    # Kafka's testReassignmentForTwoMembersTwoTopicsGivenUnbalancedPrevAssignment, same answer.
    members = {
        "A": member_spec(["t1", "t2"], {"t1": [0, 1], "t2": [0, 1]}),
        "B": member_spec(["t1", "t2"], {"t1": [2], "t2": [2]}),
    }
    assert uniform(members, {"t1": 3, "t2": 3}) == {
        "A": {"t1": [0, 1], "t2": [0]},
        "B": {"t1": [2], "t2": [1, 2]},
    }


def test_uniform_partitions_added_keep_everything_owned() -> None:
    members = {
        "A": member_spec(["t1", "t2"], {"t1": [0, 2], "t2": [0]}),
        "B": member_spec(["t1", "t2"], {"t1": [1], "t2": [1, 2]}),
    }
    got = uniform(members, {"t1": 6, "t2": 5})
    # 11 partitions: quotas 6 and 5, the tie of 3 kept each broken by member id (A);
    # the new ones are handed out in topic order.
    assert got == {"A": {"t1": [0, 2, 3, 4, 5], "t2": [0]}, "B": {"t1": [1], "t2": [1, 2, 3, 4]}}


def test_uniform_member_added_only_loses_what_the_newcomer_needs() -> None:
    # Kafka's testReassignmentWhenOneMemberAddedAfterInitialAssignmentWithTwoMembersTwoTopics,
    # same answer: each old member gives up its last partition, C gets both.
    members = {
        "A": member_spec(["t1", "t2"], {"t1": [0, 2], "t2": [0]}),
        "B": member_spec(["t1", "t2"], {"t1": [1], "t2": [1, 2]}),
        "C": member_spec(["t1", "t2"]),
    }
    assert uniform(members, {"t1": 3, "t2": 3}) == {
        "A": {"t1": [0, 2]},
        "B": {"t1": [1], "t2": [1]},
        "C": {"t2": [0, 2]},
    }


def test_uniform_member_removed_survivors_keep_theirs() -> None:
    members = {
        "A": member_spec(["t1", "t2"], {"t1": [0], "t2": [0]}),
        "B": member_spec(["t1", "t2"], {"t1": [1], "t2": [1]}),
    }  # C, which had t1-2 and t2-2, left
    got = uniform(members, {"t1": 3, "t2": 3})
    assert got == {"A": {"t1": [0, 2], "t2": [0]}, "B": {"t1": [1], "t2": [1, 2]}}


def test_uniform_subscription_removed_drops_the_topic() -> None:
    members = {
        "A": member_spec(["t2"], {"t1": [0], "t2": [0]}),
        "B": member_spec(["t2"], {"t1": [1], "t2": [1]}),
    }
    assert uniform(members, {"t1": 2, "t2": 2}) == {"A": {"t2": [0]}, "B": {"t2": [1]}}


def test_uniform_deleted_topic_and_vanished_partitions_drop_out() -> None:
    members = {
        "A": member_spec(["t1", "gone"], {"t1": [0, 1], "gone": [0, 1, 2]}),
        "B": member_spec(["t1", "gone"], {"t1": [2, 7]}),
    }
    assert uniform(members, {"t1": 4}) == {"A": {"t1": [0, 1]}, "B": {"t1": [2, 3]}}


# --- uniform, heterogeneous -------------------------------------------------------------


def test_uniform_heterogeneous_first_assignment() -> None:
    # Topic order: t1 and t3 both have 3 partitions per subscriber, so the one with fewer
    # subscribers first: t1, all to A (its only subscriber). Then each t3 partition to the
    # least loaded subscriber (ties by member id): B 0 1 2, A 3, B 4, A 5: A 5, B 4,
    # balanced, nothing moves. Kafka's builder ends at 4/5 by another path; both leave t1
    # entirely with A.
    members = {"A": member_spec(["t1", "t3"]), "B": member_spec(["t3"])}
    got = uniform(members, {"t1": 3, "t3": 6})
    assert got == {"A": {"t1": [0, 1, 2], "t3": [3, 5]}, "B": {"t3": [0, 1, 2, 4]}}


def test_uniform_heterogeneous_three_members_overlapping() -> None:
    members = {"a": member_spec(["t1"]), "b": member_spec(["t1", "t2"]), "c": member_spec(["t2"])}
    got = uniform(members, {"t1": 3, "t2": 6})
    assert got == {"a": {"t1": [0, 1, 2]}, "b": {"t2": [0, 2, 4]}, "c": {"t2": [1, 3, 5]}}


def test_uniform_heterogeneous_member_without_subscriptions() -> None:
    members = {"A": member_spec(["t1"]), "B": member_spec([])}
    assert uniform(members, {"t1": 2}) == {"A": {"t1": [0, 1]}, "B": {}}


def test_uniform_heterogeneous_keeps_balanced_previous_assignment() -> None:
    members = {
        "A": member_spec(["t1", "t2"], {"t1": [1], "t2": [0]}),
        "B": member_spec(["t2", "t3"], {"t2": [1], "t3": [0]}),
        "C": member_spec(["t3"], {"t3": [1]}),
    }
    got = uniform(members, {"t1": 2, "t2": 2, "t3": 2})
    # t1-0 is new: its only subscriber A takes it. A 3, B 2, C 1 is balanced per topic
    # (t2: A 3 vs B 2; t3: B 2 vs C 1), so nothing moves.
    assert got == {"A": {"t1": [0, 1], "t2": [0]}, "B": {"t2": [1], "t3": [0]}, "C": {"t3": [1]}}


def test_uniform_heterogeneous_member_removed_partitions_spread() -> None:
    # C (t2 and t3) left; A subscribes t1+t2, B t2+t3.
    members = {
        "A": member_spec(["t1", "t2"], {"t1": [0, 1], "t2": [0]}),
        "B": member_spec(["t2", "t3"], {"t2": [1], "t3": [0, 1]}),
    }
    got = uniform(members, {"t1": 2, "t2": 4, "t3": 4})
    assert got["A"]["t1"] == [0, 1] and set(got["A"]["t2"]) >= {0}
    assert set(got["B"]["t3"]) >= {0, 1} and set(got["B"]["t2"]) >= {1}
    assert sorted(sizes(got).values()) == [5, 5]


# --- range ----------------------------------------------------------------------------


def test_range_co_partitions_same_subscriptions() -> None:
    members = {"A": member_spec(["t1", "t3"]), "B": member_spec(["t1", "t3"])}
    assert range_(members, {"t1": 3, "t3": 3}) == {
        "A": {"t1": [0, 1], "t3": [0, 1]},
        "B": {"t1": [2], "t3": [2]},
    }


def test_range_different_subscriptions() -> None:
    # Kafka's testFirstAssignmentThreeMembersThreeTopicsDifferentSubscriptions, same answer.
    members = {
        "A": member_spec(["t1", "t2"]),
        "B": member_spec(["t3"]),
        "C": member_spec(["t2", "t3"]),
    }
    assert range_(members, {"t1": 3, "t2": 3, "t3": 2}) == {
        "A": {"t1": [0, 1, 2], "t2": [0, 1]},
        "B": {"t3": [0]},
        "C": {"t2": [2], "t3": [1]},
    }


def test_range_more_members_than_partitions() -> None:
    members = {m: member_spec(["t1"]) for m in "ABC"}
    assert range_(members, {"t1": 2}) == {"A": {"t1": [0]}, "B": {"t1": [1]}, "C": {}}


def test_range_static_members_keep_their_range_across_a_new_member_id() -> None:
    # Kafka's testMixedStaticMembership: static members sort by instance id before the
    # dynamic one, so instanceA's new member id gets instanceA's old range.
    before = {
        "memberA": member_spec(["t1"], instance_id="instanceA"),
        "memberC": member_spec(["t1"], instance_id="instanceC"),
        "memberB": member_spec(["t1"]),
    }
    first = range_(before, {"t1": 5})
    assert first == {"memberA": {"t1": [0, 1]}, "memberC": {"t1": [2, 3]}, "memberB": {"t1": [4]}}
    after = {k: v for k, v in before.items() if k != "memberA"}
    after["memberA1"] = member_spec(["t1"], instance_id="instanceA")
    second = range_(after, {"t1": 5})
    assert second["memberA1"] == first["memberA"]
    assert second["memberB"] == first["memberB"] and second["memberC"] == first["memberC"]


def test_range_partition_added() -> None:
    members = {
        "A": member_spec(["t1", "t2"], {"t1": [0, 1], "t2": [0, 1]}),
        "B": member_spec(["t1", "t2"], {"t1": [2], "t2": [2]}),
    }
    assert range_(members, {"t1": 4, "t2": 3}) == {
        "A": {"t1": [0, 1], "t2": [0, 1]},
        "B": {"t1": [2, 3], "t2": [2]},
    }


def test_imports_stay_inside_assignors() -> None:
    """The package README's rule: the standard library and muster.assignors only."""
    import muster.assignors.server as pkg

    impure = {"asyncio", "socket", "selectors", "time", "threading", "datetime"}
    offences = []
    for path in sorted(Path(pkg.__file__).parent.glob("*.py")):
        for name in imported_modules(path):
            top = name.split(".")[0]
            pure_stdlib = top in sys.stdlib_module_names and top not in impure
            if not (name.startswith("muster.assignors") or pure_stdlib or top == "__future__"):
                offences.append((path.name, name))
    assert offences == []
