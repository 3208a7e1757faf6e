"""Drives the pure coordinator shards: one serial queue per `__consumer_offsets`
partition, keyed timers, appends with group commit, answers after durability.

Everything with I/O or a clock lives here; `muster.coordinator` only computes.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from muster.coordinator.context import EXPIRE_OFFSETS_KEY
from muster.coordinator.partitioning import partition_for
from muster.coordinator.result import Cancel, Result, Schedule
from muster.coordinator.tracker import Write, WriteTracker
from muster.log.latest import collect_log
from muster.log.port import PartitionLog
from muster.records.batch import build_batch, build_one
from muster.records.errors import CodedError
from muster.records.latest import TxnReplay
from muster.server.clock import now_ms
from muster.server.durability import Durability

if TYPE_CHECKING:
    # every group state machine, the assignors and the KIP-848 records: a
    # broker's start makes its shards through `make_shard`, in load()
    from muster.coordinator.shard import CoordinatorShard

log = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"
STORAGE_ERROR = 56  # KAFKA_STORAGE_ERROR
SHARD_CACHE_SIZE = 10_000
INLINE_FSYNC_RECORDS = 200  # appends this small may be fsynced on the loop thread


class CoordinatorLoading(Exception):
    """The shard is still replaying its partition (COORDINATOR_LOAD_IN_PROGRESS)."""


@dataclass
class _Work:
    kind: str  # "request" | "timer" | "background" (a timer given the lane) | "written" | "loaded"
    payload: Any
    future: asyncio.Future[Any] | Pending | None = None


class Pending:
    """Where a request's answer goes: kept in a slot while the request's own
    step runs (most answers are ready by its end), and in a future only once
    the caller must wait. Has the part of a Future the runtime uses."""

    __slots__ = ("error", "filled", "future", "value")

    def __init__(self) -> None:
        self.filled = False
        self.value: Any = None
        self.error: BaseException | None = None
        self.future: asyncio.Future[Any] | None = None

    def done(self) -> bool:
        # a caller that stopped waiting (its connection closed) cancelled the
        # future: its answer, when the write completes, goes nowhere
        return self.filled or (self.future is not None and self.future.done())

    def set_result(self, value: Any) -> None:
        self.filled, self.value = True, value
        if self.future is not None and not self.future.done():
            self.future.set_result(value)

    def set_exception(self, error: BaseException) -> None:
        self.filled, self.error = True, error
        if self.future is not None and not self.future.done():
            self.future.set_exception(error)

    def cancel(self) -> None:
        if self.future is not None:
            self.future.cancel()
        elif not self.filled:
            self.set_exception(asyncio.CancelledError())

    async def wait(self) -> Any:
        if self.filled:  # answered between submit and the caller's await
            if self.error is not None:
                raise self.error
            return self.value
        self.future = asyncio.get_running_loop().create_future()
        return await self.future


class BackgroundLane:
    """Broker-wide: one background step (an offset-expiry step) at a time.

    Every shard's expiry pass comes due at once and all shards share one event
    loop: fifty shards each running steps back to back held every request's
    next hop behind the others' steps (seconds, with 1M offsets expiring). A
    shard asks for the lane and gets its step queued only when the previous
    step is done, with the loop's other ready work run in between.
    """

    def __init__(self) -> None:
        self._waiting: deque[Callable[[], None]] = deque()
        self._busy = False

    def request(self, start: Callable[[], None]) -> None:
        self._waiting.append(start)
        self._next()

    def done(self) -> None:
        self._busy = False
        asyncio.get_running_loop().call_soon(self._next)  # after what is ready now

    def _next(self) -> None:
        if self._busy or not self._waiting:
            return
        self._busy = True
        self._waiting.popleft()()


_BACKGROUND_TIMERS = frozenset({EXPIRE_OFFSETS_KEY.kind})


class ShardRuntime:
    """The single writer of one shard: requests, timers and write completions
    all pass through one queue, so the shard needs no locks."""

    def __init__(
        self,
        shard: CoordinatorShard | None,
        plog: PartitionLog,
        durability: Durability,
        publish_events: Callable[[list[Any]], None],
        lane: BackgroundLane | None = None,
        clock: Callable[[], int] = now_ms,
        make_shard: Callable[[], CoordinatorShard] | None = None,
    ) -> None:
        # Without a shard, load() makes it with `make_shard` (in its worker
        # thread): the broker listens before the coordinator core is imported.
        assert shard is not None or make_shard is not None
        self.shard: CoordinatorShard = shard  # type: ignore[assignment]
        # the shard's writes in flight, from their append to their fate; made
        # with the shard (here, or by load() when it makes the shard)
        self._tracker = None if shard is None else WriteTracker(shard)
        self._make_shard = make_shard
        # the wall clock in ms; the deterministic simulation passes a fake one
        self.clock = clock
        self.lane = lane
        self.plog = plog
        self.durability = durability
        self.publish_events = publish_events
        self.loaded = False
        self.load_seconds = 0.0
        # making the shard (the first one imports the coordinator core): kept
        # apart from load_seconds, which is the replay the broker reports
        self.setup_seconds = 0.0
        self._queue: asyncio.Queue[_Work] = asyncio.Queue()
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._due: dict[str, float] = {}  # key -> loop time it is due (may pass its handle's)
        self._waiting: dict[int, asyncio.Future[Any] | Pending] = {}
        # the clock read of the step being processed: its append, its timers
        # and the completion of a write durable at once share it
        self._step_now = 0
        self._ids = itertools.count(1)
        self._task: asyncio.Task[None] | None = None
        # appended results in append order; each entry is [result, error or None
        # while its fsync is outstanding, what to run once it is done]
        self._writes: deque[list[Any]] = deque()

    @property
    def tracker(self) -> WriteTracker:
        """The shard's write tracker: there once the shard is, which is before
        anything is appended (load() runs before start())."""
        assert self._tracker is not None, "no shard yet: load() first"
        return self._tracker

    # ---- lifecycle -----------------------------------------------------

    def load(self) -> int:
        """Replays the partition into the shard (runs in a worker thread).

        Only the last record of each key is replayed, in log order: that is
        exactly what compaction would leave, and replay must give the same
        state for a compacted log, so the result is the same while values
        that were overwritten later are never decoded.
        """
        started = time.perf_counter()
        if self.shard is None:
            assert self._make_shard is not None
            self.shard = self._make_shard()
            self._tracker = WriteTracker(self.shard)
        replay_started = time.perf_counter()
        self.setup_seconds = replay_started - started
        txns = TxnReplay()
        latest = collect_log(self.plog, txns)
        self.shard.replay_latest(latest)
        for producer_id, pending in txns.still_open(latest).items():
            self.shard.replay_txn_offsets(producer_id, pending)
        self.load_seconds = time.perf_counter() - replay_started
        return len(latest)

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"coordinator-{self.shard.partition}")
        self._queue.put_nowait(_Work("loaded", None))

    async def stop(self) -> None:
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        self._due.clear()
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        for fut in self._waiting.values():
            if not fut.done():
                fut.cancel()

    # ---- the API the handlers use ---------------------------------------

    async def call(self, request: Any) -> Any:
        answer = self.submit(request)
        if type(answer) is Pending:
            return await answer.wait()
        return answer

    def submit(self, request: Any) -> Any:
        """The shard's answer to `request` if it is ready as soon as the step
        has run (no write, or one already durable: `muster.fsync=never`),
        else a `Pending` to wait on. The common commit then costs no future,
        no task and no loop hop between the append and the answer."""
        if not self.loaded:
            raise CoordinatorLoading()
        waiter = Pending()
        if self._queue.empty():
            # Nothing is ahead of this request and the serial loop never stops
            # half-way through an item (it only awaits the queue), so running
            # it here is what the loop would do next, one task hop sooner.
            self._process(_Work("request", request, waiter))
            if waiter.filled:
                if waiter.error is not None:
                    raise waiter.error
                return waiter.value
        else:
            self._queue.put_nowait(_Work("request", request, waiter))
        return waiter

    def delete_partitions(self, partitions: list[tuple[str, int]]) -> None:
        """Topics were deleted: their committed offsets go too (tombstones)."""
        if self._task is not None:
            self._queue.put_nowait(_Work("delete_partitions", partitions))

    # ---- the serial loop -------------------------------------------------

    async def _run(self) -> None:
        while True:
            self._process(await self._queue.get())

    def _process(self, work: _Work) -> None:
        self._step_now = now = self.clock()
        try:
            try:
                if work.kind == "request":
                    request_id = next(self._ids)
                    assert work.future is not None
                    self._waiting[request_id] = work.future
                    result = self.shard.handle(request_id, work.payload, now)
                elif work.kind == "timer":
                    result = self.shard.on_timer(work.payload, now)
                elif work.kind == "background":
                    assert self.lane is not None
                    try:
                        result = self.shard.on_timer(work.payload, now)
                    except BaseException:
                        self.lane.done()
                        raise
                    # the lane is held until the step's tombstones are durable and
                    # applied: released at once, the next steps' appends piled up
                    # behind the flusher (a commit's fsync waited for all of them)
                    # and their completions ran back to back on the loop
                    self._apply(result, then=self.lane.done)
                    return
                elif work.kind == "delete_partitions":
                    result = self.shard.delete_partitions(work.payload, now)
                elif work.kind == "written":
                    write, error = work.payload
                    result = self.tracker.complete(write, error, now)
                else:
                    result = self.shard.loaded(now)
                    self.loaded = True
            except Exception as exc:  # a bug in the core must not kill the shard
                log.exception("coordinator shard %d failed on %s", self.shard.partition, work.kind)
                if work.future is not None and not work.future.done():
                    work.future.set_exception(exc)
                return
            self._apply(result)
        finally:
            self._step_now = 0

    def _now(self) -> int:
        """The step's clock read while a step runs, else the clock."""
        return self._step_now or self.clock()

    def _apply(self, result: Result, then: Callable[[], None] | None = None) -> None:
        """Carries out one step's obligations; `then` runs once its write (if
        any) is done, durable or failed, and applied."""
        self.tracker.track(result.on_durable)
        for op in result.timers:
            self._set_timer(op)
        if result.events:
            try:
                self.publish_events(result.events)
            except Exception:
                log.exception("could not record group events")
        if not result.records and result.marker is None:
            self._reply(result.replies)
            if result.on_durable is not None:
                self._queue.put_nowait(_Work("written", (result.on_durable, 0)))
            if then is not None:
                then()
            return
        entry: list[Any] = [result, None, then]
        self._writes.append(entry)
        try:
            now = self._now()
            if result.marker is not None:
                producer_id, epoch, commit = result.marker
                self.plog.append_marker(producer_id, epoch, commit, 0, now)
            elif result.producer is not None:
                producer_id, epoch = result.producer
                batches = _batches(
                    result.records,
                    self.plog.config.max_message_bytes,
                    now,
                    producer_id=producer_id,
                    producer_epoch=epoch,
                    transactional=True,
                )
                self.plog.append(batches, now, coordinator=True)
            else:
                limit = self.plog.config.max_message_bytes
                batches = _batches(result.records, limit, now)
                # coordinator origin: every record has its key, nothing to re-decode
                self.plog.append(batches, now, coordinator=True)
            # a commit's few records are fsynced on the loop (cheaper than a
            # hand-off); an expiry step's thousands of tombstones go to the
            # flusher thread, so their fsync does not hold every shard's loop
            small = len(result.records) <= INLINE_FSYNC_RECORDS
            self.durability.appended(self.plog, latency_bound=small)
        except (CodedError, OSError) as exc:
            # An escaped OSError would kill the serial loop and leave this entry
            # unanswered forever, stalling every later request of the shard.
            log.error("coordinator append failed on partition %d: %s", self.shard.partition, exc)
            entry[1] = exc.error_code if isinstance(exc, CodedError) else STORAGE_ERROR
            if result.on_durable is not None:
                # undo its applied records now; its answer keeps its place in order
                self._apply(self.tracker.abandon(result.on_durable, now))
            self._complete_writes()
            return
        self.durability.on_durable(self.plog, lambda error: self._written(entry, error))

    def _written(self, entry: list[Any], error: OSError | None) -> None:
        if error is not None:
            log.error("coordinator write not durable: %s", error)
        entry[1] = 0 if error is None else STORAGE_ERROR
        self._complete_writes()

    def _complete_writes(self) -> None:
        """Answers the writes that are done, oldest first: the core needs write
        completions in append order, and a client must never see a later
        answer before an earlier one it depends on."""
        writes = self._writes
        while writes and writes[0][1] is not None:
            result, error, then = writes.popleft()
            self._reply(result.replies)
            if result.on_durable is not None:
                # The write is durable (or failed) now, so completing it here
                # rather than behind queued work is only an earlier completion,
                # which the core must accept anyway.
                self._complete(result.on_durable, error)
            if then is not None:
                then()

    def _complete(self, write: Write, error: int) -> None:
        try:
            result = self.tracker.complete(write, error, self._now())
        except Exception:
            log.exception("coordinator shard %d failed on written", self.shard.partition)
            return
        self._apply(result)

    def _reply(self, replies: list[tuple[int, Any]]) -> None:
        for request_id, response in replies:
            fut = self._waiting.pop(request_id, None)
            if fut is not None and not fut.done():
                fut.set_result(response)

    def _set_timer(self, op: Schedule | Cancel) -> None:
        key = op.key
        if not isinstance(op, Schedule):
            self._due.pop(key, None)
            old = self._timers.pop(key, None)
            if old is not None:
                old.cancel()
            return
        loop = asyncio.get_running_loop()
        now = self._now()
        due = loop.time() + max(0.0, (op.deadline_ms - now) / 1000)
        self._due[key] = due
        old = self._timers.get(key)
        if old is not None:
            if old.when() <= due:
                # Every heartbeat pushes its member's deadline later: the armed
                # handle stays and re-arms itself for the new deadline when it
                # fires, instead of a cancel and a new heap entry per heartbeat.
                return
            old.cancel()
        self._timers[key] = loop.call_at(due, self._fire, key)

    def _fire(self, key: str) -> None:
        due = self._due.get(key)
        if due is not None:
            loop = asyncio.get_running_loop()
            if due > loop.time():  # moved later since this handle was armed
                self._timers[key] = loop.call_at(due, self._fire, key)
                return
        self._timers.pop(key, None)
        self._due.pop(key, None)
        # keys reach the runtime as plain text (a key without a group is its kind):
        # asking a str for a TimerKey's `kind` found nothing, and no step ever
        # took the lane
        if self.lane is not None and key in _BACKGROUND_TIMERS:
            self.lane.request(lambda: self._queue.put_nowait(_Work("background", key)))
            return
        self._queue.put_nowait(_Work("timer", key))


class GroupCoordinator:
    """All shards of this broker, routed by Kafka's own group -> partition rule."""

    def __init__(self, shards: list[ShardRuntime]) -> None:
        self.shards = shards
        self.loader: asyncio.Task[None] | None = None
        self.load_ms: int | None = None
        # Java's string hash in Python costs microseconds per request; a group
        # id keeps its shard, so the busy ones are remembered (bounded).
        self._shard_of: dict[str, ShardRuntime] = {}

    def shard_for(self, group_id: str) -> ShardRuntime:
        shard = self._shard_of.get(group_id)
        if shard is None:
            shard = self.shards[partition_for(group_id, len(self.shards))]
            if len(self._shard_of) >= SHARD_CACHE_SIZE:
                self._shard_of.clear()
            self._shard_of[group_id] = shard
        return shard

    async def call(self, group_id: str, request: Any) -> Any:
        return await self.shard_for(group_id).call(request)

    @property
    def loaded(self) -> bool:
        return all(s.loaded for s in self.shards)

    async def stop(self) -> None:
        if self.loader is not None and not self.loader.done():
            self.loader.cancel()
            try:
                await self.loader
            except asyncio.CancelledError:
                pass
        for shard in self.shards:
            await shard.stop()


_RECORD_OVERHEAD = 24  # a record's own varints and attributes, at most, beside key and value
_BATCH_OVERHEAD = 61


def _batches(
    records: Sequence[tuple[bytes, bytes | None]], limit: int, timestamp_ms: int, **kw: Any
) -> bytes:
    """The records as batches of at most `limit` bytes each, in one append (so still
    all or nothing): an expiry step's tombstones or a big commit must not exceed
    the partition's max.message.bytes, as one batch of them would."""
    if len(records) == 1:  # a commit of one partition: nothing to split
        if not kw:
            key, value = records[0]
            return build_one(key, value, timestamp_ms)
        return build_batch(records, timestamp_ms=timestamp_ms, **kw)
    out = bytearray()
    chunk: list[tuple[bytes, bytes | None]] = []
    size = _BATCH_OVERHEAD
    for record in records:
        key, value = record
        grow = _RECORD_OVERHEAD + len(key) + (len(value) if value is not None else 0)
        if chunk and size + grow > limit:
            out += build_batch(chunk, timestamp_ms=timestamp_ms, **kw)
            chunk, size = [], _BATCH_OVERHEAD
        chunk.append(record)
        size += grow
    out += build_batch(chunk, timestamp_ms=timestamp_ms, **kw)
    return bytes(out)
