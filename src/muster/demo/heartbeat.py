"""Progress that still shows when the demo's output is piped: on a terminal a
rich spinner, otherwise a plain line when a step starts and one every few
seconds while it runs (rich draws nothing live into a pipe)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console

EVERY_S = 5.0


@contextmanager
def step(console: Console, what: str, every_s: float = EVERY_S) -> Iterator[None]:
    if console.is_terminal:
        with console.status(what):
            yield
        return
    started = time.monotonic()
    stop = threading.Event()
    console.print(f"{what} ...", soft_wrap=True)

    def tick() -> None:
        while not stop.wait(every_s):
            console.print(f"  ... {what}: {time.monotonic() - started:.0f} s", soft_wrap=True)

    ticker = threading.Thread(target=tick, name="demo-heartbeat", daemon=True)
    ticker.start()
    try:
        yield
    finally:
        stop.set()
        ticker.join(1)
        console.print(f"{what}: done in {time.monotonic() - started:.0f} s", soft_wrap=True)
