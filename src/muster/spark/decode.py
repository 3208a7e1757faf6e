"""Record batches (v2, as a Fetch answer carries them) straight into one Arrow
record batch of the source's schema.

One pass per Kafka batch fills plain column lists / typed arrays; Arrow builds
each column in C from them. Topic, partition and timestamp type are constant
per batch and never materialised per record in Python. Control batches
(transaction markers) and records outside [start, end) are skipped; for
read_committed, so are the records of the aborted transactions a Fetch answer
lists (Kafka's Java consumer's rule, `committed_batches`), only ever looked at
when it lists some.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable

import pyarrow as pa
import pyarrow.compute as pc

from muster.client.core.decode import Aborted, committed_batches
from muster.records.batch import (
    COMPRESSION_MASK,
    CONTROL_MASK,
    HEADER_SIZE,
    TIMESTAMP_TYPE_MASK,
    batch_payload,
    iter_batches,
    zigzag_decode,
)
from muster.records.errors import CorruptRecordError
from muster.spark.schema import arrow_schema

_TS_US = pa.timestamp("us", tz="UTC")


class CorruptBatchError(ValueError):
    """A fetched record batch that does not decode."""


class Columns:
    """Column buffers for one Arrow record batch of one topic-partition."""

    __slots__ = ("headers", "keys", "offsets", "stamps", "types", "values", "with_headers")

    def __init__(self, with_headers: bool) -> None:
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.offsets = array("q")
        self.stamps = array("q")  # milliseconds
        self.types = array("i")
        self.headers: list[list[tuple[str, bytes | None]] | None] = []
        self.with_headers = with_headers

    def __len__(self) -> int:
        return len(self.offsets)

    def to_arrow(self, topic: str, partition: int) -> pa.RecordBatch:
        n = len(self.offsets)
        offsets = pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(self.offsets)])
        stamps = pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(self.stamps)])
        micros = pc.multiply(stamps, 1000).cast(_TS_US)
        arrays: list[pa.Array] = [
            pa.array(self.keys, pa.binary()),
            pa.array(self.values, pa.binary()),
            pa.repeat(pa.scalar(topic, pa.string()), n),
            pa.repeat(pa.scalar(partition, pa.int32()), n),
            offsets,
            micros,
            pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(self.types)]),
        ]
        schema = arrow_schema(self.with_headers)
        if self.with_headers:
            arrays.append(pa.array(self.headers, schema.field("headers").type))
        return pa.RecordBatch.from_arrays(arrays, schema=schema)


def decode_into(
    cols: Columns,
    data: bytes | memoryview,
    start: int,
    end: int,
    aborted: Iterable[Aborted] | None = None,
) -> int:
    """Appends the records of `data` with start <= offset < end to `cols`,
    less those of `aborted` transactions (read_committed: the (producer id,
    first offset) pairs its Fetch answer listed); returns the offset after the
    last whole batch in `data` (the next fetch position), which can exceed the
    last record's offset + 1 (control batches, aborted batches, compaction)."""
    next_offset = start
    try:
        batches = committed_batches(data, aborted) if aborted else iter_batches(data)
        for header in batches:
            batch_end = header.base_offset + header.last_offset_delta + 1
            if batch_end <= start:
                continue
            if batch_end > next_offset:
                next_offset = batch_end
            attrs = header.attributes
            if attrs & CONTROL_MASK:
                continue
            if header.base_offset >= end:
                break
            if attrs & COMPRESSION_MASK == 0 and type(data) is bytes:
                payload: bytes = data  # read in place: no copy of the batch
                pos = header.position + HEADER_SIZE
            else:
                payload = batch_payload(data, header)
                pos = 0
            log_append = 1 if attrs & TIMESTAMP_TYPE_MASK else 0
            count = header.record_count
            if (
                not log_append
                and not cols.with_headers
                and count == header.last_offset_delta + 1
                and header.base_offset >= start
                and batch_end <= end
            ):
                _decode_whole_batch(cols, payload, pos, count, header.base_timestamp)
                cols.offsets.extend(range(header.base_offset, batch_end))
                cols.types.extend(array("i", [0]) * count)
                continue
            _decode_batch(
                cols,
                payload,
                pos,
                header.record_count,
                header.base_offset,
                header.base_timestamp,
                header.max_timestamp if log_append else None,
                log_append,
                start,
                end,
            )
    except (IndexError, ValueError, UnicodeDecodeError, CorruptRecordError) as exc:
        raise CorruptBatchError(f"corrupt record batch: {exc}") from exc
    return next_offset


def _decode_batch(
    cols: Columns,
    payload: bytes,
    pos: int,
    count: int,
    base: int,
    base_ts: int,
    append_ts: int | None,
    ts_type: int,
    start: int,
    end: int,
) -> None:
    """Any batch: partly inside [start, end), LogAppendTime, headers wanted.
    Varints are read inline with one- and two-byte fast paths (three for
    timestamp deltas): record lengths and value sizes of a few hundred bytes
    and millisecond deltas of minutes would otherwise all pay a call."""
    keys_append = cols.keys.append
    values_append = cols.values.append
    offsets_append = cols.offsets.append
    stamps_append = cols.stamps.append
    headers_append = cols.headers.append if cols.with_headers else None
    added = 0
    for _ in range(count):
        b = payload[pos]
        if b < 0x80:
            length = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            b2 = payload[pos + 1]
            if b2 < 0x80:
                raw = (b & 0x7F) | (b2 << 7)
                length = (raw >> 1) ^ -(raw & 1)
                pos += 2
            else:
                length, pos = zigzag_decode(payload, pos)
        record_end = pos + length
        pos += 1  # record attributes
        b = payload[pos]
        if b < 0x80:
            ts_delta = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            b2 = payload[pos + 1]
            if b2 < 0x80:
                raw = (b & 0x7F) | (b2 << 7)
                ts_delta = (raw >> 1) ^ -(raw & 1)
                pos += 2
            else:
                b3 = payload[pos + 2]
                if b3 < 0x80:
                    raw = (b & 0x7F) | ((b2 & 0x7F) << 7) | (b3 << 14)
                    ts_delta = (raw >> 1) ^ -(raw & 1)
                    pos += 3
                else:
                    ts_delta, pos = zigzag_decode(payload, pos)
        b = payload[pos]
        if b < 0x80:
            offset = base + ((b >> 1) ^ -(b & 1))
            pos += 1
        else:
            b2 = payload[pos + 1]
            if b2 < 0x80:
                raw = (b & 0x7F) | (b2 << 7)
                offset = base + ((raw >> 1) ^ -(raw & 1))
                pos += 2
            else:
                delta, pos = zigzag_decode(payload, pos)
                offset = base + delta
        if offset < start or offset >= end:
            pos = record_end
            continue
        b = payload[pos]
        if b < 0x80:
            n = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            n, pos = zigzag_decode(payload, pos)
        if n < 0:
            keys_append(None)
        else:
            keys_append(payload[pos : pos + n])
            pos += n
        b = payload[pos]
        if b < 0x80:
            n = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            b2 = payload[pos + 1]
            if b2 < 0x80:
                raw = (b & 0x7F) | (b2 << 7)
                n = (raw >> 1) ^ -(raw & 1)
                pos += 2
            else:
                n, pos = zigzag_decode(payload, pos)
        if n < 0:
            values_append(None)
        else:
            values_append(payload[pos : pos + n])
            pos += n
        if headers_append is not None:
            headers_append(_headers(payload, pos))
        offsets_append(offset)
        stamps_append(append_ts if append_ts is not None else base_ts + ts_delta)
        added += 1
        pos = record_end
    if pos > len(payload):
        raise ValueError("records overrun their batch")
    if added:
        cols.types.extend(array("i", [ts_type]) * added)


def _decode_whole_batch(cols: Columns, payload: bytes, pos: int, count: int, base_ts: int) -> None:
    """The common case, taken apart from `_decode_batch` because it is most of
    the work: a CreateTime batch wholly inside the range, offsets without gaps
    (so they are `range(base, end)`), no headers wanted (skipped via the record
    length)."""
    keys_append = cols.keys.append
    values_append = cols.values.append
    stamps_append = cols.stamps.append
    for _ in range(count):
        b = payload[pos]
        if b < 0x80:
            length = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            b2 = payload[pos + 1]
            if b2 < 0x80:
                raw = (b & 0x7F) | (b2 << 7)
                length = (raw >> 1) ^ -(raw & 1)
                pos += 2
            else:
                length, pos = zigzag_decode(payload, pos)
        record_end = pos + length
        pos += 1  # record attributes
        b = payload[pos]
        if b < 0x80:
            delta = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            b2 = payload[pos + 1]
            if b2 < 0x80:
                raw = (b & 0x7F) | (b2 << 7)
                delta = (raw >> 1) ^ -(raw & 1)
                pos += 2
            else:
                delta, pos = zigzag_decode(payload, pos)
        stamps_append(base_ts + delta)
        # the offset delta: known from the batch header, only skipped
        while payload[pos] & 0x80:
            pos += 1
        pos += 1
        b = payload[pos]
        if b < 0x80:
            n = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            n, pos = zigzag_decode(payload, pos)
        if n < 0:
            keys_append(None)
        else:
            keys_append(payload[pos : pos + n])
            pos += n
        b = payload[pos]
        if b < 0x80:
            n = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            b2 = payload[pos + 1]
            if b2 < 0x80:
                raw = (b & 0x7F) | (b2 << 7)
                n = (raw >> 1) ^ -(raw & 1)
                pos += 2
            else:
                n, pos = zigzag_decode(payload, pos)
        values_append(None if n < 0 else payload[pos : pos + n])
        pos = record_end
    if pos > len(payload):
        raise ValueError("records overrun their batch")


def _headers(payload: bytes, pos: int) -> list[tuple[str, bytes | None]] | None:
    """A record's headers, or None when it has none (as Spark's Kafka source)."""
    count, pos = zigzag_decode(payload, pos)
    if count <= 0:
        return None
    items: list[tuple[str, bytes | None]] = []
    for _ in range(count):
        n, pos = zigzag_decode(payload, pos)
        key = payload[pos : pos + n].decode("utf-8")
        pos += n
        n, pos = zigzag_decode(payload, pos)
        items.append((key, None if n < 0 else payload[pos : pos + n]))
        pos += max(n, 0)
    return items
