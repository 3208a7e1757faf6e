"""The group page: members, assignments, lag, state timeline and every
rebalance told in the words of `muster groups explain`."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from muster import explain
from muster.console.alerts import REBALANCING, rebalancing_since
from muster.console.awaited import JoinRound, awaited, join_round, reconciling
from muster.console.chart import sparkline
from muster.console.history import derived_history
from muster.console.source import GroupDetail

HISTORY = 20


@dataclass(frozen=True)
class RebalanceRow:
    started_ms: int | None
    cause: str
    duration_ms: int | None
    waited_for: str
    generation: int | None
    story: list[str]


def rebalance_rows(events: list[explain.Event], last: int = HISTORY) -> list[RebalanceRow]:
    rows = []
    for item in explain.last_rebalances(explain.timeline(events), None):
        if not isinstance(item, explain.Rebalance):
            continue
        first = item.starts[0] if item.starts else None
        done = item.completed
        cause = explain.cause_sentence(first) if first else "cause not recorded"
        waited = done.waited_for if done else (item.joins[-1].waited_for if item.joins else "")
        rows.append(
            RebalanceRow(
                item.started_ms,
                cause,
                done.duration_ms if done else None,
                explain.waited_sentence(waited) if waited else "",
                done.generation if done else None,
                explain.render(item),
            )
        )
    return list(reversed(rows))[:last]


def state_changes(events: list[explain.Event], last: int = HISTORY) -> list[Any]:
    changes = [e for e in events if isinstance(e, explain.GroupStateChanged)]
    return list(reversed(changes))[:last]


def _reconciling(detail: GroupDetail) -> list[Any]:
    c = detail.consumer
    if c is None:
        return []
    return [m for m in c.members if m.reconciling or m.member_epoch < c.assignment_epoch]


async def group_context(request: Request, group_id: str) -> dict[str, Any]:
    """Everything the group page and its live fragment show."""
    console = request.app.state.console
    detail: GroupDetail = await console.source.group(group_id)
    admin = await console.source.admin()
    await console.events.catch_up(admin)
    events = console.events.events(group_id)
    samples = console.sample_lag(group_id, detail.total_lag)
    since = rebalancing_since(events)
    now_ms = int(time.time() * 1000)
    state = detail.description.state if detail.description else ""
    waiting = None
    round_: JoinRound | None = None
    if state in REBALANCING and detail.consumer is None:
        members = detail.description.members if detail.description else ()
        if console.events.available:
            round_ = join_round(events, members) if state == "PreparingRebalance" else None
        if round_ is None or round_.deadline_ms is None:
            # any Kafka (or nobody rejoined yet): the last generation's
            # members and their rebalance timeouts, from __consumer_offsets
            history = await derived_history(console.conf, admin, group_id) or []
            waiting = awaited(history, (m.member_id for m in members), since)
        if round_ is not None and round_.deadline_ms is None and waiting is not None:
            round_ = dataclasses.replace(round_, deadline_ms=waiting.deadline_ms)
    behind = _reconciling(detail)
    deadlines = {}
    if behind and console.events.available:  # muster's events tell each member's deadline
        session_ms = await console.source.consumer_session_timeout_ms()
        deadlines = reconciling(events, (m.member_id for m in behind), session_ms)
    return {
        "group_id": group_id,
        "detail": detail,
        "rebalances": rebalance_rows(events),
        "states": state_changes(events),
        "events_available": console.events.available,
        "chart": sparkline([lag for _, lag in samples]),
        "open_since_ms": since,
        "open_for": explain.duration(now_ms - since) if since is not None else None,
        "now_ms": now_ms,
        "awaited": waiting,
        "join_round": round_,
        # a consumer group: the members not yet at the target assignment
        "reconciling": behind,
        "deadlines": deadlines,
    }


async def show(request: Request) -> Response:
    group_id = request.path_params["group_id"]
    console = request.app.state.console
    context = await group_context(request, group_id)
    # without the events topic (any Kafka), or when asked: from __consumer_offsets
    context["derived"] = None
    if not context["events_available"] or request.query_params.get("history") == "offsets":
        admin = await console.source.admin()
        context["derived"] = await derived_history(console.conf, admin, group_id)
    status = 200 if context["detail"].exists else 404
    response = console.render(request, "group.html", **context)
    response.status_code = status
    return response
