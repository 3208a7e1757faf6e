"""What a producer queues and sends: one record's pending delivery
(`_Pending`, its `RecordMetadata`) and the record batches built from them
(`_Batch`, `encode_batch`: record batch v2 with the producer's id, epoch and
sequence, compressed, CRC'd)."""

from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from muster.client.errors import (
    ConfigError,
)
from muster.client.futures import DeliveryFuture
from muster.records import compression
from muster.records.batch import (
    COMPRESSION_MASK,
    CRC_START,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC,
    encode_record,
    zigzag_encode,
)
from muster.records.crc import crc32c

_VARINTS = 8192
# zigzag varints of 0.._VARINTS-1 (one or two bytes): offset and timestamp
# deltas and key/value lengths are nearly always among them.
_ZZ = tuple(
    bytes([v << 1]) if v < 64 else bytes([((v << 1) & 0x7F) | 0x80, v >> 6])
    for v in range(_VARINTS)
)
_UINT32 = struct.Struct(">I")
_NO_HEADER = bytes(HEADER_SIZE)


@dataclass(frozen=True)
class RecordMetadata:
    topic: str
    partition: int
    offset: int
    timestamp: int

    # confluent-kafka's Message accessors, so callbacks port over.
    def error(self) -> None:
        return None


def _to_bytes(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    raise TypeError(f"expected bytes or str, got {type(value).__name__}")


def _acks(value: Any) -> int:
    if value in ("all", "-1", -1):
        return -1
    try:
        acks = int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"acks must be all, -1, 0 or 1, not {value!r}") from None
    if acks not in (-1, 0, 1):
        raise ConfigError(f"acks must be all, -1, 0 or 1, not {value!r}")
    return acks


class _Pending(DeliveryFuture[RecordMetadata]):
    """One queued record, and the future `produce` hands back for it (one
    object per record). On delivery its value is its batch's shared
    (partition, base offset, log append time) tuple until someone asks:
    `result()` turns it into this record's `RecordMetadata` then."""

    __slots__ = (
        "created",
        "headers",
        "index",
        "key",
        "partition",
        "timestamp",
        "topic",
        "value",
    )

    def __init__(
        self,
        topic: str,
        partition: int | None,
        key: bytes | None,
        value: bytes | None,
        headers: list[tuple[str, bytes | None]] | tuple[()],
        timestamp: int,
        created: float,
    ) -> None:
        self._state = 0  # DeliveryFuture's pending state
        self._value = None
        self._callbacks = None
        self._event = None
        self.topic = topic
        self.partition = partition  # as asked for: None lets the partitioner choose
        self.key = key
        self.value = value
        self.headers = headers
        self.timestamp = timestamp
        self.created = created
        self.index = 0  # place in its batch

    def result(self, timeout: float | None = None) -> RecordMetadata:
        value: Any = DeliveryFuture.result(self, timeout)
        if type(value) is tuple:
            partition, base, ts = value
            value = self._value = RecordMetadata(
                self.topic,
                partition,
                base + self.index if base >= 0 else -1,
                ts if ts >= 0 else self.timestamp or -1,
            )
        return value  # type: ignore[no-any-return]


def _zigzag_bytes(value: int) -> bytes:
    out = bytearray()
    zigzag_encode(value, out)
    return bytes(out)


def encode_batch(
    entries: list[_Pending],
    codec: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
) -> bytearray:
    """One v2 record batch of `entries` (base offset 0), byte for byte what
    `muster.records.batch.build_batch` makes of the same records: one pass
    collecting the pieces, one join into the final buffer (each key and value
    copied once), one CRC-32C."""
    zz = _ZZ
    limit = _VARINTS
    first_ts = min(e.timestamp for e in entries)
    max_ts = max(e.timestamp for e in entries)
    pieces: list[bytes | bytearray] = [_NO_HEADER]
    add = pieces.append
    for i, e in enumerate(entries):
        key, value, delta = e.key, e.value, e.timestamp - first_ts
        if e.headers or i >= limit or delta >= limit:
            one = bytearray()
            encode_record(one, i, delta, key, value, e.headers)
            add(one)
            continue
        ts_b = zz[delta]
        off_b = zz[i]
        length = 2 + len(ts_b) + len(off_b)  # attributes + ... + header count
        if key is None:
            key_b = b"\x01"
            length += 1
        else:
            n = len(key)
            key_b = zz[n] if n < limit else _zigzag_bytes(n)
            length += len(key_b) + n
        if value is None:
            value_b = b"\x01"
            length += 1
        else:
            n = len(value)
            value_b = zz[n] if n < limit else _zigzag_bytes(n)
            length += len(value_b) + n
        add(zz[length] if length < limit else _zigzag_bytes(length))
        add(b"\x00")
        add(ts_b)
        add(off_b)
        add(key_b)
        if key:
            add(key)
        add(value_b)
        if value:
            add(value)
        add(b"\x00")
    batch = bytearray().join(pieces)
    if codec != compression.NONE:
        body = compression.compress(codec, memoryview(batch)[HEADER_SIZE:])
        batch = bytearray(HEADER_SIZE) + body
    HEADER.pack_into(
        batch,
        0,
        0,
        len(batch) - LOG_OVERHEAD,
        -1,
        MAGIC,
        0,
        codec & COMPRESSION_MASK,
        len(entries) - 1,
        first_ts,
        max_ts,
        producer_id,
        producer_epoch,
        base_sequence,
        len(entries),
    )
    _UINT32.pack_into(batch, 17, crc32c(memoryview(batch)[CRC_START:]))
    return batch


@dataclass(slots=True)
class _Batch:
    topic: str
    partition: int
    entries: list[_Pending] = field(default_factory=list)
    size: int = 0
    created: float = 0.0
    sequence: int = -1  # assigned when first sent (idempotent producers)
    attempts: int = 0
    sending: bool = False  # in a Produce request now
    retry_at: float = 0.0
    encoded: bytearray | None = None


def _unqueue(queue: deque[_Batch] | None, batch: _Batch) -> None:
    if queue:
        if queue[0] is batch:
            queue.popleft()
        else:  # an earlier batch is waiting for a retry
            for i, queued in enumerate(queue):
                if queued is batch:
                    del queue[i]
                    break
