"""Adding a rebalance cause is one new type plus its words (issue 11): a Cause
subclass defined here, and nothing else, reaches `muster groups explain`,
the analytics report and the Prometheus metrics, which all read the one cause
registry and the typed events of muster.coordinator.events."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from muster import explain
from muster.analytics import events as analytics_events
from muster.analytics import report, svg
from muster.analytics.model import GroupReport
from muster.coordinator import events as ev
from muster.server.metrics import BrokerMetrics
from tests.analytics.test_report import Page, rebalance, summary

CODE = "quota_exceeded"
WORDS = "a member went over its quota"


@pytest.fixture
def new_cause() -> Iterator[type[ev.Cause]]:
    class QuotaExceeded(ev.Cause):
        code, words, starts_rebalances = CODE, WORDS, True

        def started(self, member: str, reason: str | None) -> str:
            return f"member {member} went over its quota"

    try:
        yield QuotaExceeded
    finally:
        del ev.Cause.registry[CODE]  # the registry is process-wide


def rebalances_counted(metrics: BrokerMetrics) -> dict[str, float]:
    text = generate_latest(metrics.registry).decode()
    return {
        s.labels["cause"]: s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "muster_rebalances_total"
    }


def test_a_new_cause_reaches_explain_analytics_and_metrics(
    new_cause: type[ev.Cause], tmp_path: Path
) -> None:
    assert CODE in ev.rebalance_causes()
    started = ev.RebalanceStarted("g", 3, "Stable", CODE, "m-1", None, "", 2, 1_000)
    completed = ev.RebalanceCompleted(
        "g", 4, "consumer", "range", "m-1", 2, 0, (CODE,), 1_000, 1_200, 1_500, 500,
        ev.ALL_MEMBERS_JOINED,
    )  # fmt: skip

    # explain: the headline uses the cause's own sentence, lists its words
    [block] = explain.explain([started, completed])
    assert block[0].endswith(": member m-1 went over its quota.")
    assert explain.cause_words(CODE) == WORDS

    # metrics: exposed at 0 from the start, counted when a rebalance starts
    metrics = BrokerMetrics()
    assert rebalances_counted(metrics)[CODE] == 0
    metrics.observe_events([started, completed])
    counted = rebalances_counted(metrics)
    assert counted[CODE] == 1 and counted[ev.MEMBER_JOINED] == 0

    # analytics: the report names it in its words and colours its bar from the palette
    g = GroupReport(summary("g"), rebalances=[rebalance(1, CODE, 1_000, 1_500)])
    page = Page(report.render([g], 0, 60_000, "test", {}))
    assert f"{CODE}: {WORDS}" in page.text
    [bar] = page.find("rect", "rebalance")
    assert bar["fill"] in svg.PALETTE and CODE not in svg.CAUSE_COLOURS


def test_the_analytics_schema_holds_every_field_of_every_event() -> None:
    # derived from the event classes: a new event type or field needs no analytics edit
    columns = {f.name: f.dataType.simpleString() for f in analytics_events.EVENT_SCHEMA.fields}
    for cls in ev.EVENT_TYPES.values():
        for f in fields(cls):
            assert f.name in columns, (cls.__name__, f.name)
    assert columns["at_ms"] == "bigint" and columns["generation"] == "int"
    assert columns["causes"] == "array<string>" and columns["rebalance"] == "boolean"
