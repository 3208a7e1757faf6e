"""Busy polling for the standard event loop (`muster.poll.spin.us`, off by default).

A request-answer client (a synchronous commit loop, a consumer's heartbeat
and poll) leaves the broker idle between its requests. The loop thread then
sleeps in epoll and the next request finds the CPU's caches cold: on the 2-core
machine these figures come from, a commit's dispatch costs ~63 µs in a warm
loop and ~160 µs when the process slept before it (bench/README.md,
"request path: busy polling"). A broker that keeps polling without sleeping
for a short window after its last event answers the client's next request
hot, at the price of the CPU burned while it waits.

Only a window after activity spins: events arriving extend it, a timer that
fires does not, so an idle broker sleeps as before and a busy one spins at
most `spin` seconds per gap between requests.
"""

from __future__ import annotations

import selectors
import time
from typing import Any

_clock = time.perf_counter


class SpinningSelector(selectors.DefaultSelector):  # type: ignore[valid-type,misc]
    """The platform's default selector that polls for `spin` seconds after
    its last event before it blocks."""

    def __init__(self, spin: float) -> None:
        super().__init__()
        self._spin = spin
        self._hot_until = 0.0  # perf_counter time the current window ends

    def select(self, timeout: float | None = None) -> list[tuple[Any, int]]:
        poll = super().select
        if timeout is not None and timeout <= 0:
            ready = poll(0)
        else:
            start = _clock()
            ready = []
            if start < self._hot_until:
                limit = self._hot_until
                if timeout is not None:
                    limit = min(limit, start + timeout)
                now = start
                while now < limit:
                    ready = poll(0)
                    if ready:
                        break
                    now = _clock()
                if not ready:
                    left = None if timeout is None else max(0.0, start + timeout - now)
                    ready = poll(left)
            else:
                ready = poll(timeout)
        if ready:
            self._hot_until = _clock() + self._spin
        return ready
