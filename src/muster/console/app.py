"""The console's ASGI application: `create_app(conf)` -> Starlette.

`conf` is a client configuration (librdkafka/Java names: bootstrap.servers,
security.protocol, sasl.*, ssl.*); every page reads the cluster through
muster's own client with it, so the console works against any Kafka-protocol
broker. `read_only` turns the actions (offset resets, deletions) off.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from muster.console import actions, group_page, live, pages, topic_pages
from muster.console.history import EventsTail
from muster.console.source import RecordTotals, Source

HERE = Path(__file__).parent


class Console:
    """What every request handler reaches through `request.app.state.console`."""

    def __init__(self, conf: Mapping[str, Any], read_only: bool = False):
        self.conf = dict(conf)
        self.read_only = read_only
        self.source = Source(self.conf)
        self.events = EventsTail(self.conf)
        self.templates = Jinja2Templates(directory=str(HERE / "templates"))
        self.templates.env.globals["read_only"] = read_only
        self.templates.env.filters["when"] = _when
        self.lag_samples: dict[str, list[tuple[float, int]]] = {}
        self._records: tuple[float, RecordTotals] | None = None  # (when, totals) last seen

    async def close(self) -> None:
        await self.events.close()
        await self.source.close()

    def render(self, request: Request, name: str, **context: Any) -> Response:
        started = getattr(request.state, "started", time.perf_counter())
        context["server_ms"] = lambda: f"{(time.perf_counter() - started) * 1000:.1f}"
        return self.templates.TemplateResponse(request, name, context)

    def sample_lag(self, group_id: str, total: int, keep: int = 120) -> list[tuple[float, int]]:
        samples = self.lag_samples.setdefault(group_id, [])
        now = time.time()
        if not samples or now - samples[-1][0] >= 1.0:
            samples.append((now, total))
            del samples[:-keep]
        return samples

    def rates(self, totals: RecordTotals, now: float) -> tuple[float | None, float | None]:
        """Records per second produced, and offset commits per second, across
        the cluster since the last look (None on the first)."""
        last, self._records = self._records, (now, totals)
        if last is None or now - last[0] <= 0:
            return None, None
        seconds = now - last[0]
        produced = max(0.0, (totals.produced - last[1].produced) / seconds)
        return produced, max(0.0, (totals.commits - last[1].commits) / seconds)


def _when(ms: int | None) -> str:
    from muster import explain

    return explain.when(ms)


class ServerTiming(BaseHTTPMiddleware):
    """Starts each request's clock; answers with `Server-Timing: app;dur=MS`."""

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        request.state.started = time.perf_counter()
        response = await call_next(request)
        spent = (time.perf_counter() - request.state.started) * 1000
        response.headers["Server-Timing"] = f"app;dur={spent:.1f}"
        return response


def create_app(conf: Mapping[str, Any], read_only: bool = False) -> Starlette:
    console = Console(conf, read_only)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await console.close()

    routes = [
        Route("/", pages.overview),
        Route("/stats", pages.stats),
        Route("/groups", pages.group_list),
        Route("/groups/{group_id:path}/live", live.group_stream),
        Route("/groups/{group_id:path}/actions/{action}", actions.run, methods=["POST"]),
        Route("/groups/{group_id:path}", group_page.show),
        Route("/topics", topic_pages.topic_list),
        Route("/topics/{topic}/messages", topic_pages.messages),
        Route("/topics/{topic}", topic_pages.show),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    app = Starlette(routes=routes, middleware=[Middleware(ServerTiming)], lifespan=lifespan)
    app.state.console = console
    return app
