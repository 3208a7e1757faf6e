"""The console as a task on a running event loop: inside the broker
(`muster.console.listen`), sharing its loop. Knows nothing of the broker:
it is given the address the broker listens on, and reads it over the wire as
it would any Kafka."""

from __future__ import annotations

import asyncio
import socket
from dataclasses import dataclass
from typing import Any

from muster.console.app import create_app
from muster.console.run import parse_listen, server


@dataclass
class RunningConsole:
    server: Any
    task: asyncio.Task[None]
    port: int

    async def stop(self) -> None:
        self.server.should_exit = True
        try:
            await asyncio.wait_for(self.task, 10)
        except (TimeoutError, asyncio.CancelledError):
            self.task.cancel()


def bind(listen: str) -> socket.socket:
    """The console's socket, bound before it serves (an OSError names the port)."""
    host, port = parse_listen(listen)
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


async def start_console(listen: str, conf: dict[str, Any], read_only: bool) -> RunningConsole:
    sock = bind(listen)
    host, _ = parse_listen(listen)
    srv = server(create_app(conf, read_only=read_only), host, sock.getsockname()[1])
    # Server._serve, not serve(): serve() takes over SIGINT/SIGTERM, which are
    # the broker's to handle on this loop.
    task = asyncio.create_task(srv._serve(sockets=[sock]), name="muster-console")
    while not srv.started and not task.done():
        await asyncio.sleep(0.01)
    if task.done():
        task.result()  # raises what stopped it
    return RunningConsole(srv, task, sock.getsockname()[1])
