"""Server-sent events: the group page's live part, re-rendered every
`interval` seconds and swapped in by htmx's sse extension (`sse-swap="live"`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from starlette.requests import Request
from starlette.responses import StreamingResponse

from muster.console.group_page import group_context
from muster.console.paging import int_param

INTERVAL_S = 2.0


def sse_message(event: str, html: str) -> str:
    lines = "".join(f"data: {line}\n" for line in html.splitlines() or [""])
    return f"event: {event}\n{lines}\n"


async def group_stream(request: Request) -> StreamingResponse:
    group_id = request.path_params["group_id"]
    console = request.app.state.console
    template = console.templates.get_template("_group_live.html")
    params = request.query_params
    interval = int_param(params, "interval_ms", int(INTERVAL_S * 1000), 200, 60_000) / 1000
    count = int_param(params, "count", 0, 0, 1_000_000)  # 0: until the browser goes

    async def stream() -> AsyncIterator[str]:
        sent = 0
        while not await request.is_disconnected():
            context = await group_context(request, group_id)
            html = template.render(request=request, **context)
            yield sse_message("live", html)
            sent += 1
            if count and sent >= count:
                return
            await asyncio.sleep(interval)

    return StreamingResponse(
        stream(), media_type="text/event-stream", headers={"Cache-Control": "no-store"}
    )
