"""The last record of each key in a run of record batches (the coordinator's load path).

Loading `__consumer_offsets` at start reads millions of records of which only
the last per key matters. `collect_latest` scans batches straight into the
caller's dict: no per-record objects beyond the key and value slices, the
fields the loader ignores (timestamp delta, headers) are stepped over, and the
one- and two-byte varints that nearly all lengths and deltas fit in are read
inline (a function call per varint was most of the old scanner's time).
"""

from __future__ import annotations

from muster.log.port import CorruptRecordError
from muster.records import compression
from muster.records.batch import (
    COMPRESSION_MASK,
    CONTROL_MASK,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MIN_BATCH_LENGTH,
    zigzag_decode,
)

Latest = dict[bytes, tuple[int, bytes | None]]


def collect_latest(buf: bytes, from_offset: int, latest: Latest) -> int:
    """Records `key -> (offset, value)` for every keyed record at or after
    `from_offset` in the whole batches of `buf`, re-inserting each key so that
    the dict's order is the log order of the last record of each key.

    Control batches (transaction markers) hold no group or offset records and
    are skipped, as Kafka's loader does. Returns the offset after the last
    whole batch (`from_offset` when there is none), so that a caller reading
    chunk by chunk moves past batches whose records were all compacted away.
    """
    n = len(buf)
    pos = 0
    next_offset = from_offset
    unpack = HEADER.unpack_from
    while pos + HEADER_SIZE <= n:
        (base, length, _e, _m, _c, attributes, last_delta, _t0, _t1, _p, _pe, _s, count) = unpack(
            buf, pos
        )
        if length < MIN_BATCH_LENGTH:
            raise CorruptRecordError(f"batch length {length} at position {pos}")
        batch_end = pos + LOG_OVERHEAD + length
        if batch_end > n:
            break
        if base + last_delta + 1 > next_offset:
            next_offset = base + last_delta + 1
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
        _scan(payload, start, stop, count, base, from_offset, latest)
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
