"""Group commit: one fsync serves every write that arrived while the last ran.

Handlers append to a log (page cache) and `await durability.wait(log)`. A
single flusher task fsyncs every log with unflushed data in a worker thread,
then wakes the waiters whose writes are now on disk and the fetchers waiting
for data. With `muster.fsync=never|interval` acknowledged writes do not wait.
"""

from __future__ import annotations

import asyncio
import logging
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
        self._dirty: dict[int, Flushable] = {}
        self._waiters: list[tuple[Flushable, int, asyncio.Future[None]]] = []
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.fsyncs = 0
        self.failed: BaseException | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="group-commit")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        await asyncio.to_thread(self._flush_all, list(self._dirty.values()))
        self._dirty.clear()

    def visible_end(self, plog: Flushable) -> int:
        """What consumers may read: only what a crash cannot take back."""
        if self.policy == "always":
            return plog.flushed_offset
        return plog.log_end_offset

    def appended(self, plog: Flushable) -> None:
        """Note a write; consumers see it now unless it must be fsynced first."""
        self._dirty[id(plog)] = plog
        if self.policy == "always":
            self._wakeup.set()
        else:
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
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((plog, target, fut))
        self._dirty[id(plog)] = plog
        self._wakeup.set()
        await fut

    @staticmethod
    def _flush_all(logs: list[Flushable]) -> None:
        for plog in logs:
            plog.flush()

    async def _run(self) -> None:
        while True:
            if self.policy == "always":
                await self._wakeup.wait()
            else:
                await asyncio.sleep(self.interval_s if self.policy == "interval" else 3600)
            self._wakeup.clear()
            batch = list(self._dirty.values())
            self._dirty.clear()
            if not batch:
                continue
            try:
                await asyncio.to_thread(self._flush_all, batch)
                self.fsyncs += 1
            except OSError as exc:  # disk trouble: fail the waiters, never lie to them
                log.error("fsync failed: %s", exc)
                self.failed = exc
                self._resolve(error=exc)
                continue
            if self.policy == "always":
                for plog in batch:
                    self._on_visible(plog)
            self._resolve()

    def _resolve(self, error: BaseException | None = None) -> None:
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
                self._dirty[id(plog)] = plog
        self._waiters = still
        if still:
            self._wakeup.set()
