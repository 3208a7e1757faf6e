"""Who a classic group's join phase waits for, from the last generation."""

from __future__ import annotations

from muster.console.awaited import awaited
from muster.console.derived import DerivedMember, Generation


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
