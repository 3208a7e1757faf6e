"""Rebalance table and group summary from hand-made coordinator events with
known timestamps: exact durations, causes, member counts and time not consuming."""

from __future__ import annotations

from typing import Any

import pytest

from muster.analytics.events import parse_events
from muster.analytics.rebalances import cause_counts, group_summary, rebalances
from muster.coordinator import events as ev
from tests.analytics.records import events_df

P, C, S, E = "PreparingRebalance", "CompletingRebalance", "Stable", "Empty"


def state(frm: str, to: str, gen: int, cause: str, at: int) -> ev.GroupStateChanged:
    return ev.GroupStateChanged("g", frm, to, gen, cause, at)


def join(gen: int, count: int, waited: str, removed: tuple[str, ...], took: int, at: int) -> Any:
    return ev.JoinCompleted(
        "g", gen, "range" if count else None, "a", count, waited, removed, took, at
    )


def done(
    gen: int,
    count: int,
    causes: tuple[str, ...],
    started: int,
    at: int,
    waited: str = "all_members_joined",
) -> Any:
    return ev.RebalanceCompleted(
        "g",
        gen,
        "consumer",
        "range",
        "a",
        count,
        0,
        causes,
        started,
        started,
        at,
        at - started,
        waited,
    )


CHURN = [
    # 1: a joins the empty group at 1000, stable at 1500
    state(E, P, 0, "member_joined", 1000),
    ev.RebalanceStarted("g", 0, E, "member_joined", "a", None, "", 1, 1000),
    state(P, C, 1, "join_completed", 1200),
    join(1, 1, "all_members_joined", (), 200, 1200),
    state(C, S, 1, "sync_completed", 1500),
    done(1, 1, ("member_joined",), 1000, 1500),
    # 2: b joins at 3000; b leaves with a reason while the group completes the
    # join; x never rejoins (rebalance timeout); stable at 4600
    ev.RebalanceStarted("g", 1, S, "member_joined", "b", None, "", 3, 3000),
    state(S, P, 1, "member_joined", 3000),
    state(P, C, 2, "join_completed", 3400),
    join(2, 2, "all_members_joined", (), 400, 3400),
    ev.MemberRemoved("g", "b", None, "member_left", "bye", 3600),
    ev.RebalanceStarted("g", 2, C, "member_left", "b", "bye", "", 1, 3600),
    state(C, P, 2, "member_left", 3600),
    ev.MemberRemoved("g", "x", None, "rebalance_timeout", None, 4000),
    join(3, 1, "rebalance_timeout_expired", ("x",), 1000, 4000),
    state(P, C, 3, "join_completed", 4000),
    state(C, S, 3, "sync_completed", 4600),
    done(3, 1, ("member_joined", "member_left"), 3000, 4600, "rebalance_timeout_expired"),
    # another group's events are interleaved and stay out of g's rows
    ev.RebalanceStarted("other", 0, E, "member_joined", "o", None, "", 1, 5000),
    # 3: a's session expires at 8000: the group is empty at once
    ev.MemberRemoved("g", "a", None, "session_expired", None, 8000),
    ev.RebalanceStarted("g", 3, S, "session_expired", "a", None, "", 0, 8000),
    state(S, P, 3, "session_expired", 8000),
    join(4, 0, "all_members_joined", (), 0, 8000),
    state(P, E, 4, "join_completed", 8000),
    done(4, 0, ("session_expired",), 8000, 8000),
    # 4: c joins at 9000 and the window ends (10000) before it completes
    state(E, P, 4, "member_joined", 9000),
    ev.RebalanceStarted("g", 4, E, "member_joined", "c", None, "", 1, 9000),
]
WINDOW_END = 10_000


@pytest.fixture(scope="module")
def parsed(spark: Any) -> Any:
    return parse_events(events_df(spark, CHURN)).cache()


def test_rebalances_with_causes_durations_and_members(parsed: Any) -> None:
    rows = [
        r.asDict()
        for r in rebalances(parsed).where("group_id = 'g'").orderBy("rebalance").collect()
    ]
    assert [r["rebalance"] for r in rows] == [1, 2, 3, 4]
    assert [r["cause"] for r in rows] == [
        "member_joined",
        "member_joined",
        "session_expired",
        "member_joined",
    ]
    assert rows[1]["causes"] == ["member_joined", "member_left"]
    assert [r["duration_ms"] for r in rows] == [500, 1600, 0, None]
    assert [r["started_ms"] for r in rows] == [1000, 3000, 8000, 9000]
    assert [r["completed_ms"] for r in rows] == [1500, 4600, 8000, None]
    assert [r["completed"] for r in rows] == [True, True, True, False]
    assert [r["generation"] for r in rows] == [1, 3, 4, None]
    assert [r["members_before"] for r in rows] == [0, 1, 1, 0]
    assert [r["members_after"] for r in rows] == [1, 1, 0, None]
    assert rows[1]["reasons"] == ["bye"]
    assert rows[1]["waited_for"] == "rebalance_timeout_expired"
    assert rows[1]["removed_members"] == ["x"]
    assert [(m["member_id"], m["cause"], m["reason"]) for m in rows[1]["removals"]] == [
        ("b", "member_left", "bye"),
        ("x", "rebalance_timeout", None),
    ]
    assert [(m["member_id"], m["cause"]) for m in rows[2]["removals"]] == [("a", "session_expired")]
    assert rows[2]["trigger_member_id"] == "a"


def test_cause_counts(parsed: Any) -> None:
    counts = {
        (r.group_id, r.cause): r.rebalances for r in cause_counts(rebalances(parsed)).collect()
    }
    assert counts == {
        ("g", "member_joined"): 3,
        ("g", "session_expired"): 1,
        ("other", "member_joined"): 1,
    }


def test_summary_durations_and_time_not_consuming(parsed: Any) -> None:
    table = rebalances(parsed)
    row = group_summary(parsed, table, WINDOW_END).where("group_id = 'g'").first().asDict()
    assert row["rebalances"] == 4
    assert row["completed_rebalances"] == 3
    assert row["total_duration_ms"] == 2100
    assert row["mean_duration_ms"] == pytest.approx(700.0)
    # exact percentile, linear between 500 and 1600
    assert row["p95_duration_ms"] == pytest.approx(1490.0)
    assert row["max_duration_ms"] == 1600
    assert (row["window_start_ms"], row["window_end_ms"], row["window_ms"]) == (1000, 10000, 9000)
    # Preparing/Completing: 200+300 + 400+200+400+600 + 0 + 1000 (still preparing at the end)
    assert row["not_consuming_ms"] == 3100
    # plus Stable 1500-3000 and 4600-8000; Empty 8000-9000 does not count
    assert row["active_ms"] == 8000
    assert row["not_consuming_fraction"] == pytest.approx(3100 / 9000)


def test_values_that_are_not_events_are_skipped(spark: Any) -> None:
    from tests.analytics.records import records_df

    records = records_df(
        spark,
        [
            (b"g", b"not json", "__muster_group_events", 0, 0, 0),
            (b"g", b'{"no": "type"}', "__muster_group_events", 0, 1, 0),
            (b"g", None, "__muster_group_events", 0, 2, 0),
            (b"g", CHURN[1].to_json(), "__muster_group_events", 0, 3, 0),
        ],
    )
    rows = parse_events(records).collect()
    assert [(r.type, r.event_offset, r.event_ms) for r in rows] == [("RebalanceStarted", 3, 1000)]


def test_removals_follow_the_explain_fold(spark: Any) -> None:
    """A removal that did not cause the next rebalance (here a pending member
    expiring while Stable, then an in-place static replacement) is a note in
    `muster groups explain`, and so not one of that rebalance's removals; the
    removal that immediately precedes its RebalanceStarted is."""
    events = [
        *CHURN[:6],  # rebalance 1: a joins, stable at 1500
        ev.MemberRemoved("g", "p", None, "pending_member_expired", None, 2000),
        ev.StaticMemberReplaced("g", "i-1", "a", "a2", False, 2500),
        ev.MemberRemoved("g", "a2", "i-1", "member_left", "bye", 3000),
        ev.RebalanceStarted("g", 1, S, "member_left", "a2", "bye", "", 0, 3000),
        state(S, P, 1, "member_left", 3000),
        join(2, 0, "all_members_joined", (), 0, 3000),
        state(P, E, 2, "join_completed", 3000),
        done(2, 0, ("member_left",), 3000, 3000),
    ]
    table = rebalances(parse_events(events_df(spark, events)))
    rows = [r.asDict() for r in table.orderBy("rebalance").collect()]
    explained = [i for i in ev.fold(events) if isinstance(i, ev.Rebalance)]
    assert len(rows) == len(explained) == 2
    assert [(m["member_id"], m["cause"]) for m in rows[1]["removals"]] == [("a2", "member_left")]
    assert [r.member_id for r in explained[1].removals] == ["a2"]
    assert (rows[1]["cause"], rows[1]["trigger_member_id"], rows[1]["members_before"]) == (
        "member_left",
        "a2",
        1,
    )
