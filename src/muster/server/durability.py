"""Group commit: one fsync serves every write that arrived while the last ran.

Handlers append to a log (page cache) and `await durability.wait(log)`. One
flusher thread fsyncs every log with unflushed data, then hands the result
back to the event loop, which wakes the waiters whose writes are now on disk
and the fetchers waiting for data. A dedicated thread (not a thread pool job
per fsync) keeps the hand-off cheap, which is what a synchronous offset
commit's latency is made of. With `muster.fsync=never|interval` acknowledged
writes do not wait.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import Protocol

log = logging.getLogger(__name__)


class Flushable(Protocol):
    topic: str
    partition: int

    @property
    def log_end_offset(self) -> int: ...

    @property
    def flushed_offset(self) -> int: ...

    def flush(self) -> None: ...


class Durability:
    def __init__(
        self,
        policy: str,
        interval_ms: int,
        on_visible: Callable[[Flushable], None],
    ) -> None:
        if policy not in ("always", "interval", "never"):
            raise ValueError(f"muster.fsync must be always, interval or never, not {policy!r}")
        self.policy = policy
        self.interval_s = interval_ms / 1000
        self._on_visible = on_visible
        self._cv = threading.Condition()
        self._pending: dict[int, Flushable] = {}  # guarded by _cv
        self._stopping = False  # guarded by _cv
        self._dirty: dict[int, Flushable] = {}  # loop thread only (interval/never)
        self._waiters: list[tuple[Flushable, int, asyncio.Future[None]]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ticker: asyncio.Task[None] | None = None
        self.fsyncs = 0
        self.failed: BaseException | None = None

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._thread = threading.Thread(target=self._flusher, name="group-commit", daemon=True)
        self._thread.start()
        if self.policy == "interval":
            self._ticker = asyncio.create_task(self._tick(), name="fsync-interval")

    async def stop(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
        with self._cv:
            self._pending.update(self._dirty)
            self._dirty.clear()
            self._stopping = True
            self._cv.notify()
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join)

    def visible_end(self, plog: Flushable) -> int:
        """What consumers may read: only what a crash cannot take back."""
        if self.policy == "always":
            return plog.flushed_offset
        return plog.log_end_offset

    def appended(self, plog: Flushable) -> None:
        """Note a write; consumers see it now unless it must be fsynced first."""
        if self.policy == "always":
            self._request(plog)
        else:
            self._dirty[id(plog)] = plog
            self._on_visible(plog)

    async def wait(self, plog: Flushable) -> None:
        """Returns once everything appended to plog so far is durable (per policy)."""
        if self.policy != "always":
            return
        target = plog.log_end_offset
        if plog.flushed_offset >= target:
            return
        if self.failed is not None:
            raise OSError(f"log flush failed earlier: {self.failed}")
        assert self._loop is not None
        fut: asyncio.Future[None] = self._loop.create_future()
        self._waiters.append((plog, target, fut))
        self._request(plog)
        await fut

    def _request(self, plog: Flushable) -> None:
        with self._cv:
            self._pending[id(plog)] = plog
            self._cv.notify()

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            dirty, self._dirty = self._dirty, {}
            for plog in dirty.values():
                self._request(plog)

    # ---- the flusher thread ---------------------------------------------

    def _flusher(self) -> None:
        while True:
            with self._cv:
                while not self._pending and not self._stopping:
                    self._cv.wait()
                batch = list(self._pending.values())
                self._pending.clear()
                stopping = self._stopping
            error: OSError | None = None
            try:
                for plog in batch:
                    plog.flush()
            except OSError as exc:  # disk trouble: fail the waiters, never lie to them
                error = exc
            if batch and self._loop is not None and not self._loop.is_closed():
                try:
                    self._loop.call_soon_threadsafe(self._flushed, batch, error)
                except RuntimeError:  # loop already closed at shutdown
                    pass
            if stopping:
                return

    # ---- back on the loop thread -----------------------------------------

    def _flushed(self, batch: list[Flushable], error: OSError | None) -> None:
        self.fsyncs += 1
        if error is not None:
            log.error("fsync failed: %s", error)
            self.failed = error
        elif self.policy == "always":
            for plog in batch:
                self._on_visible(plog)
        still: list[tuple[Flushable, int, asyncio.Future[None]]] = []
        for plog, target, fut in self._waiters:
            if fut.done():
                continue
            if error is not None:
                fut.set_exception(OSError(str(error)))
            elif plog.flushed_offset >= target:
                fut.set_result(None)
            else:
                still.append((plog, target, fut))
        self._waiters = still
        for plog, _target, _fut in still:
            self._request(plog)
