"""Serving the console: `serve(app, host, port)` on uvicorn, either as its own
process (`muster console`) or as a task on a running event loop (inside
the broker, `muster.console.listen`)."""

from __future__ import annotations

import asyncio
from typing import Any


def parse_listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"console listen address {text!r} is not HOST:PORT")
    return host.strip("[]") or "127.0.0.1", int(port)


def server(app: Any, host: str, port: int) -> Any:
    import uvicorn

    # open SSE streams never end by themselves: a stop waits 2 s for them, then closes them
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=2,
    )
    return uvicorn.Server(config)


def run_forever(app: Any, host: str, port: int) -> None:
    """Blocks until Ctrl-C (the `muster console` command)."""
    asyncio.run(server(app, host, port).serve())
