"""In-memory PartitionLog for core tests: same validation, offsets, idempotence,
transactions and read semantics as the segment log, no disk. flush() only
advances flushed_offset (so tests can model durability by calling it). Every
method holds one re-entrant lock, so retention or compaction from a worker
thread is safe (speed is not a goal here)."""

from __future__ import annotations

import functools
import threading
from bisect import bisect_right
from collections.abc import Callable
from typing import Any, TypeVar

from muster.log.append import PreparedAppend, append_end_marker, prepare_append
from muster.log.cleaner import CleanStats, add_to_map, filter_batch
from muster.log.config import LogConfig
from muster.log.port import AppendInfo, OffsetOutOfRangeError
from muster.log.producer_state import ProducerStateManager
from muster.records.batch import decode_batch

F = TypeVar("F", bound=Callable[..., Any])


def _locked(method: F) -> F:
    @functools.wraps(method)
    def wrapper(self: MemoryLog, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return method(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


class MemoryLog:
    def __init__(self, topic: str, partition: int, config: LogConfig | None = None) -> None:
        self.topic = topic
        self.partition = partition
        self.config = config or LogConfig()
        self.producers = ProducerStateManager()
        self._bases: list[int] = []  # base offset per batch
        self._nexts: list[int] = []  # next offset per batch
        self._data: list[bytes] = []
        self._max_ts: list[int] = []
        self._start = 0
        self._end = 0
        self._flushed = 0
        self._lock = threading.RLock()

    @property
    def log_start_offset(self) -> int:
        return self._start

    @property
    def log_end_offset(self) -> int:
        return self._end

    @property
    def flushed_offset(self) -> int:
        return self._flushed

    @property
    def size_in_bytes(self) -> int:
        return sum(len(d) for d in self._data)

    @_locked
    def append(self, records: bytes, now_ms: int, coordinator: bool = False) -> AppendInfo:
        return self._append(records, now_ms, False, coordinator)

    def _append(
        self, records: bytes, now_ms: int, marker: bool, coordinator: bool = False
    ) -> AppendInfo:
        prepared = prepare_append(
            records,
            now_ms,
            self._end,
            self.producers,
            self.config,
            self._start,
            marker,
            coordinator,
        )
        if isinstance(prepared, AppendInfo):
            return prepared
        self._write(prepared)
        return AppendInfo(
            prepared.base_offset,
            prepared.next_offset - 1,
            prepared.log_append_time_ms,
            self._start,
        )

    @_locked
    def append_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        now_ms: int,
    ) -> AppendInfo:
        return append_end_marker(
            self._append,
            self.producers,
            producer_id,
            producer_epoch,
            commit,
            coordinator_epoch,
            now_ms,
            self._flushed,
        )

    @_locked
    def first_unstable_offset(self, high_watermark: int | None = None) -> int | None:
        return self.producers.first_unstable_offset(high_watermark)

    @_locked
    def aborted_transactions(self, fetch_offset: int, upper: int) -> list[tuple[int, int]]:
        return self.producers.aborted_between(fetch_offset, upper)

    def _write(self, prepared: PreparedAppend) -> None:
        view = memoryview(prepared.buf)
        for base, nxt, max_ts, pos, size in prepared.batches:
            self._bases.append(base)
            self._nexts.append(nxt)
            self._data.append(bytes(view[pos : pos + size]))
            self._max_ts.append(max_ts)
        self.producers.commit(prepared.pending)
        self._end = prepared.next_offset

    @_locked
    def read(self, offset: int, max_bytes: int, upper: int | None = None) -> bytes:
        if offset < self._start or offset > self._end:
            raise OffsetOutOfRangeError(
                f"offset {offset} outside [{self._start}, {self._end}] of {self.topic}-"
                f"{self.partition}"
            )
        i = bisect_right(self._bases, offset) - 1
        if i < 0:
            i = 0
        elif self._nexts[i] <= offset:
            i += 1
        out: list[bytes] = []
        total = 0
        while i < len(self._data):
            if upper is not None and self._bases[i] >= upper:
                break
            chunk = self._data[i]
            if out and total + len(chunk) > max_bytes:
                break
            out.append(chunk)
            total += len(chunk)
            i += 1
        return b"".join(out)

    @_locked
    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        for i, max_ts in enumerate(self._max_ts):
            if max_ts >= timestamp_ms:
                header, records = decode_batch(self._data[i])
                for r in records:
                    if r.timestamp is not None and r.timestamp >= timestamp_ms:
                        return (r.offset or header.base_offset, r.timestamp)
        return None

    @_locked
    def max_timestamp(self) -> tuple[int, int] | None:
        if not self._data:
            return None
        best = max(range(len(self._max_ts)), key=lambda i: (self._max_ts[i], -i))
        header, records = decode_batch(self._data[best])
        for r in records:
            if r.timestamp == self._max_ts[best]:
                return (r.offset if r.offset is not None else header.base_offset, r.timestamp)
        return (header.base_offset, self._max_ts[best])

    @_locked
    def flush(self) -> None:
        self._flushed = max(self._flushed, self._end)

    @_locked
    def compact(self, now_ms: int) -> CleanStats:
        """Compaction as the segment cleaner does it, over the prefix of batches
        older than min.compaction.lag.ms (there are no segments here)."""
        stats = CleanStats()
        cfg = self.config
        if not cfg.compact:
            return stats
        n = 0
        while n < len(self._data) and now_ms - self._max_ts[n] >= cfg.min_compaction_lag_ms:
            n += 1
        latest: dict[bytes, int] = {}
        add_to_map(latest, self._data[:n])
        horizon = now_ms - cfg.delete_retention_ms
        keep = [True] * len(self._data)
        for i in range(n):
            before = len(self._data[i])
            kept, removed = filter_batch(self._data[i], latest, self._max_ts[i] < horizon)
            if removed:
                stats.add(CleanStats(0, removed, before, len(kept or b"")))
                if kept is None:
                    keep[i] = False
                else:
                    self._data[i] = kept
        for lst in (self._bases, self._nexts, self._data, self._max_ts):
            lst[:] = [x for x, k in zip(lst, keep, strict=True) if k]
        return stats

    @_locked
    def run_retention(self, now_ms: int) -> int:
        """Drops old batches by retention.ms / retention.bytes, never the last
        one (it stands in for the active segment); returns how many."""
        cfg = self.config
        if not cfg.delete:
            return 0
        total = sum(len(d) for d in self._data)
        n = 0
        while n < len(self._data) - 1:
            size = len(self._data[n])
            by_time = cfg.retention_ms >= 0 and now_ms - self._max_ts[n] > cfg.retention_ms
            by_size = cfg.retention_bytes >= 0 and total - size >= cfg.retention_bytes
            if not (by_time or by_size):
                break
            total -= size
            n += 1
        if n:
            self.truncate_prefix(self._nexts[n - 1])
        return n

    def delete_records(self, offset: int) -> int:
        """DeleteRecords: the log start moves up to `offset` (at most the end)."""
        if offset > self._start:
            self.truncate_prefix(offset)
        return self._start

    @_locked
    def truncate_prefix(self, offset: int) -> None:
        """Drops whole batches below `offset` (retention in tests)."""
        while self._data and self._nexts[0] <= offset:
            for lst in (self._bases, self._nexts, self._data, self._max_ts):
                del lst[0]
        self._start = max(self._start, min(offset, self._end))
        self.producers.prune(self._start)
