"""Who a classic group's join phase waits for, from the last generation."""

from __future__ import annotations

from muster.console.awaited import awaited
from muster.coordinator.derived import DerivedMember, Generation


def _member(member_id: str, timeout: int) -> DerivedMember:
    return DerivedMember(member_id, "c-" + member_id, "/h", None, frozenset(), timeout)


def test_expected_members_newcomers_and_deadline() -> None:
    history = [
        Generation("generation", 1, 1_000, members=(_member("a", 30_000),)),
        Generation("generation", 2, 2_000, members=(_member("a", 30_000), _member("b", 60_000))),
    ]
    seen = awaited(history, ["a", "c"], started_ms=5_000)
    assert seen is not None
    assert seen.generation == 2
    assert [e.member.member_id for e in seen.missing] == ["b"]
    assert seen.newcomers == ("c",)
    assert seen.deadline_ms == 65_000


def test_nothing_to_compare_with() -> None:
    assert awaited([], ["a"], 1) is None
    assert awaited([Generation("removed", -1, 5)], ["a"], 1) is None


def test_join_round_from_muster_events() -> None:
    """Who rejoined (a JoinWaiting since the last RebalanceStarted), who is
    still awaited, and the deadline the coordinator told."""
    from muster.client.admin import MemberDescription
    from muster.console.awaited import join_round
    from muster.coordinator import events as ev

    started = ev.RebalanceStarted("g", 3, "Stable", "member_joined", "c", None, "", 3, 1_000)
    events: list[ev.GroupEvent] = [
        ev.JoinWaiting("g", 2, "a", None, "old", 1, 2, 40_000, 500),  # an earlier round
        started,
        ev.JoinWaiting("g", 3, "c", None, "c-c", 1, 3, 61_000, 1_000),
        ev.JoinWaiting("g", 3, "a", None, "c-a", 2, 3, 61_000, 1_200),
    ]
    held = [MemberDescription(m, None, "c-" + m, "/h", frozenset()) for m in ("a", "b", "c")]
    seen = join_round(events, held)
    assert seen is not None
    assert (seen.generation, seen.started_ms, seen.deadline_ms) == (3, 1_000, 61_000)
    assert [m.member_id for m in seen.awaiting] == ["b"]
    assert [(m.member_id, m.rejoined_ms) for m in seen.rejoined] == [("a", 1_200), ("c", 1_000)]
    done = ev.JoinCompleted(
        "g", 4, "range", "a", 2, "rebalance_timeout_expired", ("b",), 60, 61_000
    )
    assert join_round([*events, done], held) is None
    assert join_round([], held) is None


def test_reconciling_deadlines_from_consumer_group_events() -> None:
    """Only the events since the last target count: a member revoking is
    awaited until the deadline its ConsumerMemberReconciled told, one silent
    since the target until target time + session timeout at the latest, one
    waiting for others' partitions has none; an older target's events do not."""
    from muster.console.awaited import reconciling
    from muster.coordinator.events_modern import ConsumerMemberReconciled as Rec
    from muster.coordinator.events_modern import ConsumerTargetAssigned as Target

    events = [
        Target("g", 1, "uniform", 1, ("a",), 100),
        Rec("g", "c", 0, 1, "UNREVOKED_PARTITIONS", 1, ("t:0",), 150, 9_999),  # before target 2
        Target("g", 2, "uniform", 3, ("a", "b", "c"), 1_000),
        Rec("g", "a", 1, 1, "UNREVOKED_PARTITIONS", 2, ("t:1",), 1_200, 61_200),
        Rec("g", "b", 0, 2, "UNRELEASED_PARTITIONS", 0, (), 1_000),
    ]
    seen = reconciling(events, ["a", "b", "c"], 45_000)
    assert (seen["a"].why, seen["a"].deadline_ms, seen["a"].revoking) == (
        "revoking",
        61_200,
        ("t:1",),
    )
    assert (seen["b"].why, seen["b"].deadline_ms) == ("releasing", None)
    assert (seen["c"].why, seen["c"].deadline_ms) == ("heartbeat", 46_000)
    assert reconciling(events, ["c"], None) == {}  # no session timeout told: no bound
