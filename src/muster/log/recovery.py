"""Opening a segment log: what a crash left is recovered, never guessed.

The loading half of SegmentLog (a mixin, so the log keeps one set of
attributes): segments are scanned from the last valid index entry (all of
the last segment after an unclean stop), a torn or corrupt tail is cut,
files of an unfinished roll, clean or swap are dropped, and the producer
state comes from the newest usable snapshot plus the batches after it. A
file whose damage cannot be recovered from (log-start-offset.json) refuses
the open with UnreadableLogError instead.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from muster.log.port import UnreadableLogError
from muster.log.segment import Segment, segment_name
from muster.records.batch import CONTROL_MASK
from muster.records.control import control_type

if TYPE_CHECKING:
    from muster.log.config import LogConfig
    from muster.log.producer_state import ProducerStateManager

PRODUCER_SNAPSHOT = "producer-state.json"
# the log start offset DeleteRecords moved into a segment (Kafka's
# log-start-offset-checkpoint), when it is above the first segment's base
START_OFFSET_FILE = "log-start-offset.json"
ROLL_SNAPSHOT = ".snapshot"
TEMP_SUFFIXES = (".cleaned", ".swap", ".deleted", ".tmp")


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


fsync_file = fsync_dir  # the same open-fsync-close


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):  # missing, or torn by a crash
        return None
    return doc if isinstance(doc, dict) else None


class LogRecovery:
    directory: Path
    topic: str
    partition: int
    config: LogConfig
    producers: ProducerStateManager
    recovered_truncations: int
    _view: tuple[tuple[Segment, ...], tuple[int, ...]]
    _dir_version: int
    _end: int
    _flushed: int
    _start_floor: int
    _durable_snapshot: Path | None

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

    def _read_start_floor(self) -> int:
        """The DeleteRecords floor. The file is replaced atomically (fsynced
        temp file, rename), so a crash never tears it: unreadable means the
        disk damaged it, and reading on from 0 would serve deleted records
        again, so the log refuses to open instead."""
        path = self.directory / START_OFFSET_FILE
        if not path.exists():
            return 0
        doc = _read_json(path)
        value = doc.get("log_start_offset") if doc else None
        if not isinstance(value, int) or value < 0:
            raise UnreadableLogError(
                f"{path} is damaged, so the log start of {self.topic}-{self.partition} "
                "(records deleted by DeleteRecords) is unknown. Restore the file, or "
                "delete it to serve the partition from its first segment again."
            )
        return value

    def _load_producer_state(self, segments: list[Segment], clean_shutdown: bool) -> None:
        """From the clean-shutdown snapshot if it matches the log, else from the
        newest readable roll snapshot plus the batches after it (all of them if
        there is none). Keeps one roll snapshot: the one used or the newest."""
        path = self.directory / PRODUCER_SNAPSHOT
        doc = _read_json(path) if clean_shutdown else None
        path.unlink(missing_ok=True)  # stale as soon as anything is appended
        loaded = False
        if doc is not None and doc.get("end_offset") == self._end:
            loaded = self._load_snapshot(doc)
        bases = [seg.base_offset for seg in segments]
        kept: Path | None = None
        replay_from = 0
        removed = False
        for offset, snap in self._roll_snapshots():
            # usable if it sits on a segment boundary of what survived recovery
            usable = offset <= bases[0] or offset in bases or offset == self._end
            if kept is None and usable and offset <= self._end:
                if loaded:
                    kept = snap
                    continue
                doc = _read_json(snap)
                if doc is not None and doc.get("end_offset") == offset and self._load_snapshot(doc):
                    kept, replay_from = snap, offset
                    continue
            snap.unlink()  # past the recovered end, unreadable, or superseded
            removed = True
        if not loaded:
            for seg in segments:
                if seg.base_offset >= replay_from:
                    self._replay(seg)
        self.producers.prune(self.log_start_offset)
        self.producers.settle(self._end)  # what was recovered is on disk
        if kept is not None and not clean_shutdown:
            fsync_file(kept)  # it survived the crash, perhaps only in the page cache
        if removed:
            fsync_dir(self.directory)
        self._durable_snapshot = kept

    def _load_snapshot(self, doc: dict[str, Any]) -> bool:
        try:
            self.producers.load_json(doc)
        except (KeyError, TypeError, ValueError, AttributeError):
            return False  # left empty
        return True

    def _roll_snapshots(self) -> list[tuple[int, Path]]:
        """(offset, path) of the roll snapshots on disk, newest first."""
        found = []
        for path in self.directory.glob("*" + ROLL_SNAPSHOT):
            stem = path.name[: -len(ROLL_SNAPSHOT)]
            if stem.isdigit():
                found.append((int(stem), path))
        return sorted(found, reverse=True)

    def _replay(self, seg: Segment) -> None:
        replay = self.producers.replay
        for h in seg.iter_headers(0):
            if h.producer_id < 0:
                continue
            if h.attributes & CONTROL_MASK:  # a marker: its type is in its one record
                replay(h, control_type(seg.read_range(h.position, h.end)))
            else:
                replay(h)

    def _set_view(self, segments: list[Segment] | tuple[Segment, ...]) -> None:
        self._view = (tuple(segments), tuple(s.base_offset for s in segments))

    def _delete_files(self, bases: list[int]) -> None:
        for base in bases:
            for suffix in (".log", ".index", ".timeindex"):
                (self.directory / segment_name(base, suffix)).unlink(missing_ok=True)
