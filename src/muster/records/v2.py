"""Record batch v2 (magic 2): the one decoder, shared by the broker, the
client and the Spark source.

Layout of one batch (big-endian)::

    0  baseOffset int64          27 baseTimestamp int64
    8  batchLength int32         35 maxTimestamp int64
    12 partitionLeaderEpoch int32  43 producerId int64
    16 magic int8                51 producerEpoch int16
    17 crc uint32 (CRC-32C of bytes 21..end)  53 baseSequence int32
    21 attributes int16          57 recordCount int32
    23 lastOffsetDelta int32     61 records...

and of one record::

    length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
    keyLength varint, key, valueLength varint, value,
    headerCount varint, [headerKeyLength varint, key, headerValueLength varint, value]...

The layers, each user taking the one it needs:

- batch headers only: `iter_batches`, `read_header`, `next_offset_after`
  (the broker's produce/fetch path, the client's answer scan);
- records as tuples: `read_records` (one batch) and `read_batches` (a Fetch
  answer's batches) give each record as the 8-field tuple Kafka's consumer
  sees, `(topic, partition, offset, key, value, headers, timestamp,
  timestamp_type)`, of a tuple class the caller names: the client's
  ConsumerRecord, plain tuples for the coordinator's load
  (`muster.records.latest`) and the broker's `Record`s (`muster.records.batch`);
- columns (the Spark source): the same walk appending each record's fields
  to one list (or `array`) per column (`COLUMNS`), which Arrow then takes
  whole; a gapless batch's offsets go in as one range, not per record. Appending
  to the columns in the walk touches each field once; laying them out flat
  in one list and cutting it with slices afterwards touched every object a
  second time and made the Spark read path 0.83x as fast (bench/decode_cpu.py).

Why one walk with parameters rather than a generator or a callback per
record: the walk is the hot loop of every read path, and a Python call or a
generator resume per record costs about a tenth of the record. Building the
tuple in the loop and appending it with a bound method costs the least; what
is rare (a batch straddling the wanted offsets, LogAppendTime) is fixed up
after the walk instead of checked per record.

Varints: nearly every length and delta fits in one byte, most of the rest in
two; both are read inline with table look-ups (`ZZ`, `ZZ2`). Offset and
timestamp deltas also have an inline three-byte path (offset deltas from
8,192 on, a twelfth of a librdkafka batch, each took a call before);
anything longer goes through `zigzag_decode`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from muster.records import compression
from muster.records.errors import CorruptRecordError

# ---------------------------------------------------------------- batch headers

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
LOG_OVERHEAD = 12  # baseOffset + batchLength: bytes not counted in batchLength
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD  # 49
CRC_START = 21
MAGIC_OFFSET = 16
ATTRIBUTES_OFFSET = 21
MAX_TIMESTAMP_OFFSET = 35
MAGIC = 2

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08  # 0: CreateTime, 1: LogAppendTime
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1


class BatchHeader(NamedTuple):
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int
    position: int  # where the batch starts in the buffer it was read from

    @property
    def size(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def end(self) -> int:
        return self.position + self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        return (self.attributes & TIMESTAMP_TYPE_MASK) >> 3

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def last_sequence(self) -> int:
        if self.base_sequence < 0:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) & 0x7FFFFFFF


_new_header = tuple.__new__  # BatchHeader(*fields) costs ~2x more per batch


def read_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Header of the batch at `pos` (no validation beyond length)."""
    if pos + HEADER_SIZE > len(buf):
        raise CorruptRecordError(f"truncated batch header at position {pos}")
    return _new_header(BatchHeader, (*HEADER.unpack_from(buf, pos), pos))


def iter_batches(
    buf: bytes | bytearray | memoryview, strict: bool = False, start: int = 0
) -> Iterator[BatchHeader]:
    """Headers of consecutive batches; no per-record work, no CRC check.

    A trailing partial batch ends iteration (as in a fetch response), unless
    `strict`, where it raises CorruptRecordError.
    """
    pos, n = start, len(buf)
    unpack = HEADER.unpack_from
    while pos + LOG_OVERHEAD <= n:
        if pos + HEADER_SIZE > n:
            break
        h = _new_header(BatchHeader, (*unpack(buf, pos), pos))
        if h.batch_length < MIN_BATCH_LENGTH:
            raise CorruptRecordError(f"batch length {h.batch_length} at position {pos}")
        end = pos + LOG_OVERHEAD + h.batch_length
        if end > n:
            break
        yield h
        pos = end
    if strict and pos != n:
        raise CorruptRecordError(f"truncated batch at position {pos}")


# baseOffset, batchLength, and (at byte 23) lastOffsetDelta: all a scan needs
_OFFSET_LENGTH = struct.Struct(">qi")
_LAST_DELTA = struct.Struct(">i")
_LAST_DELTA_AT = 23


def next_offset_after(data: bytes, fetch_offset: int) -> int:
    """The offset after the last whole batch of `data` (a trailing partial
    batch, as a Fetch answer may end with, does not count), or `fetch_offset`
    when there is none past it: a few field reads per batch, no BatchHeader.
    Raises CorruptRecordError on a garbled length."""
    next_offset = fetch_offset
    pos, n = 0, len(data)
    unpack, unpack_delta = _OFFSET_LENGTH.unpack_from, _LAST_DELTA.unpack_from
    while pos + HEADER_SIZE <= n:
        base, length = unpack(data, pos)
        if length < MIN_BATCH_LENGTH:
            raise CorruptRecordError(f"length {length} at position {pos}")
        end = pos + LOG_OVERHEAD + length
        if end > n:
            break
        last = base + unpack_delta(data, pos + _LAST_DELTA_AT)[0] + 1
        if last > next_offset:
            next_offset = last
        pos = end
    return next_offset


# ---------------------------------------------------------------- records


def batch_payload(buf: bytes | bytearray | memoryview, header: BatchHeader) -> bytes:
    """The decompressed record bytes of the batch described by `header`."""
    raw = bytes(memoryview(buf)[header.position + HEADER_SIZE : header.end])
    try:
        return compression.decompress(header.compression, raw)
    except compression.CompressionError as exc:
        raise CorruptRecordError(str(exc)) from exc


# zigzag value of every one-byte varint: one list index instead of four
# integer operations, for the fields that are almost always one byte long
ZZ = [(b >> 1) ^ -(b & 1) for b in range(128)]
# and of every two-byte one (first byte b >= 0x80, second b2 < 0x80) at
# b2 * 128 + b: a specialised int multiply and add and a list index instead
# of six generic bit operations (the first 128 entries are never read)
ZZ2 = [((i % 128 | (i // 128 - 1) << 7) >> 1) ^ -(i % 128 & 1) for i in range(128 * 129)]

NO_END = 1 << 63  # past every offset
# the column lists of `cls=None`, in this order; headers may be None (not wanted)
COLUMNS = ("offset", "key", "value", "headers", "timestamp", "timestamp_type")
Headers = tuple[tuple[str, bytes | None], ...]
NO_HEADERS: Headers = ()

_new = tuple.__new__  # cls(*fields) goes through a Python-level __new__ for NamedTuples


def zigzag_decode(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """Reads a zigzag varint/varlong; returns (value, next position)."""
    shift = 0
    raw = 0
    while True:
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if not b & 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
        if shift > 63:
            raise CorruptRecordError("varint too long")


def read_batches(
    out: list[Any],
    data: bytes | memoryview,
    lo: int,
    hi: int = NO_END,
    batches: Iterable[BatchHeader] | None = None,
    cls: type[tuple[Any, ...]] | None = tuple,
    topic: Any = None,
    partition: Any = None,
) -> int:
    """The records with lo <= offset < hi of the whole data batches of `data`
    (a Fetch answer's records), appended to `out` as `read_records` does;
    returns the offset after the last whole batch read, or `lo` when there is
    none past it: the next fetch position, which can exceed the last record's
    offset + 1 (control batches, compaction). Control batches are skipped, and
    reading stops at the first batch starting at or after `hi`. `batches`
    replaces `iter_batches(data)` (read_committed's view of them)."""
    next_offset = lo
    in_place = type(data) is bytes  # uncompressed batches are read where they are
    for header in iter_batches(data) if batches is None else batches:
        base = header[0]
        batch_end = base + header[6] + 1
        if batch_end <= lo:
            continue
        if batch_end > next_offset:
            next_offset = batch_end
        attrs = header[5]
        if attrs & CONTROL_MASK:
            continue
        if base >= hi:
            break
        if attrs & COMPRESSION_MASK == 0 and in_place:
            payload, start, stop = data, header[13] + HEADER_SIZE, header.end
        else:
            payload = batch_payload(data, header)
            start, stop = 0, len(payload)
        read_records(out, header, payload, start, stop, cls, topic, partition, lo, hi)  # type: ignore[arg-type]
    return next_offset


def read_records(
    out: list[Any],
    header: BatchHeader,
    payload: bytes,
    pos: int,
    stop: int,
    cls: type[tuple[Any, ...]] | None = tuple,
    topic: Any = None,
    partition: Any = None,
    lo: int = -1,
    hi: int = NO_END,
    keyed_only: bool = False,
) -> None:
    """Appends the records of the batch `header` describes, whose record bytes
    are `payload[pos:stop]` (the fetched buffer itself for an uncompressed
    batch, read in place), to `out`.

    Each record is `cls((topic, partition, offset, key, value, headers,
    timestamp, timestamp_type))`; with `cls` None, `out` is the six column
    lists of `COLUMNS` and each of its last six fields goes to its own list
    (headers only when that list is not None). Only
    records with lo <= offset < hi are kept; with `keyed_only`, only those
    with a key. A LogAppendTime batch gives every record its max timestamp
    and timestamp type 1. Raises CorruptRecordError (IndexError on a
    truncated payload) when the record lengths do not match their fields or
    overrun `stop`."""
    base, count = header[0], header[12]
    start = len(out[0] if cls is None else out)
    whole = base >= lo and base + header[6] < hi
    # columns of a batch without offset gaps: its record count is its offset
    # span and the deltas strictly increase, so they are 0..count-1; the
    # offset column takes them whole instead of one append per record
    gapless = cls is None and whole and not keyed_only and count == header[6] + 1
    pos = _walk(
        out, payload, pos, count, base, header[7], cls, topic, partition, keyed_only, gapless
    )
    if pos > stop:
        raise CorruptRecordError("records overrun their batch")
    append_ts = header[8] if header[5] & TIMESTAMP_TYPE_MASK else None
    if cls is None:
        if gapless:
            out[0].extend(range(base, base + count))
        _fix_columns(out, start, lo, hi, whole, append_ts)
        return
    if whole and append_ts is None:
        return  # the common case: a whole CreateTime batch
    # rare: a batch straddling the range (the first of a Fetch answer, the
    # last of a Spark range) or a LogAppendTime one, fixed up afterwards so
    # that the walk stays free of per-record checks for them
    if append_ts is None:
        out[start:] = [r for r in out[start:] if lo <= r[2] < hi]
    else:
        out[start:] = [_new(cls, (*r[:6], append_ts, 1)) for r in out[start:] if lo <= r[2] < hi]


def _fix_columns(
    columns: list[Any], start: int, lo: int, hi: int, whole: bool, append_ts: int | None
) -> None:
    """Finishes the rows the walk appended to `columns` from row `start` for
    one batch: drops those outside [lo, hi) unless the batch is `whole`ly
    inside, gives every row `append_ts` for a LogAppendTime batch (the same
    fix-ups as for records as tuples), and fills their timestamp types."""
    offsets, stamps, types = columns[0], columns[4], columns[5]
    # del + extend: the columns may be lists or `array`s
    if not whole:
        keep = [i for i in range(start, len(offsets)) if lo <= offsets[i] < hi]
        if len(keep) != len(offsets) - start:
            for col in columns[:5]:
                if col is not None:
                    kept = [col[i] for i in keep]
                    del col[start:]
                    col.extend(kept)
    n = len(offsets) - start
    # a one-item column of the same kind, repeated: an `array` extends from
    # another as a memory copy, from a list one int conversion at a time
    one = types[:0]
    one.append(0 if append_ts is None else 1)
    types.extend(one * n)
    if append_ts is not None:
        one = stamps[:0]
        one.append(append_ts)
        del stamps[start:]
        stamps.extend(one * n)


def _walk(
    out: list[Any],
    payload: bytes,
    pos: int,
    count: int,
    base: int,
    base_ts: int,
    cls: type[tuple[Any, ...]] | None,
    topic: Any,
    partition: Any,
    keyed_only: bool,
    gapless: bool = False,
) -> int:
    """The record loop of `read_records`; returns the position after the
    last record. Every varint has a one-byte path and most a two-byte path
    (table look-ups) before the general decoder, the deltas a three-byte
    one too. With `gapless` (columns only), the caller fills the offset
    column."""
    append = out.append
    new = _new
    zz, zz2, no_headers = ZZ, ZZ2, NO_HEADERS
    flat = cls is None
    if flat:  # columns: appended to directly, each field touched once
        o_app, k_app, v_app, h_app, t_app = [c.append if c is not None else None for c in out[:5]]
        if gapless:
            o_app = None
        # the common columns (gapless, no headers wanted) take one test a record
        more = o_app is not None or h_app is not None
    for _ in range(count):
        b = payload[pos]
        if b < 0x80:
            record_end = pos + 1 + zz[b]
            pos += 2  # and the record's attributes byte, unused in v2
        else:
            b2 = payload[pos + 1]
            if b2 < 0x80:
                record_end = pos + 2 + zz2[b2 * 128 + b]
                pos += 3
            else:
                length, pos = zigzag_decode(payload, pos)
                record_end = pos + length
                pos += 1
        b = payload[pos]
        if b < 0x80:
            ts = base_ts + zz[b]
            pos += 1
        else:
            b2 = payload[pos + 1]
            if b2 < 0x80:
                ts = base_ts + zz2[b2 * 128 + b]
                pos += 2
            else:
                b3 = payload[pos + 2]
                if b3 < 0x80:  # deltas of minutes in milliseconds
                    raw = (b & 0x7F) | (b2 & 0x7F) << 7 | b3 << 14
                    ts = base_ts + ((raw >> 1) ^ -(raw & 1))
                    pos += 3
                else:
                    ts, pos = zigzag_decode(payload, pos)
                    ts += base_ts
        b = payload[pos]
        if b < 0x80:
            offset = base + zz[b]
            pos += 1
        else:
            b2 = payload[pos + 1]
            if b2 < 0x80:
                offset = base + zz2[b2 * 128 + b]
                pos += 2
            else:
                b3 = payload[pos + 2]
                if b3 < 0x80:  # deltas 8192 up: librdkafka's batches hold ~9,000
                    raw = (b & 0x7F) | (b2 & 0x7F) << 7 | b3 << 14
                    offset = base + ((raw >> 1) ^ -(raw & 1))
                    pos += 3
                else:
                    offset, pos = zigzag_decode(payload, pos)
                    offset += base
        b = payload[pos]
        if b == 1:  # length -1: a null key, the common case
            if keyed_only:
                pos = record_end
                continue
            key = None
            pos += 1
        else:
            if b < 0x80:
                n = zz[b]
                pos += 1
            else:
                n, pos = zigzag_decode(payload, pos)
            if n < 0:
                if keyed_only:
                    pos = record_end
                    continue
                key = None
            else:
                key = payload[pos : pos + n]
                pos += n
        b = payload[pos]
        if b < 0x80:
            n = zz[b]
            pos += 1
        else:
            b2 = payload[pos + 1]
            if b2 < 0x80:
                n = zz2[b2 * 128 + b]
                pos += 2
            else:
                n, pos = zigzag_decode(payload, pos)
        if n < 0:
            value = None
        else:
            value = payload[pos : pos + n]
            pos += n
        if payload[pos] == 0:  # no headers: the common case
            pos += 1
            headers = no_headers
        else:
            headers, pos = read_headers(payload, pos)
        if pos != record_end:
            raise CorruptRecordError("record length does not match its fields")
        if flat:
            k_app(key)
            v_app(value)
            t_app(ts)
            if more:
                if o_app is not None:
                    o_app(offset)
                if h_app is not None:
                    h_app(headers)
        else:
            append(new(cls, (topic, partition, offset, key, value, headers, ts, 0)))
    return pos


def read_headers(payload: bytes, pos: int) -> tuple[Headers, int]:
    """A record's headers (count, then key/value pairs) from `pos`; returns
    them and the position after them. A null header key is corrupt, as in Kafka."""
    count, pos = zigzag_decode(payload, pos)
    items = []
    for _ in range(count):
        n, pos = zigzag_decode(payload, pos)
        if n < 0:
            raise CorruptRecordError("null header key")
        key = payload[pos : pos + n].decode("utf-8")
        pos += n
        n, pos = zigzag_decode(payload, pos)
        value = None if n < 0 else payload[pos : pos + n]
        pos += max(n, 0)
        items.append((key, value))
    return tuple(items), pos
