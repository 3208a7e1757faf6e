"""The last record of each key in a run of record batches (the coordinator's load path).

Loading `__consumer_offsets` at start reads millions of records of which only
the last per key matters. `collect_latest` scans batches straight into the
caller's dict: no per-record objects beyond the key and value slices, the
fields the loader ignores (timestamp delta, headers) are stepped over, and the
one- and two-byte varints that nearly all lengths and deltas fit in are read
inline (a function call per varint was most of the old scanner's time).
"""

from __future__ import annotations

from muster.records import compression
from muster.records.batch import (
    COMPRESSION_MASK,
    CONTROL_MASK,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MIN_BATCH_LENGTH,
    TRANSACTIONAL_MASK,
    zigzag_decode,
)
from muster.records.errors import CorruptRecordError

Latest = dict[bytes, tuple[int, bytes | None]]


class TxnReplay:
    """Records of transactional batches, held per producer until their
    marker: a commit applies them to `latest` (unless a later plain record
    of the key is already there, Kafka's rule by log position), an abort
    drops them. What is left at the end belongs to open transactions."""

    def __init__(self) -> None:
        self.open: dict[int, Latest] = {}

    def end(self, producer_id: int, commit: bool, latest: Latest) -> None:
        pending = self.open.pop(producer_id, None)
        if not pending or not commit:
            return
        for key, entry in pending.items():
            current = latest.get(key)
            if current is None or current[0] < entry[0]:
                latest.pop(key, None)
                latest[key] = entry


    def still_open(self, latest: Latest) -> dict[int, Latest]:
        """The open transactions' records, less those a later tombstone of the
        key deleted (Kafka's replay of a tombstone drops the partition's
        pending transactional offsets too; at a marker the later tombstone
        already wins by log position)."""
        out: dict[int, Latest] = {}
        for producer_id, held in self.open.items():
            out[producer_id] = {
                key: entry for key, entry in held.items() if not _deleted_after(latest, key, entry)
            }
        return out


def _deleted_after(latest: Latest, key: bytes, entry: tuple[int, bytes | None]) -> bool:
    current = latest.get(key)
    return current is not None and current[1] is None and current[0] > entry[0]


def _marker_commits(buf: bytes, pos: int, batch_end: int) -> bool:
    """A control batch's EndTransactionMarker type (its one record's key:
    int16 version, int16 type; 1 = COMMIT)."""
    at = pos + HEADER_SIZE
    try:
        _length, at = zigzag_decode(buf, at)
        _ts_delta, at = zigzag_decode(buf, at + 1)  # after the attributes byte
        _offset_delta, at = zigzag_decode(buf, at)
        key_length, at = zigzag_decode(buf, at)
    except IndexError as exc:
        raise CorruptRecordError("truncated control record") from exc
    if key_length < 4 or at + 4 > batch_end:
        raise CorruptRecordError("control record without a marker key")
    return int.from_bytes(buf[at + 2 : at + 4], "big") == 1


def collect_latest(
    buf: bytes, from_offset: int, latest: Latest, txns: TxnReplay | None = None
) -> int:
    """Records `key -> (offset, value)` for every keyed record at or after
    `from_offset` in the whole batches of `buf`, re-inserting each key so that
    the dict's order is the log order of the last record of each key.

    Control batches (transaction markers) hold no group or offset records and
    are skipped, as Kafka's loader does. Returns the offset after the last
    whole batch (`from_offset` when there is none), so that a caller reading
    chunk by chunk moves past batches whose records were all compacted away.

    With `txns`, transactional batches are held per producer until their
    marker (see TxnReplay); without it they count like any other batch.
    """
    n = len(buf)
    pos = 0
    next_offset = from_offset
    unpack = HEADER.unpack_from
    while pos + HEADER_SIZE <= n:
        (base, length, _e, _m, _c, attributes, last_delta, _t0, _t1, pid, _pe, _s, count) = unpack(
            buf, pos
        )
        if length < MIN_BATCH_LENGTH:
            raise CorruptRecordError(f"batch length {length} at position {pos}")
        batch_end = pos + LOG_OVERHEAD + length
        if batch_end > n:
            break
        if base + last_delta + 1 > next_offset:
            next_offset = base + last_delta + 1
        target = latest
        if txns is not None and attributes & TRANSACTIONAL_MASK:
            if attributes & CONTROL_MASK:
                if base + last_delta >= from_offset:
                    txns.end(pid, _marker_commits(buf, pos, batch_end), latest)
                pos = batch_end
                continue
            target = txns.open.setdefault(pid, {})
        if attributes & CONTROL_MASK or base + last_delta < from_offset:
            pos = batch_end
            continue
        codec = attributes & COMPRESSION_MASK
        if codec:
            try:
                payload = compression.decompress(codec, buf[pos + HEADER_SIZE : batch_end])
            except compression.CompressionError as exc:
                raise CorruptRecordError(str(exc)) from exc
            start, stop = 0, len(payload)
        else:
            # uncompressed: read the records in place instead of copying the batch
            payload, start, stop = buf, pos + HEADER_SIZE, batch_end
        _scan(payload, start, stop, count, base, from_offset, target)
        pos = batch_end
    return next_offset


def _scan(
    p: bytes,
    pos: int,
    stop: int,
    count: int,
    base: int,
    from_offset: int,
    latest: Latest,
) -> None:
    """One batch's records, `p[pos:stop]`. The record length bounds every
    field, so a garbled varint shows up as an overrun of its record."""
    pop = latest.pop
    try:
        for _ in range(count):
            b = p[pos]
            if b < 0x80:
                size = (b >> 1) ^ -(b & 1)
                pos += 1
            elif p[pos + 1] < 0x80:
                raw = (b & 0x7F) | (p[pos + 1] << 7)
                size = (raw >> 1) ^ -(raw & 1)
                pos += 2
            else:
                size, pos = zigzag_decode(p, pos)
            end = pos + size
            if size < 0 or end > stop:
                raise CorruptRecordError("record length overruns the batch")
            # attributes (1 byte), then the timestamp delta, which load ignores
            if p[pos + 1] < 0x80:
                pos += 2
            else:
                _ts, pos = zigzag_decode(p, pos + 1)
            b = p[pos]
            if b < 0x80:
                delta = (b >> 1) ^ -(b & 1)
                pos += 1
            elif p[pos + 1] < 0x80:
                raw = (b & 0x7F) | (p[pos + 1] << 7)
                delta = (raw >> 1) ^ -(raw & 1)
                pos += 2
            else:
                delta, pos = zigzag_decode(p, pos)
            b = p[pos]
            if b < 0x80:
                klen = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                klen, pos = zigzag_decode(p, pos)
            if klen < 0 or base + delta < from_offset:
                pos = end  # keyless records carry no coordinator state
                continue
            kend = pos + klen
            if kend > end:
                raise CorruptRecordError("record key overruns the record")
            key = p[pos:kend]
            b = p[kend]
            if b < 0x80:
                vlen = (b >> 1) ^ -(b & 1)
                pos = kend + 1
            else:
                vlen, pos = zigzag_decode(p, kend)
            if vlen < 0:
                value = None
            else:
                vend = pos + vlen
                if vend > end:
                    raise CorruptRecordError("record value overruns the record")
                value = p[pos:vend]
            pos = end  # headers: skipped through the record length
            pop(key, None)  # re-inserted last: dict order = order of last writes
            latest[key] = (base + delta, value)
    except IndexError as exc:
        raise CorruptRecordError("truncated record") from exc
