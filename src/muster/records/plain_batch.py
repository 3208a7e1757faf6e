"""The coordinator's own record batches, built without `build_batch`'s
generality.

Every batch the group coordinator writes has the same shape: uncompressed,
one timestamp for all records, offsets 0..n-1, no record headers, no
sequence (a transactional one carries its producer's id and epoch). A
synchronous commit loop builds one such batch per commit, and the general
builder's per-record objects and lists were a tenth of the commit's cost, so
this writes the same bytes directly (pinned to `build_batch` by
tests/records/test_plain_batch.py).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from muster.records.crc import crc32c
from muster.records.v2 import (
    CRC_START,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    TRANSACTIONAL_MASK,
)

# the header up to the CRC (base offset 0, batch length, leader epoch -1,
# magic, CRC) and the part the CRC covers (attributes .. record count)
_PREFIX = struct.Struct(">qiibI")
_CRCED = struct.Struct(">hiqqqhii")
assert _PREFIX.size == CRC_START and _PREFIX.size + _CRCED.size == HEADER_SIZE

# a record's attributes and timestamp delta: always 0, 0
_RECORD_START = b"\x00\x00"
_NULL = b"\x01"  # zigzag(-1): a null value (a tombstone)
_NO_HEADERS = b"\x00"
_SMALL = [bytes((raw,)) for raw in range(0x80)]


def _length(n: int) -> bytes:
    """zigzag varint of a non-negative length or offset delta."""
    raw = n << 1
    if raw < 0x80:
        return _SMALL[raw]
    out = bytearray()
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


def plain_batch(
    records: Sequence[tuple[bytes, bytes | None]],
    timestamp_ms: int,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    transactional: bool = False,
) -> bytes:
    """The bytes `build_batch(records, timestamp_ms=..., producer_id=...,
    producer_epoch=..., transactional=...)` gives for keyed records."""
    parts: list[bytes] = []
    for delta, (key, value) in enumerate(records):
        body = [_RECORD_START, _length(delta), _length(len(key)), key]
        if value is None:
            body.append(_NULL)
        else:
            body += (_length(len(value)), value)
        body.append(_NO_HEADERS)
        record = b"".join(body)
        parts += (_length(len(record)), record)
    crced = _CRCED.pack(
        TRANSACTIONAL_MASK if transactional else 0,
        max(len(records) - 1, 0),
        timestamp_ms,
        timestamp_ms,
        producer_id,
        producer_epoch,
        NO_SEQUENCE,
        len(records),
    )
    payload = b"".join(parts)
    crc = crc32c(payload, crc32c(crced))
    length = HEADER_SIZE - LOG_OVERHEAD + len(payload)
    return b"".join((_PREFIX.pack(0, length, -1, MAGIC, crc), crced, payload))
