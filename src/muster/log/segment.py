"""One log segment: `<base>.log` plus its sparse `.index` and `.timeindex`.

Files use Kafka's layouts: the offset index holds (int32 relative offset of a
batch's last offset, int32 file position of that batch) and the time index
(int64 max timestamp so far, int32 relative offset), both big-endian. An entry
is added before a batch once more than `index.interval.bytes` were appended
since the previous one. The in-memory arrays are the truth while running; the
index files are written on flush/close and are rebuilt by recovery if missing
or inconsistent.
"""

from __future__ import annotations

import os
import struct
import weakref
from array import array
from bisect import bisect_right
from collections.abc import Iterator
from pathlib import Path

from muster.records.batch import (
    CRC_START,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC,
    MIN_BATCH_LENGTH,
    BatchHeader,
)
from muster.records.crc import crc32c

_OFFSET_LEN = struct.Struct(">qi")
_INDEX_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
_SCAN_CHUNK = 4 * 1024 * 1024
_INT32_MAX = 0x7FFFFFFF


def _write_at(path: Path, position: int, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        if position == 0:
            os.ftruncate(fd, 0)
        os.pwrite(fd, data, position)
        os.ftruncate(fd, position + len(data))
    finally:
        os.close(fd)


def segment_name(base_offset: int, suffix: str) -> str:
    return f"{base_offset:020d}{suffix}"


class Segment:
    """Not thread-safe by itself: appends/reads on one thread; `sync` from the
    flush thread under the log's lock only touches fds and counters that the
    appending thread publishes after writing."""

    def __init__(
        self,
        directory: Path,
        base_offset: int,
        index_interval: int,
        log_path: Path | None = None,  # the cleaner opens its `.cleaned` file
    ) -> None:
        self.base_offset = base_offset
        self.directory = directory
        self.log_path = log_path or directory / segment_name(base_offset, ".log")
        self.index_path = directory / segment_name(base_offset, ".index")
        self.timeindex_path = directory / segment_name(base_offset, ".timeindex")
        self.index_interval = index_interval
        self.fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT, 0o644)
        self._finalizer = weakref.finalize(self, os.close, self.fd)
        self.size = os.fstat(self.fd).st_size
        self.flushed_size = 0
        self.next_offset = base_offset  # last offset + 1 of the last batch
        self.idx_offsets = array("q")  # absolute last offset of the indexed batch
        self.idx_positions = array("q")
        self.time_ts = array("q")
        self.time_offsets = array("q")
        self.idx_written = 0  # entries already in the .index file
        self.time_written = 0
        # both index files are known to exist: saves two stat() calls per fsync
        self.index_files_exist = False
        self.bytes_since_index = 0
        self.max_ts = -1
        self.max_ts_offset = -1  # base offset of the batch holding max_ts
        self.rolling_ts = -1  # first batch's max timestamp (segment.ms roll)
        self.created_ms = -1
        self.batches = 0

    # ------------------------------------------------------------ writing

    def append(
        self, data: memoryview | bytes, batches: list[tuple[int, int, int, int, int]]
    ) -> None:
        """Writes a prepared record set; `batches` positions are relative to `data`."""
        start = self.size
        try:
            written = os.pwrite(self.fd, data, start)
            while written < len(data):  # a full disk writes part, then fails
                written += os.pwrite(self.fd, data[written:], start + written)
        except OSError:
            # Whole batches of a refused write must not surface at recovery:
            # cut what reached the file (the caller raises if this fails too).
            os.ftruncate(self.fd, start)
            raise
        for base, nxt, max_ts, pos, size in batches:
            self._track(base, nxt, max_ts, start + pos, size)
        self.size = start + len(data)

    def _track(self, base: int, nxt: int, max_ts: int, position: int, size: int) -> None:
        if self.bytes_since_index > self.index_interval:
            self.idx_offsets.append(nxt - 1)
            self.idx_positions.append(position)
            ts = max(max_ts, self.max_ts)
            if not self.time_ts or ts > self.time_ts[-1]:
                self.time_ts.append(ts)
                self.time_offsets.append(nxt - 1)
            self.bytes_since_index = 0
        self.bytes_since_index += size
        if max_ts > self.max_ts:
            self.max_ts = max_ts
            self.max_ts_offset = base
        if self.batches == 0:
            self.rolling_ts = max_ts
        self.batches += 1
        self.next_offset = nxt

    def fits(self, nbytes: int, last_offset: int, segment_bytes: int) -> bool:
        if self.size == 0:
            return True
        return self.size + nbytes <= segment_bytes and last_offset - self.base_offset <= _INT32_MAX

    def sync(self) -> None:
        """fsync the data written so far and write pending index entries."""
        size = self.size
        if size > self.flushed_size:
            os.fsync(self.fd)
            self.flushed_size = size
        self.write_indexes()

    def write_indexes(self) -> None:
        """Appends index entries not yet in the files (creating missing files)."""
        if (
            self.index_files_exist
            and len(self.idx_offsets) == self.idx_written
            and len(self.time_ts) == self.time_written
        ):
            return
        base = self.base_offset
        # The flusher thread runs this while the loop thread may be between the two
        # appends of one entry (`_track`): only whole entries are written.
        n = min(len(self.idx_offsets), len(self.idx_positions))
        if n > self.idx_written or not self.index_path.exists():
            rows = b"".join(
                _INDEX_ENTRY.pack(self.idx_offsets[i] - base, self.idx_positions[i])
                for i in range(self.idx_written, n)
            )
            _write_at(self.index_path, self.idx_written * _INDEX_ENTRY.size, rows)
            self.idx_written = n
        n = min(len(self.time_ts), len(self.time_offsets))
        if n > self.time_written or not self.timeindex_path.exists():
            rows = b"".join(
                _TIME_ENTRY.pack(self.time_ts[i], self.time_offsets[i] - base)
                for i in range(self.time_written, n)
            )
            _write_at(self.timeindex_path, self.time_written * _TIME_ENTRY.size, rows)
            self.time_written = n
        self.index_files_exist = True

    # ------------------------------------------------------------ reading

    def position_for(self, offset: int) -> int:
        """File position to start scanning for `offset` (index lookup)."""
        i = bisect_right(self.idx_offsets, offset) - 1
        return self.idx_positions[i] if i >= 0 else 0

    def find(self, offset: int) -> tuple[int, int, int] | None:
        """(position, base offset, batch length) of the first batch whose last
        offset >= offset, or None."""
        pos = self.position_for(offset)
        size = self.size
        fd = self.fd
        unpack = _OFFSET_LEN.unpack_from
        while pos + HEADER_SIZE <= size:
            head = os.pread(fd, 27, pos)
            base, length = unpack(head)
            (delta,) = struct.unpack_from(">i", head, 23)
            if base + delta >= offset:
                return pos, base, length
            pos += LOG_OVERHEAD + length
        return None

    def read(self, offset: int, max_bytes: int, upper: int | None) -> bytes:
        found = self.find(offset)
        if found is None:
            return b""
        pos, base, length = found
        if upper is not None and base >= upper:
            return b""
        size = self.size
        first = LOG_OVERHEAD + length
        if first >= max_bytes:
            return os.pread(self.fd, first, pos)  # KIP-74: at least one batch
        data = os.pread(self.fd, min(max_bytes, size - pos), pos)
        n = len(data)
        end = first
        unpack = _OFFSET_LEN.unpack_from
        while end + LOG_OVERHEAD <= n:
            base, length = unpack(data, end)
            nxt = end + LOG_OVERHEAD + length
            if nxt > n or (upper is not None and base >= upper):
                break
            end = nxt
        return data if end == n else data[:end]

    def iter_headers(self, start: int = 0) -> Iterator[BatchHeader]:
        """Headers of the stored batches from `start` (one pread per batch)."""
        pos, size = start, self.size
        while pos + HEADER_SIZE <= size:
            h = BatchHeader(*HEADER.unpack_from(os.pread(self.fd, HEADER_SIZE, pos)), pos)
            yield h
            pos += LOG_OVERHEAD + h.batch_length

    def read_range(self, start: int, end: int) -> bytes:
        return os.pread(self.fd, end - start, start)

    # ------------------------------------------------------------ recovery

    def reset_indexes(self) -> None:
        for arr in (self.idx_offsets, self.idx_positions, self.time_ts, self.time_offsets):
            del arr[:]
        self.idx_written = self.time_written = 0
        self.index_files_exist = False
        self.bytes_since_index = 0
        self.max_ts = self.max_ts_offset = self.rolling_ts = -1
        self.batches = 0
        self.next_offset = self.base_offset

    def load_indexes(self) -> bool:
        """Loads .index/.timeindex; False if missing or inconsistent."""
        try:
            raw = self.index_path.read_bytes()
            traw = self.timeindex_path.read_bytes()
        except FileNotFoundError:
            return False
        if len(raw) % _INDEX_ENTRY.size or len(traw) % _TIME_ENTRY.size:
            return False
        base, size = self.base_offset, self.size
        offs, poss = array("q"), array("q")
        prev_off, prev_pos = -1, -1
        for rel, pos in _INDEX_ENTRY.iter_unpack(raw):
            off = base + rel
            if rel < 0 or off <= prev_off or pos <= prev_pos or pos + HEADER_SIZE > size:
                return False
            offs.append(off)
            poss.append(pos)
            prev_off, prev_pos = off, pos
        tss, toffs = array("q"), array("q")
        prev_ts = -(1 << 63)
        for ts, rel in _TIME_ENTRY.iter_unpack(traw):
            if ts <= prev_ts or rel < 0:
                return False
            tss.append(ts)
            toffs.append(base + rel)
            prev_ts = ts
        if offs:  # the last entry must point at the batch it names
            h = BatchHeader(*HEADER.unpack_from(os.pread(self.fd, HEADER_SIZE, poss[-1])), 0)
            if h.magic != MAGIC or h.base_offset + h.last_offset_delta != offs[-1]:
                return False
            if toffs and toffs[-1] > offs[-1] + (1 << 31):
                return False
        self.idx_offsets, self.idx_positions = offs, poss
        self.time_ts, self.time_offsets = tss, toffs
        self.idx_written, self.time_written = len(offs), len(tss)
        return True

    def recover(self, start: int, check_crc: bool) -> tuple[int, list[BatchHeader]]:
        """Scans batches from `start` (a batch boundary whose state is already
        tracked), validating lengths, magic and (optionally) CRCs, and tracks
        them. Returns (valid end position, headers scanned)."""
        size = self.size
        pos = start
        headers: list[BatchHeader] = []
        expected_base: int | None = None
        buf = b""
        buf_start = pos
        while pos + HEADER_SIZE <= size:
            rel = pos - buf_start
            if rel + HEADER_SIZE > len(buf):
                buf = os.pread(self.fd, min(_SCAN_CHUNK, size - pos), pos)
                buf_start, rel = pos, 0
                if len(buf) < HEADER_SIZE:
                    break
            h = BatchHeader(*HEADER.unpack_from(buf, rel), pos)
            if (
                h.magic != MAGIC
                or h.batch_length < MIN_BATCH_LENGTH
                or h.last_offset_delta < 0
                or h.base_offset < self.base_offset
                or (expected_base is not None and h.base_offset < expected_base)
            ):
                break
            end = pos + LOG_OVERHEAD + h.batch_length
            if end > size:
                break
            if check_crc:
                if rel + LOG_OVERHEAD + h.batch_length > len(buf):
                    buf = os.pread(self.fd, max(min(_SCAN_CHUNK, size - pos), end - pos), pos)
                    buf_start, rel = pos, 0
                    if len(buf) < end - pos:
                        break
                view = memoryview(buf)
                if crc32c(view[rel + CRC_START : rel + LOG_OVERHEAD + h.batch_length]) != h.crc:
                    break
            self._track(h.base_offset, h.next_offset, h.max_timestamp, pos, end - pos)
            headers.append(h)
            expected_base = h.next_offset
            pos = end
        return pos, headers

    def truncate_to(self, position: int) -> None:
        """Cuts a torn/corrupt tail; index entries at or past it are dropped and
        the index files rewritten on the next sync."""
        os.ftruncate(self.fd, position)
        os.fsync(self.fd)
        self.size = position
        self.flushed_size = min(self.flushed_size, position)
        keep = bisect_right(self.idx_positions, position - 1)
        del self.idx_offsets[keep:]
        del self.idx_positions[keep:]
        last = self.idx_offsets[-1] if keep else self.base_offset - 1
        tkeep = bisect_right(self.time_offsets, last)
        del self.time_ts[tkeep:]
        del self.time_offsets[tkeep:]
        self.drop_index_files()

    def drop_index_files(self) -> None:
        self.index_path.unlink(missing_ok=True)
        self.timeindex_path.unlink(missing_ok=True)
        self.idx_written = self.time_written = 0
        self.index_files_exist = False

    # ------------------------------------------------------------ lifecycle

    def close(self) -> None:
        self._finalizer()

    def delete(self) -> None:
        for path in (self.log_path, self.index_path, self.timeindex_path):
            path.unlink(missing_ok=True)
