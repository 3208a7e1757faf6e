"""The on-disk PartitionLog: a directory `<topic>-<partition>` of segments.

Threading: append/read/retention run on the broker's event-loop thread;
flush(), retention and the compaction cleaner run in worker threads. The
segment list is an immutable snapshot (`_view`: segments and their base
offsets) replaced as a whole, so readers and flush pick it up with one
attribute read and take no lock. `_view_lock` serialises the replacements
(roll, retention, cleaner swap; held for microseconds); `_flush_lock`
serialises flush with retention/cleaner file operations and close (those run in
worker threads, so waiting for an fsync there never blocks the event loop).
Lock order: _flush_lock, then _view_lock. Retired segments keep their file
descriptor open until the last reference goes (weakref.finalize), so a read
racing a retention or cleaner swap never sees a closed fd.

Producer state (idempotence, transactions) is snapshotted at every roll, as
of the new segment's base offset (`<base>.snapshot`, written on the loop and
fsynced by the next flush, which then deletes the older ones), and at clean
shutdown (`producer-state.json`). An unclean open loads the newest readable
roll snapshot and replays the batches after it, so ongoing transactions and
aborted ones anywhere in the log survive kill -9.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from bisect import bisect_left, bisect_right
from pathlib import Path

from muster.log.append import append_end_marker, prepare_append
from muster.log.cleaner import CleanStats, clean_segment_log
from muster.log.config import LogConfig
from muster.log.files import fsync_dir, fsync_file, read_json
from muster.log.port import (
    AppendInfo,
    OffsetOutOfRangeError,
    StorageError,
    UnreadableLogError,
)
from muster.log.producer_recovery import PRODUCER_SNAPSHOT, ProducerRecovery
from muster.log.producer_state import ProducerStateManager
from muster.log.segment import Segment, segment_name
from muster.records.batch import decode_batch

# the log start offset DeleteRecords moved into a segment (Kafka's
# log-start-offset-checkpoint), when it is above the first segment's base
START_OFFSET_FILE = "log-start-offset.json"
TEMP_SUFFIXES = (".cleaned", ".swap", ".deleted", ".tmp")


class SegmentLog(ProducerRecovery):
    def __init__(
        self,
        directory: Path,
        topic: str,
        partition: int,
        config: LogConfig | None = None,
        clean_shutdown: bool = False,
        now_ms: int = 0,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.directory = Path(directory)
        self.config = config or LogConfig()
        self.producers = ProducerStateManager()
        self._flush_lock = threading.Lock()
        self._view_lock = threading.Lock()
        self._view: tuple[tuple[Segment, ...], tuple[int, ...]] = ((), ())
        self._dir_version = 0  # bumped when segment files are created or removed
        self._dir_synced = 0
        self._closed = False
        self._end = 0
        self._flushed = 0
        self.recovered_truncations = 0  # torn/corrupt tails cut on open
        self._unsynced_snapshots: list[Path] = []  # roll snapshots the next flush fsyncs
        self._durable_snapshot: Path | None = None
        # disk faults (see _heal): a refused write whose bytes could not be cut
        # off, and a failed flush, after which unflushed data is of unknown state
        self._torn_tail = False
        self._flush_failed: OSError | None = None
        created = not self.directory.exists()
        self.directory.mkdir(parents=True, exist_ok=True)
        if created:
            fsync_dir(self.directory.parent)
        self._load(clean_shutdown, now_ms)

    # ------------------------------------------------------------ loading

    def _read_start_floor(self) -> int:
        """The DeleteRecords floor. The file is replaced atomically (fsynced
        temp file, rename), so a crash never tears it: unreadable means the
        disk damaged it, and reading on from 0 would serve deleted records
        again, so the log refuses to open instead."""
        path = self.directory / START_OFFSET_FILE
        if not path.exists():
            return 0
        doc = read_json(path)
        value = doc.get("log_start_offset") if doc else None
        if not isinstance(value, int) or value < 0:
            raise UnreadableLogError(
                f"{path} is damaged, so the log start of {self.topic}-{self.partition} "
                "(records deleted by DeleteRecords) is unknown. Restore the file, or "
                "delete it to serve the partition from its first segment again."
            )
        return value

    def _load(self, clean_shutdown: bool, now_ms: int) -> None:
        self._start_floor = self._read_start_floor()
        logs = {p.stem for p in self.directory.glob("*.log")}
        for path in self.directory.iterdir():
            if path.name.endswith(TEMP_SUFFIXES) or (
                path.suffix in (".index", ".timeindex") and path.stem not in logs
            ):
                path.unlink()
        bases = sorted(int(stem) for stem in logs if stem.isdigit())
        interval = self.config.index_interval_bytes
        segments: list[Segment] = []
        for i, base in enumerate(bases):
            seg = Segment(self.directory, base, interval)
            last = i == len(bases) - 1
            start = 0
            if (clean_shutdown or not last) and seg.load_indexes() and seg.idx_positions:
                start = seg.idx_positions[-1]
                seg.max_ts = seg.time_ts[-1] if seg.time_ts else -1
                seg.max_ts_offset = seg.time_offsets[-1] if seg.time_offsets else -1
                first = next(seg.iter_headers(0))
                seg.rolling_ts = first.max_timestamp
                seg.batches = 1
                seg.bytes_since_index = 0
            else:
                seg.reset_indexes()
                seg.drop_index_files()
            if segments and base < segments[-1].next_offset:
                # overlaps its predecessor (a crash mid-roll after truncation): drop it
                seg.close()
                seg.delete()
                self.recovered_truncations += 1
                self._delete_files(bases[i + 1 :])
                break
            end, _ = seg.recover(start, check_crc=True)
            if seg.time_offsets and seg.time_offsets[-1] >= seg.next_offset:
                # a time index newer than the data it indexes: rebuild it
                seg.reset_indexes()
                seg.drop_index_files()
                start = 0
                end, _ = seg.recover(0, check_crc=True)
            if start == 0:
                seg.idx_written = seg.time_written = 0  # rebuilt: rewrite the files
                if end == seg.size:
                    seg.write_indexes()
            seg.created_ms = seg.rolling_ts if seg.rolling_ts >= 0 else now_ms
            segments.append(seg)
            if end < seg.size:
                seg.truncate_to(end)
                self.recovered_truncations += 1
                self._delete_files(bases[i + 1 :])
                break
        if not segments:
            seg = Segment(self.directory, 0, interval)
            seg.created_ms = now_ms
            segments.append(seg)
            self._dir_version += 1
        for seg in segments:
            seg.flushed_size = seg.size
        if not clean_shutdown:  # what survived a crash may sit only in the page cache
            for seg in segments[-2:]:
                if seg.size:
                    os.fsync(seg.fd)
        self._set_view(segments)
        self._end = max(segments[-1].next_offset, segments[-1].base_offset)
        self._flushed = self._end
        self._load_producer_state(segments, clean_shutdown)

    def _set_view(self, segments: list[Segment] | tuple[Segment, ...]) -> None:
        self._view = (tuple(segments), tuple(s.base_offset for s in segments))

    def _delete_files(self, bases: list[int]) -> None:
        for base in bases:
            for suffix in (".log", ".index", ".timeindex"):
                (self.directory / segment_name(base, suffix)).unlink(missing_ok=True)

    # ------------------------------------------------------------ port

    @property
    def log_start_offset(self) -> int:
        base = self._view[0][0].base_offset
        return base if base >= self._start_floor else min(self._start_floor, self._end)

    def delete_records(self, offset: int) -> int:
        """DeleteRecords: moves the log start up to `offset` (at most the log
        end), durably, and drops the segments wholly below it; returns the new
        log start. Runs in a worker thread (it fsyncs)."""
        offset = min(offset, self._end)
        if offset <= self.log_start_offset:
            return self.log_start_offset
        path = self.directory / START_OFFSET_FILE
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "w") as f:
            f.write(json.dumps({"log_start_offset": offset}))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        fsync_dir(self.directory)
        self._start_floor = offset
        segs = self._view[0]
        below = [s for i, s in enumerate(segs[:-1]) if segs[i + 1].base_offset <= offset]
        if below:
            self.remove_segments(below)
        self.producers.prune(self.log_start_offset)
        return self.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._end

    @property
    def flushed_offset(self) -> int:
        return self._flushed

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def size_in_bytes(self) -> int:
        return sum(s.size for s in self._view[0])

    @property
    def segments(self) -> list[Segment]:
        return list(self._view[0])

    def append(self, records: bytes, now_ms: int, coordinator: bool = False) -> AppendInfo:
        return self._append(records, now_ms, False, coordinator)

    def append_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        now_ms: int,
    ) -> AppendInfo:
        # here, on the appending thread: retention and flush (other threads)
        # only move the offsets the producer state is pruned and settled by
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

    def first_unstable_offset(self, high_watermark: int | None = None) -> int | None:
        return self.producers.first_unstable_offset(high_watermark)

    def aborted_transactions(self, fetch_offset: int, upper: int) -> list[tuple[int, int]]:
        return self.producers.aborted_between(fetch_offset, upper)

    def _append(
        self, records: bytes, now_ms: int, marker: bool, coordinator: bool = False
    ) -> AppendInfo:
        if self._torn_tail or self._flush_failed is not None:
            self._heal(now_ms)
        prepared = prepare_append(
            records,
            now_ms,
            self._end,
            self.producers,
            self.config,
            self.log_start_offset,
            marker,
            coordinator,
        )
        if isinstance(prepared, AppendInfo):
            return prepared
        seg = self._view[0][-1]
        if seg.size == 0:
            seg.created_ms = now_ms
        try:
            if not seg.fits(
                len(prepared.buf), prepared.next_offset - 1, self.config.segment_bytes
            ) or (seg.size > 0 and now_ms - seg.created_ms >= self.config.segment_ms):
                seg = self._roll(now_ms)
            seg.append(prepared.buf, prepared.batches)
        except OSError as exc:
            # Nothing was committed (offsets, producer state): the write is
            # refused whole. Segment.append cut its partial bytes unless that
            # failed too, in which case the next append cuts them first.
            try:
                self._torn_tail = os.fstat(seg.fd).st_size != seg.size
            except OSError:
                self._torn_tail = True
            raise StorageError(f"write to {self.topic}-{self.partition} failed: {exc}") from exc
        if prepared.pending:
            self.producers.commit(prepared.pending)
        self._end = prepared.next_offset
        return AppendInfo(
            prepared.base_offset,
            prepared.next_offset - 1,
            prepared.log_append_time_ms,
            self._view[0][0].base_offset,
        )

    def _heal(self, now_ms: int) -> None:
        """Makes the log writable again after a disk fault, or raises StorageError.

        A torn tail (a refused write's bytes) is cut. After a failed flush the
        data past the flushed offset may be lost from the page cache while a
        later fsync reports success (Linux marks the pages clean), so all of it
        is cut and the log reopened as after a crash: the writes cut were all
        answered with an error (their waiters failed with the flush), so
        nothing acknowledged goes.
        """
        try:
            if self._flush_failed is not None:
                with self._flush_lock, self._view_lock:
                    self._rewind_to_flushed(now_ms)
                self._flush_failed = None
            else:
                seg = self._view[0][-1]
                os.ftruncate(seg.fd, seg.size)
            self._torn_tail = False
        except OSError as exc:
            raise StorageError(
                f"{self.topic}-{self.partition} not writable after a disk fault: {exc}"
            ) from exc

    def _rewind_to_flushed(self, now_ms: int) -> None:
        target = self._flushed
        segs, bases = self._view
        i = max(0, bisect_right(bases, target) - 1)
        found = segs[i].find(target)
        if found is not None:
            segs[i].truncate_to(found[0])
        # Retired segment objects keep their fds until the last reader drops
        # them (see the module docstring); _load opens the files afresh and
        # drops roll snapshots past the new end.
        for seg in segs[i + 1 :]:
            seg.delete()
        self._unsynced_snapshots.clear()
        fsync_dir(self.directory)
        self.producers = ProducerStateManager()
        self.recovered_truncations += 1
        self._dir_version += 1
        self._load(False, now_ms)

    def _roll(self, now_ms: int) -> Segment:
        # flush() reads the unsynced snapshots and _end before _dir_version and
        # the view, so the new files and their directory entries are synced
        # with any offset it reports.
        self._write_roll_snapshot(self._end)
        seg = Segment(self.directory, self._end, self.config.index_interval_bytes)
        seg.created_ms = now_ms
        with self._view_lock:
            self._dir_version += 1
            self._set_view((*self._view[0], seg))
        return seg

    def roll(self, now_ms: int = 0) -> None:
        """Closes the active segment if it holds data (tests, admin)."""
        if self._view[0][-1].size > 0:
            self._roll(now_ms)

    def read(self, offset: int, max_bytes: int, upper: int | None = None) -> bytes:
        end = self._end
        segs, bases = self._view
        if offset == end:
            return b""
        start = self.log_start_offset
        if offset < start or offset > end:
            raise OffsetOutOfRangeError(
                f"offset {offset} outside [{start}, {end}] of {self.topic}-{self.partition}"
            )
        i = bisect_right(bases, offset) - 1
        n = len(segs)
        while i < n:
            data = segs[i].read(offset, max_bytes, upper)
            if data:
                return data
            i += 1
            if upper is not None and i < n and bases[i] >= upper:
                break
        return b""

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        for seg in self._view[0]:
            if seg.max_ts < timestamp_ms:
                continue
            i = bisect_left(seg.time_ts, timestamp_ms) - 1
            start = seg.position_for(seg.time_offsets[i]) if i >= 0 else 0
            for h in seg.iter_headers(start):
                if h.max_timestamp >= timestamp_ms:
                    _, records = decode_batch(seg.read_range(h.position, h.end))
                    for r in records:
                        if r.timestamp is not None and r.timestamp >= timestamp_ms:
                            return (
                                r.offset if r.offset is not None else h.base_offset,
                                r.timestamp,
                            )
        return None

    def max_timestamp(self) -> tuple[int, int] | None:
        best: Segment | None = None
        for seg in self._view[0]:
            if seg.max_ts >= 0 and (best is None or seg.max_ts > best.max_ts):
                best = seg
        if best is None:
            return None
        for h in best.iter_headers(0):
            if h.max_timestamp == best.max_ts:
                _, records = decode_batch(best.read_range(h.position, h.end))
                for r in records:
                    if r.timestamp == best.max_ts and r.offset is not None:
                        return (r.offset, r.timestamp)
                return (h.base_offset, h.max_timestamp)
        return None

    def flush(self) -> None:
        """fsync every segment with unflushed data (and the directory when new
        segment files appeared), then advance flushed_offset to the log-end
        offset captured at the start. Safe to call from a worker thread while
        the event-loop thread appends."""
        with self._flush_lock:
            if self._closed:
                return
            if self._flush_failed is not None:  # see _heal: never report it durable
                raise OSError(f"an earlier flush failed: {self._flush_failed}")
            try:
                self._flush_locked()
            except OSError as exc:
                self._flush_failed = exc
                raise

    def _flush_locked(self) -> None:
        snapshots = self._unsynced_snapshots[:]
        end = self._end
        dir_version = self._dir_version
        segs = self._view[0]
        for seg in reversed(segs):
            if (
                seg is not segs[-1]
                and seg.flushed_size == seg.size
                and seg.idx_written == len(seg.idx_offsets)
            ):
                break
            seg.sync()
        for path in snapshots:
            fsync_file(path)
        if dir_version != self._dir_synced:
            fsync_dir(self.directory)
            self._dir_synced = dir_version
        if snapshots:
            # the loop thread only appends to the list: these are still its head
            del self._unsynced_snapshots[: len(snapshots)]
            older = [*snapshots[:-1], self._durable_snapshot]
            newest = self._durable_snapshot = snapshots[-1]
            for path in older:
                if path is not None and path != newest:  # a roll may rewrite one
                    path.unlink(missing_ok=True)
        if end > self._flushed:
            self._flushed = end

    # ------------------------------------------------------------ retention

    def run_retention(self, now_ms: int) -> int:
        """Deletes closed segments past retention.ms (by their largest
        timestamp) or beyond retention.bytes; returns how many."""
        cfg = self.config
        if not cfg.delete:
            return 0
        segs = self._view[0]
        total = sum(s.size for s in segs)
        doomed: list[Segment] = []
        for seg in segs[:-1]:
            if seg.size == 0:  # emptied by the cleaner
                doomed.append(seg)
                continue
            by_time = (
                cfg.retention_ms >= 0 and seg.max_ts >= 0 and now_ms - seg.max_ts > cfg.retention_ms
            )
            by_size = cfg.retention_bytes >= 0 and total - seg.size >= cfg.retention_bytes
            if not (by_time or by_size):
                break
            doomed.append(seg)
            total -= seg.size
        if doomed:
            self.remove_segments(doomed)
        return len(doomed)

    def remove_segments(self, doomed: list[Segment]) -> None:
        """Drops closed segments (retention); ones no longer in the view (a
        cleaner swapped them meanwhile) are left for the next run."""
        with self._flush_lock, self._view_lock:
            current = self._view[0]
            gone = {id(s) for s in doomed if s is not current[-1]}
            removed = [s for s in current if id(s) in gone]
            if not removed:
                return
            self._set_view([s for s in current if id(s) not in gone])
            self._dir_version += 1
            for seg in removed:
                seg.delete()

    def swap_cleaned(self, old: Segment, cleaned: Path) -> bool:
        """Renames a cleaner's rewritten file over `old` and swaps in the new
        segment (same base offset), unless retention removed `old` meanwhile."""
        new = Segment(
            self.directory, old.base_offset, self.config.index_interval_bytes, log_path=cleaned
        )
        new.recover(0, check_crc=False)
        new.flushed_size = new.size
        new.created_ms = old.created_ms
        with self._flush_lock, self._view_lock:
            current = self._view[0]
            if not any(s is old for s in current) or old is current[-1]:
                new.close()
                cleaned.unlink(missing_ok=True)
                return False
            old.drop_index_files()
            os.replace(cleaned, old.log_path)
            new.log_path = old.log_path
            fsync_dir(self.directory)
            new.write_indexes()
            self._set_view([new if s is old else s for s in current])
        return True

    def compact(self, now_ms: int) -> CleanStats:
        """Runs the compaction cleaner if cleanup.policy includes compact."""
        return clean_segment_log(self, now_ms)

    # ------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Flushes, writes indexes and the producer-state snapshot, closes.
        After a disk fault only closes (and raises): the next open recovers."""
        try:
            self.flush()
        except OSError:
            with self._flush_lock:
                self._closed = True
                for seg in self._view[0]:
                    seg.close()
            raise
        with self._flush_lock:
            if self._closed:
                return
            self._closed = True
            for seg in self._view[0]:
                seg.write_indexes()
                seg.close()
            self.producers.prune(self.log_start_offset)
            doc = {"end_offset": self._end, **self.producers.to_json()}
            tmp = self.directory / (PRODUCER_SNAPSHOT + ".tmp")
            with open(tmp, "w") as f:
                f.write(json.dumps(doc))
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.directory / PRODUCER_SNAPSHOT)

    def delete(self) -> None:
        """Closes and removes the partition directory (topic deletion)."""
        with self._flush_lock:
            self._closed = True
            for seg in self._view[0]:
                seg.close()
        shutil.rmtree(self.directory, ignore_errors=True)
