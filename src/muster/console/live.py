"""Server-sent events: the group page's live part, re-rendered every
`interval` seconds and swapped in by htmx's sse extension (`sse-swap="live"`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from starlette.requests import Request
from starlette.responses import StreamingResponse

from muster.console.group_page import group_context

INTERVAL_S = 2.0


def sse_message(event: str, html: str) -> str:
    lines = "".join(f"data: {line}\n" for line in html.splitlines() or [""])
    return f"event: {event}\n{lines}\n"


async def group_stream(request: Request) -> StreamingResponse:
    group_id = request.path_params["group_id"]
    console = request.app.state.console
    template = console.templates.get_template("_group_live.html")
    interval = float(request.query_params.get("interval", INTERVAL_S))
    count = int(request.query_params.get("count", 0))  # 0: until the browser goes

    async def stream() -> AsyncIterator[str]:
        sent = 0
        while not await request.is_disconnected():
            context = await group_context(request, group_id)
            html = template.render(request=request, **context)
            yield sse_message("live", html)
            sent += 1
            if count and sent >= count:
                return
            await asyncio.sleep(max(0.2, interval))

    return StreamingResponse(
        stream(), media_type="text/event-stream", headers={"Cache-Control": "no-store"}
    )
