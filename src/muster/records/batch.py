"""Kafka record batch v2 (magic 2): header codec, validation, records, builder.

Layout of one batch (big-endian)::

    0  baseOffset int64          27 baseTimestamp int64
    8  batchLength int32         35 maxTimestamp int64
    12 partitionLeaderEpoch int32  43 producerId int64
    16 magic int8                51 producerEpoch int16
    17 crc uint32 (CRC-32C of bytes 21..end)  53 baseSequence int32
    21 attributes int16          57 recordCount int32
    23 lastOffsetDelta int32     61 records...

The produce/fetch path only touches headers (`iter_batches`, `validate_batches`,
`set_base_offset`); `decode_batch` and `build_batch` are for the compaction
cleaner, ListOffsets-by-timestamp and tests.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from crc32c import crc32c

from muster.records import compression
from muster.records.errors import CorruptRecordError, InvalidRecordError, RecordTooLargeError

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

_OFFSET_LEN = struct.Struct(">qi")
_INT64 = struct.Struct(">q")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")


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
        if h[3] != MAGIC:
            raise InvalidRecordError(f"record batch magic {h.magic} is not supported (need 2)")
        if length < MIN_BATCH_LENGTH:
            raise CorruptRecordError(f"batch length {length} at position {pos}")
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


def zigzag_encode(value: int, out: bytearray) -> None:
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


def _read_bytes(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    length, pos = zigzag_decode(buf, pos)
    if length < 0:
        return None, pos
    end = pos + length
    if end > len(buf):
        raise CorruptRecordError("record field overruns the batch")
    return buf[pos:end], end


def decode_records(header: BatchHeader, payload: bytes) -> list[Record]:
    """Records of one batch from its (decompressed) record bytes."""
    records: list[Record] = []
    pos = 0
    base_offset = header.base_offset
    log_append = header.attributes & TIMESTAMP_TYPE_MASK
    try:
        for _ in range(header.record_count):
            length, pos = zigzag_decode(payload, pos)
            end = pos + length
            if length < 0 or end > len(payload):
                raise CorruptRecordError("record length overruns the batch")
            attributes = payload[pos]
            pos += 1
            ts_delta, pos = zigzag_decode(payload, pos)
            off_delta, pos = zigzag_decode(payload, pos)
            key, pos = _read_bytes(payload, pos)
            value, pos = _read_bytes(payload, pos)
            count, pos = zigzag_decode(payload, pos)
            headers: list[tuple[str, bytes | None]] = []
            for _ in range(count):
                hkey, pos = _read_bytes(payload, pos)
                hval, pos = _read_bytes(payload, pos)
                headers.append(((hkey or b"").decode("utf-8"), hval))
            if pos != end:
                raise CorruptRecordError("record length does not match its fields")
            timestamp = header.max_timestamp if log_append else header.base_timestamp + ts_delta
            records.append(
                Record(key, value, headers, timestamp, base_offset + off_delta, attributes)
            )
    except (IndexError, UnicodeDecodeError) as exc:
        raise CorruptRecordError(f"garbled record: {exc}") from exc
    return records


def batch_payload(buf: bytes | bytearray | memoryview, header: BatchHeader) -> bytes:
    """The decompressed record bytes of the batch described by `header`."""
    raw = bytes(memoryview(buf)[header.position + HEADER_SIZE : header.end])
    try:
        return compression.decompress(header.compression, raw)
    except compression.CompressionError as exc:
        raise CorruptRecordError(str(exc)) from exc


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
    body = bytearray()
    body.append(attributes & 0xFF)
    zigzag_encode(timestamp_delta, body)
    zigzag_encode(offset_delta, body)
    _write_bytes(key, body)
    _write_bytes(value, body)
    headers = list(headers)
    zigzag_encode(len(headers), body)
    for hkey, hval in headers:
        _write_bytes(hkey.encode("utf-8"), body)
        _write_bytes(hval, body)
    zigzag_encode(len(body), out)
    out += body


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
    recs = [r if isinstance(r, Record) else Record(r[0], r[1]) for r in records]
    offsets = [(r.offset - base_offset) if r.offset is not None else i for i, r in enumerate(recs)]
    stamps = [r.timestamp if r.timestamp is not None else timestamp_ms for r in recs]
    first_ts = base_timestamp if base_timestamp is not None else min(stamps, default=timestamp_ms)
    payload = bytearray()
    for r, off, ts in zip(recs, offsets, stamps, strict=True):
        encode_record(payload, off, ts - first_ts, r.key, r.value, r.headers, r.attributes)
    body = compression.compress(compression_type, payload)
    attributes = compression_type & COMPRESSION_MASK
    if log_append_time:
        attributes |= TIMESTAMP_TYPE_MASK
    if transactional:
        attributes |= TRANSACTIONAL_MASK
    if control:
        attributes |= CONTROL_MASK
    if last_offset_delta is None:
        last_offset_delta = max(offsets, default=0)
    if max_timestamp is None:
        max_timestamp = max(stamps, default=first_ts)
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
        len(recs),
    )
    out += body
    _UINT32.pack_into(out, 17, crc32c(memoryview(out)[CRC_START:]))
    return bytes(out)
