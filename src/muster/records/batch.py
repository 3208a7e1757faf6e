"""Kafka record batch v2 (magic 2): validation, header rewrites, records as
`Record` objects, the builder.

The layout and the one decoder (batch headers, varints, the record walk) are
`muster.records.v2`; its header names are re-exported here for the many
importers. The produce/fetch path only touches headers (`iter_batches`,
`validate_batches`, `set_base_offset`); `decode_batch` and `build_batch` are
for the compaction cleaner, ListOffsets-by-timestamp and tests.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from muster.records import compression
from muster.records.crc import crc32c
from muster.records.errors import CorruptRecordError, InvalidRecordError, RecordTooLargeError
from muster.records.v2 import (
    ATTRIBUTES_OFFSET,
    COMPRESSION_MASK,
    CONTROL_MASK,
    CRC_START,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC,
    MAGIC_OFFSET,
    MAX_TIMESTAMP_OFFSET,
    MIN_BATCH_LENGTH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    BatchHeader,
    batch_payload,
    iter_batches,
    read_header,
    read_records,
    zigzag_decode,
)

__all__ = [
    "ATTRIBUTES_OFFSET",
    "COMPRESSION_MASK",
    "CONTROL_MASK",
    "CRC_START",
    "HEADER",
    "HEADER_SIZE",
    "LOG_OVERHEAD",
    "MAGIC",
    "MAGIC_OFFSET",
    "MAX_TIMESTAMP_OFFSET",
    "MIN_BATCH_LENGTH",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "TIMESTAMP_TYPE_MASK",
    "TRANSACTIONAL_MASK",
    "BatchHeader",
    "Record",
    "assign_offsets",
    "batch_payload",
    "build_batch",
    "crc_ok",
    "decode_batch",
    "decode_records",
    "encode_record",
    "iter_batches",
    "iter_records",
    "read_header",
    "set_base_offset",
    "set_log_append_time",
    "validate",
    "validate_batches",
    "zigzag_decode",
    "zigzag_encode",
]

_new_header = tuple.__new__  # BatchHeader(*fields) costs ~2x more per batch

_INT64 = struct.Struct(">q")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")


def crc_ok(buf: bytes | bytearray | memoryview, header: BatchHeader) -> bool:
    view = buf if isinstance(buf, memoryview) else memoryview(buf)
    return crc32c(view[header.position + CRC_START : header.end]) == header.crc


def validate_batches(
    buf: bytes | bytearray | memoryview,
    max_batch_bytes: int | None = None,
    unsequenced_ok: bool = False,
) -> list[BatchHeader]:
    """Checks a produce request's record set: whole magic-2 batches, CRC, sizes.

    Raises CorruptRecordError (garbled, truncated or CRC mismatch),
    InvalidRecordError (wrong magic, empty batch, bad sequence fields) or
    RecordTooLargeError (a batch above max_batch_bytes).
    """
    view = memoryview(buf)
    n = len(view)
    if n == 0:
        raise CorruptRecordError("empty record set")
    out: list[BatchHeader] = []
    pos = 0
    unpack = HEADER.unpack_from
    while pos < n:
        if pos + HEADER_SIZE > n:
            raise CorruptRecordError(f"truncated batch header at position {pos}")
        h = _new_header(BatchHeader, (*unpack(view, pos), pos))
        length = h[1]
        if length < MIN_BATCH_LENGTH:  # before the magic, as Kafka checks them
            raise CorruptRecordError(f"batch length {length} at position {pos}")
        if h[3] != MAGIC:
            raise InvalidRecordError(f"record batch magic {h.magic} is not supported (need 2)")
        end = pos + LOG_OVERHEAD + length
        if end > n:
            raise CorruptRecordError(f"truncated batch at position {pos}")
        if max_batch_bytes is not None and length + LOG_OVERHEAD > max_batch_bytes:
            raise RecordTooLargeError(
                f"batch of {length + LOG_OVERHEAD} bytes exceeds {max_batch_bytes}"
            )
        if crc32c(view[pos + CRC_START : end]) != h[4]:
            raise CorruptRecordError(f"CRC mismatch in batch at position {pos}")
        if h[12] <= 0 or h[6] < 0:
            raise InvalidRecordError("record batch has no records")
        if h[9] >= 0 and h[11] < 0 and not h[5] & CONTROL_MASK and not unsequenced_ok:
            raise InvalidRecordError("idempotent batch without a base sequence")
        out.append(h)
        pos = end
    return out


def set_base_offset(buf: bytearray | memoryview, pos: int, base_offset: int) -> None:
    """Rewrites the base offset in place; the CRC does not cover it."""
    _INT64.pack_into(buf, pos, base_offset)


def assign_offsets(buf: bytearray | memoryview, first_offset: int) -> int:
    """Gives the batches in `buf` consecutive offsets from `first_offset` (in
    place, header-only); returns the next offset."""
    offset = first_offset
    for h in iter_batches(buf, strict=True):
        _INT64.pack_into(buf, h.position, offset)
        offset += h.last_offset_delta + 1
    return offset


validate = validate_batches


def set_log_append_time(buf: bytearray | memoryview, header: BatchHeader, now_ms: int) -> None:
    """Marks the batch LogAppendTime with maxTimestamp=now and refreshes the CRC."""
    pos = header.position
    _INT16.pack_into(buf, pos + ATTRIBUTES_OFFSET, header.attributes | TIMESTAMP_TYPE_MASK)
    _INT64.pack_into(buf, pos + MAX_TIMESTAMP_OFFSET, now_ms)
    view = memoryview(buf)
    _UINT32.pack_into(buf, pos + 17, crc32c(view[pos + CRC_START : header.end]))


# ---------------------------------------------------------------- varints


def zigzag_encode(value: int, out: bytearray) -> None:
    if 0 <= value < 0x40:  # one byte: most deltas and lengths of small records
        out.append(value << 1)
        return
    raw = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)


# ---------------------------------------------------------------- records


@dataclass(slots=True)
class Record:
    key: bytes | None
    value: bytes | None
    headers: Sequence[tuple[str, bytes | None]] = field(default_factory=tuple)
    timestamp: int | None = None  # absolute ms; builder default when None
    offset: int | None = None  # absolute offset; sequential when None
    attributes: int = 0


def decode_records(header: BatchHeader, payload: bytes) -> list[Record]:
    """Records of one batch from its (decompressed) record bytes."""
    raw: list[tuple[object, ...]] = []
    try:
        read_records(raw, header, payload, 0, len(payload))
        attributes = _record_attributes(payload, len(raw))
    except (IndexError, UnicodeDecodeError) as exc:
        raise CorruptRecordError(f"garbled record: {exc}") from exc
    return [
        Record(key, value, list(headers), timestamp, offset, attrs)
        for (_t, _p, offset, key, value, headers, timestamp, _k), attrs in zip(
            raw, attributes, strict=True
        )
    ]


def _record_attributes(payload: bytes, count: int) -> list[int]:
    """Each record's attributes byte: unused in v2 (the decoder steps over
    it), but a rewrite by the cleaner keeps what the producer wrote."""
    out = []
    pos = 0
    for _ in range(count):
        length, pos = zigzag_decode(payload, pos)
        out.append(payload[pos])
        pos += length
    return out


def decode_batch(
    buf: bytes | bytearray | memoryview, pos: int = 0
) -> tuple[BatchHeader, list[Record]]:
    header = read_header(buf, pos)
    if header.end > len(buf):
        raise CorruptRecordError("truncated batch")
    return header, decode_records(header, batch_payload(buf, header))


def iter_records(buf: bytes | bytearray | memoryview) -> Iterator[Record]:
    """Every record of every whole batch in `buf` (tests, tools, the cleaner)."""
    for header in iter_batches(buf):
        yield from decode_records(header, batch_payload(buf, header))


# ---------------------------------------------------------------- builder


def _write_bytes(value: bytes | None, out: bytearray) -> None:
    if value is None:
        out.append(1)  # zigzag(-1)
    else:
        zigzag_encode(len(value), out)
        out += value


def encode_record(
    out: bytearray,
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Iterable[tuple[str, bytes | None]] = (),
    attributes: int = 0,
) -> None:
    body = bytearray((attributes & 0xFF,))
    zigzag_encode(timestamp_delta, body)
    zigzag_encode(offset_delta, body)
    _write_bytes(key, body)
    _write_bytes(value, body)
    if not headers:
        body.append(0)  # zigzag(0): no headers
    else:
        headers = list(headers)
        zigzag_encode(len(headers), body)
        for hkey, hval in headers:
            _write_bytes(hkey.encode("utf-8"), body)
            _write_bytes(hval, body)
    zigzag_encode(len(body), out)
    out += body


def build_one(key: bytes | None, value: bytes | None, timestamp_ms: int) -> bytes:
    """`build_batch([(key, value)], timestamp_ms=timestamp_ms)`'s bytes: the one
    record of a sync commit, written without the general builder's choices
    (a third of its CPU; tests/records/test_build_batch_pairs.py)."""
    # attributes 0, timestamp delta 0, offset delta 0
    record = bytearray(b"\x00\x00\x00")
    _write_bytes(key, record)
    _write_bytes(value, record)
    record.append(0)  # no headers
    out = bytearray(HEADER_SIZE)
    zigzag_encode(len(record), out)
    out += record
    HEADER.pack_into(
        out,
        0,
        0,
        len(out) - LOG_OVERHEAD,
        -1,
        MAGIC,
        0,
        0,
        0,
        timestamp_ms,
        timestamp_ms,
        NO_PRODUCER_ID,
        NO_PRODUCER_EPOCH,
        NO_SEQUENCE,
        1,
    )
    _UINT32.pack_into(out, 17, crc32c(memoryview(out)[CRC_START:]))
    return bytes(out)


def build_batch(
    records: Sequence[Record | tuple[bytes | None, bytes | None]],
    *,
    base_offset: int = 0,
    timestamp_ms: int = 0,
    compression_type: int = compression.NONE,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    transactional: bool = False,
    control: bool = False,
    log_append_time: bool = False,
    partition_leader_epoch: int = -1,
    last_offset_delta: int | None = None,
    base_timestamp: int | None = None,
    max_timestamp: int | None = None,
) -> bytes:
    """Encodes one v2 batch with a correct CRC.

    Records may carry absolute offsets (kept relative to `base_offset`, as the
    cleaner needs) and timestamps; missing ones are sequential / timestamp_ms.
    `last_offset_delta`, `base_timestamp` and `max_timestamp` override the
    derived header fields (the cleaner keeps the original batch's values).
    """
    payload = bytearray()
    count = len(records)
    if all(type(r) is tuple for r in records):
        # (key, value) pairs, as the coordinators write them (one per sync
        # commit): sequential offsets, one timestamp, no Record objects
        first_ts = base_timestamp if base_timestamp is not None else timestamp_ms
        for delta, (key, value) in enumerate(records):  # type: ignore[misc]
            encode_record(payload, delta, timestamp_ms - first_ts, key, value)
        top_offset, top_ts = max(count - 1, 0), timestamp_ms if count else first_ts
    else:
        recs = [r if isinstance(r, Record) else Record(r[0], r[1]) for r in records]
        offsets = [
            (r.offset - base_offset) if r.offset is not None else i for i, r in enumerate(recs)
        ]
        stamps = [r.timestamp if r.timestamp is not None else timestamp_ms for r in recs]
        first_ts = min(stamps, default=timestamp_ms) if base_timestamp is None else base_timestamp
        for r, off, ts in zip(recs, offsets, stamps, strict=True):
            encode_record(payload, off, ts - first_ts, r.key, r.value, r.headers, r.attributes)
        top_offset, top_ts = max(offsets, default=0), max(stamps, default=first_ts)
    body = compression.compress(compression_type, payload)
    attributes = compression_type & COMPRESSION_MASK
    if log_append_time:
        attributes |= TIMESTAMP_TYPE_MASK
    if transactional:
        attributes |= TRANSACTIONAL_MASK
    if control:
        attributes |= CONTROL_MASK
    if last_offset_delta is None:
        last_offset_delta = top_offset
    if max_timestamp is None:
        max_timestamp = top_ts
    out = bytearray(HEADER_SIZE)
    HEADER.pack_into(
        out,
        0,
        base_offset,
        HEADER_SIZE - LOG_OVERHEAD + len(body),
        partition_leader_epoch,
        MAGIC,
        0,
        attributes,
        last_offset_delta,
        first_ts,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        count,
    )
    out += body
    _UINT32.pack_into(out, 17, crc32c(memoryview(out)[CRC_START:]))
    return bytes(out)
