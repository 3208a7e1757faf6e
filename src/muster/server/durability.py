"""Group commit: one fsync serves every write that arrived while the last ran.

Handlers append to a log (page cache) and `await durability.wait(log)` (or
register `on_durable`). At the end of the loop iteration that appended, the
logs written in it are flushed. One flusher thread fsyncs every log with
unflushed data while the loop goes on (a producer's next request is read and
appended meanwhile, and shares the next fsync), then hands the result back to
the loop. A latency-bound write (the coordinator's small records: one offset
commit waits for nothing else) that is the only write of its iteration, with
no flush under way, is fsynced by the loop thread itself instead: handing one
small fsync to another thread costs more than the fsync (futex and GIL
hand-offs, a self-pipe wake-up, extra loop iterations), and a synchronous
commit's latency is made of exactly that. Either way the loop then wakes the
waiters whose writes are now on disk and the fetchers waiting for data. With
`muster.fsync=never|interval` acknowledged writes do not wait.
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
        self._busy = False  # guarded by _cv: the flusher thread is flushing
        self._stopping = False  # guarded by _cv
        # loop thread only (always): log id -> (log, every write latency-bound)
        self._unflushed: dict[int, tuple[Flushable, bool]] = {}
        self._kick_scheduled = False
        self._dirty: dict[int, Flushable] = {}  # loop thread only (interval/never)
        self._waiters: list[tuple[Flushable, int, Callable[[OSError | None], None]]] = []
        self._completing = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ticker: asyncio.Task[None] | None = None
        self.fsyncs = 0
        self.failures = 0  # flushes that failed (disk faults)

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
            self._pending.update({k: plog for k, (plog, _) in self._unflushed.items()})
            self._dirty.clear()
            self._unflushed.clear()
            self._stopping = True
            self._cv.notify()
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join)

    def visible_end(self, plog: Flushable) -> int:
        """What consumers may read: only what a crash cannot take back."""
        if self.policy == "always":
            return plog.flushed_offset
        return plog.log_end_offset

    def appended(self, plog: Flushable, latency_bound: bool = False) -> None:
        """Note a write; consumers see it now unless it must be fsynced first.

        latency_bound: a small write whose answer nothing else is waiting
        behind (see the module docstring); it may be fsynced on the loop.
        """
        if self.policy != "always":
            self._dirty[id(plog)] = plog
            self._on_visible(plog)
        elif self._loop is None:  # not started: only the flusher thread can do it
            self._request(plog)
        else:
            # Flushed once the current iteration's callbacks have run, so that
            # every write of this iteration shares the fsync.
            earlier = self._unflushed.get(id(plog))
            inline = latency_bound and (earlier is None or earlier[1])
            self._unflushed[id(plog)] = (plog, inline)
            if not self._kick_scheduled:
                self._kick_scheduled = True
                self._loop.call_soon(self._kick)

    async def wait(self, plog: Flushable) -> None:
        """Returns once everything appended to plog so far is durable (per policy)."""
        if self.policy != "always":
            return
        assert self._loop is not None
        fut: asyncio.Future[None] = self._loop.create_future()
        self.on_durable(plog, lambda error: _settle(fut, error))
        await fut

    def on_durable(self, plog: Flushable, callback: Callable[[OSError | None], None]) -> None:
        """Calls callback(None) on the loop thread once everything appended to
        plog so far is durable, or callback(error) if the flush failed.

        Callbacks run in the order they were registered, so a caller that
        needs completions in append order (the coordinator) gets them; one
        registered while older ones still wait never jumps ahead of them.
        """
        if self.policy != "always":
            callback(None)
            return
        target = plog.log_end_offset
        if (
            plog.flushed_offset >= target
            and not self._completing
            and not any(w[0] is plog for w in self._waiters)
        ):
            callback(None)
            return
        # appended() normally asked for this log to be flushed already (a flush
        # that starts after the append covers it); a wait on a log whose last
        # flush failed asks again, so it is answered, not left hanging.
        self._waiters.append((plog, target, callback))
        if id(plog) not in self._unflushed:
            self._request(plog)

    def _request(self, plog: Flushable) -> None:
        with self._cv:
            self._pending[id(plog)] = plog
            self._cv.notify()

    def _kick(self) -> None:
        self._kick_scheduled = False
        batch, self._unflushed = self._unflushed, {}
        if not batch:
            return
        plog, inline = next(iter(batch.values()))
        with self._cv:
            if len(batch) > 1 or not inline or self._busy or self._pending or self._stopping:
                self._pending.update({k: p for k, (p, _) in batch.items()})
                self._cv.notify()
                return
        self._flushed([plog], _flush_each([plog]))

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
                self._busy = bool(batch)
            errors = _flush_each(batch)
            with self._cv:
                self._busy = False
            if batch and self._loop is not None and not self._loop.is_closed():
                try:
                    self._loop.call_soon_threadsafe(self._flushed, batch, errors)
                except RuntimeError:  # loop already closed at shutdown
                    pass
            if stopping:
                return

    # ---- back on the loop thread -----------------------------------------

    def _flushed(self, batch: list[Flushable], errors: dict[int, OSError]) -> None:
        """A flush of `batch` ended; `errors` has the logs whose flush failed.

        Their waiters fail (the log refuses to report that data durable, and
        rewinds it before its next write); a failure is not sticky, so the
        other logs, and this one once the disk recovers, go on."""
        self.fsyncs += 1
        for plog in batch:
            error = errors.get(id(plog))
            if error is not None:
                self.failures += 1
                log.error("fsync of %s-%d failed: %s", plog.topic, plog.partition, error)
            elif self.policy == "always":
                self._on_visible(plog)
        waiters, self._waiters = self._waiters, []
        still = []
        self._completing = True  # a callback that registers a waiter must queue it
        try:
            for waiter in waiters:
                plog, target, callback = waiter
                error = errors.get(id(plog))
                if error is None and plog.flushed_offset < target:
                    # targets grow per log, so its later waiters stay behind this one
                    still.append(waiter)
                    continue
                try:
                    callback(None if error is None else OSError(str(error)))
                except Exception:
                    log.exception("durability callback failed")
        finally:
            self._completing = False
        self._waiters = still + self._waiters


def _flush_each(batch: list[Flushable]) -> dict[int, OSError]:
    """Flushes every log; one log's disk trouble does not stop the others'."""
    errors: dict[int, OSError] = {}
    for plog in batch:
        try:
            plog.flush()
        except OSError as exc:  # fail its waiters, never lie to them
            errors[id(plog)] = exc
    return errors


def _settle(fut: asyncio.Future[None], error: OSError | None) -> None:
    if fut.done():  # the waiter was cancelled (its connection closed)
        return
    if error is None:
        fut.set_result(None)
    else:
        fut.set_exception(error)
