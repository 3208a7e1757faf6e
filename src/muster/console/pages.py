"""The overview page and the group list (filtered and paged server-side)."""

from __future__ import annotations

import time

from starlette.requests import Request
from starlette.responses import Response

from muster.console.alerts import alerts
from muster.console.paging import filtered, paginate
from muster.console.source import group_type_of


async def overview(request: Request) -> Response:
    console = request.app.state.console
    source = console.source
    view = await source.overview()
    groups = await source.groups()
    admin = await source.admin()
    await console.events.catch_up(admin)
    return console.render(
        request,
        "overview.html",
        view=view,
        alerts=alerts(
            groups,
            console.events,
            console.lag_samples,
            int(time.time() * 1000),
            await source.offsets_retention_ms(),
        ),
        events_available=console.events.available,
    )


async def group_list(request: Request) -> Response:
    console = request.app.state.console
    groups = await console.source.groups()
    params = request.query_params
    state = params.get("state", "")
    kind = params.get("type", "")
    rows = filtered(groups, params.get("q", ""), lambda g: g.group_id)
    if state:
        rows = [g for g in rows if g.state == state]
    if kind:
        rows = [g for g in rows if group_type_of(g) == kind]
    page = paginate(rows, params)
    states = sorted({g.state for g in groups if g.state})
    kinds = sorted({group_type_of(g) for g in groups})
    return console.render(
        request,
        "groups.html",
        page=page,
        q=params.get("q", ""),
        state=state,
        kind=kind,
        states=states,
        kinds=kinds,
        type_of=group_type_of,
    )


async def stats(request: Request) -> Response:
    """The overview's record count, produce rate and offset-commit rate: a
    fragment htmx loads after the page and every 10 s (one ListOffsets of
    every partition)."""
    console = request.app.state.console
    totals = await console.source.record_totals()
    produce_rate, commit_rate = console.rates(totals, time.time())
    return console.render(
        request,
        "_stats.html",
        records=totals.produced,
        produce_rate=produce_rate,
        commit_rate=commit_rate,
    )
