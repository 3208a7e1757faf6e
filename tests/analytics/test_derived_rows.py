"""A derived history (no `__muster_group_events`) as analytics rows, without
Spark: one rebalance per new classic generation with what
`__consumer_offsets` says (generation, completion, members before and after,
who left) and nulls for what it does not (cause, start, duration); the report
and the summary say where the history came from and invent no causes."""

from __future__ import annotations

from dataclasses import replace

from muster.analytics import report
from muster.analytics.derived import rebalance_rows, step_rows
from muster.analytics.model import GroupReport, GroupSummary
from muster.cli.analyze import _summary_rows
from muster.coordinator.derived import derive
from tests.analytics.test_report import Page
from tests.support.group_records import CLASSIC, generation, member


def test_one_rebalance_per_new_generation() -> None:
    rows = rebalance_rows("g", derive(CLASSIC, "g"))
    assert [
        (r["rebalance"], r["previous_generation"], r["generation"], r["completed_ms"]) for r in rows
    ] == [(1, 0, 1, 1_000), (2, 1, 2, 3_000), (3, 2, 3, 7_000), (4, 3, 4, 9_000), (5, 0, 1, 12_000)]
    assert [(r["members_before"], r["members_after"]) for r in rows] == [
        (0, 1), (1, 2), (2, 1), (1, 0), (0, 1)
    ]  # fmt: skip
    assert [[x["member_id"] for x in r["removals"]] for r in rows] == [
        [], [], ["b-1"], ["a-1"], []
    ]  # fmt: skip
    unknown = ("cause", "causes", "reasons", "started_ms", "duration_ms", "waited_for")
    assert all(r[k] is None for r in rows for k in (*unknown, "removed_members"))
    assert all(r["completed"] for r in rows)


def test_a_log_that_starts_late_does_not_guess_what_came_before() -> None:
    late = [generation("g", 7, 5_000, member("a-1", {"t": [0]}))]
    [row] = rebalance_rows("g", derive(late, "g"))
    assert row["previous_generation"] is None and row["members_before"] is None
    assert row["members_after"] == 1


def test_generation_zero_is_the_group_created_not_a_rebalance() -> None:
    # Kafka 4.4 stores a new classic group, Empty at generation 0, before the first join
    records = [generation("g", 0, 900), generation("g", 1, 1_000, member("a-1", {"t": [0]}))]
    [row] = rebalance_rows("g", derive(records, "g"))
    assert (row["previous_generation"], row["generation"]) == (0, 1)
    assert (row["members_before"], row["members_after"]) == (0, 1)


def test_step_rows_carry_members_and_words() -> None:
    rows = step_rows(derive(CLASSIC, "g"))
    assert [r["step"] for r in rows] == list(range(1, 8))
    second = rows[1]
    assert second["member_count"] == 2 and second["joined"] == ["b-1"]
    assert second["members"][1]["assignment"] == [{"topic": "t", "partition": 2}]
    assert second["summary"].startswith("generation 2: 2 member(s)")
    assert rows[5]["kind"] == "removed" and rows[5]["member_count"] is None


DERIVED = GroupSummary(
    "g", 5, 5, {}, None, None, None, None, 0, 60_000, None, None, None, 3, 3, 1.0, 0, 0,
    mean_between_rebalances_ms=2_750.0, history="derived",
)  # fmt: skip


def test_report_and_summary_of_a_derived_history() -> None:
    rows = rebalance_rows("g", derive(CLASSIC, "g"))
    since = [None, 2_000, 4_000, 2_000, 3_000]
    g = GroupReport(
        DERIVED,
        rebalances=[{**r, "since_previous_ms": s} for r, s in zip(rows, since, strict=True)],
        story=[["1970-01-01 00:00:01.000 UTC: generation 1: 1 member(s)"]],
    )
    html = report.render([g], 0, 60_000, "test", {}, "history derived from __consumer_offsets")
    page = Page(html)
    assert "history derived from __consumer_offsets" in html
    marks = page.find("rect", "rebalance")
    assert len(marks) == 5 and len({m["fill"] for m in marks}) == 1  # no cause colours
    assert "not in __consumer_offsets" in page.text  # the causes row
    assert "unknown" not in html and "running" not in html
    assert len(page.find("table", "derived")) == 1
    assert "4.0 s" in page.text  # the time since the generation before
    assert page.text.count("b-1") == 1  # who left, in the row of generation 3

    lines = dict(_summary_rows(DERIVED))
    assert lines["between generations"] == "mean 2.8 s"
    assert lines["not consuming"] == "-" and lines["rebalances"] == "5"
    events = dict(_summary_rows(replace(DERIVED, history="events", causes={"member_joined": 5})))
    assert "rebalance time" in events and "member_joined: 5" in events["rebalances"]
