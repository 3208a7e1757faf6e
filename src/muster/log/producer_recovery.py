"""Producer state across restarts, for SegmentLog: snapshots at each roll and at
clean shutdown, and the replay of the batches after the newest usable one.

A mixin: it reads and writes the log's own fields (`directory`, `producers`,
`_end`, `_unsynced_snapshots`, `_durable_snapshot`), so that recovery of the
producer state reads as one piece beside the segment bookkeeping.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from muster.log.files import fsync_dir, fsync_file, read_json
from muster.log.segment import Segment, segment_name
from muster.records.batch import CONTROL_MASK
from muster.records.control import control_type

if TYPE_CHECKING:
    from muster.log.producer_state import ProducerStateManager

PRODUCER_SNAPSHOT = "producer-state.json"
ROLL_SNAPSHOT = ".snapshot"


class ProducerRecovery:
    directory: Path
    producers: ProducerStateManager
    _end: int
    _unsynced_snapshots: list[Path]
    _durable_snapshot: Path | None

    @property
    def log_start_offset(self) -> int:  # provided by SegmentLog
        raise NotImplementedError

    def _load_producer_state(self, segments: list[Segment], clean_shutdown: bool) -> None:
        """From the clean-shutdown snapshot if it matches the log, else from the
        newest readable roll snapshot plus the batches after it (all of them if
        there is none). Keeps one roll snapshot: the one used or the newest."""
        path = self.directory / PRODUCER_SNAPSHOT
        doc = read_json(path) if clean_shutdown else None
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
                doc = read_json(snap)
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

    def _write_roll_snapshot(self, offset: int) -> None:
        """Producer state as of `offset` (everything before it is appended)."""
        self.producers.prune(self.log_start_offset)
        path = self.directory / segment_name(offset, ROLL_SNAPSHOT)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps({"end_offset": offset, **self.producers.to_json()}))
        os.replace(tmp, path)
        self._unsynced_snapshots.append(path)
