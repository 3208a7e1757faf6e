"""The consumer's hot path: record batches of a Fetch answer to records.

Two steps, so that the driver can put the next Fetch on the wire between
them: `scan_batches` reads only batch headers (where the answer ends, a few
field reads per batch), `decode_records` then builds the records, one tight
loop per batch with the varints read inline.

read_committed: a Fetch answer lists the aborted transactions overlapping
it; `committed_batches` drops their records as Kafka's Java consumer does
(and only runs when that list is not empty: with none, read_committed
decodes exactly as read_uncommitted, the broker having cut the answer at the
last stable offset).
"""

from __future__ import annotations

import gc
import struct
from collections.abc import Iterable, Iterator

from muster.client.errors import ProtocolError
from muster.client.types import ConsumerRecord, TopicPartition
from muster.records.batch import (
    COMPRESSION_MASK,
    CONTROL_MASK,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MIN_BATCH_LENGTH,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    BatchHeader,
    batch_payload,
    iter_batches,
    zigzag_decode,
)
from muster.records.control import ABORT, control_type
from muster.records.errors import CorruptRecordError

# baseOffset, batchLength, and (at byte 23) lastOffsetDelta: all a scan needs
_OFFSET_LENGTH = struct.Struct(">qi")
_LAST_DELTA = struct.Struct(">i")
_LAST_DELTA_AT = 23

# zigzag value of every one-byte varint: one list index instead of four
# integer operations, for the fields that are almost always one byte long
_ZZ = [(b >> 1) ^ -(b & 1) for b in range(128)]
# and of every two-byte one (first byte b >= 0x80, second b2 < 0x80) at
# b2 * 128 + b: specialised int multiply and add, and a list index, instead
# of six generic bit operations (the first 128 entries are never read)
_ZZ2 = [((i % 128 | (i // 128 - 1) << 7) >> 1) ^ -(i % 128 & 1) for i in range(128 * 129)]

_new_record = tuple.__new__  # ConsumerRecord(*fields) goes through a Python __new__

# (producer_id, first_offset) of one aborted transaction, as a Fetch answer lists it
Aborted = tuple[int, int]


def scan_batches(data: bytes, fetch_offset: int) -> int:
    """The offset after the last whole batch of `data` (a trailing partial
    batch, as a Fetch answer may end with, does not count), or `fetch_offset`
    when there is none past it. Raises ProtocolError on a garbled length."""
    next_offset = fetch_offset
    pos, n = 0, len(data)
    unpack, unpack_delta = _OFFSET_LENGTH.unpack_from, _LAST_DELTA.unpack_from
    while pos + HEADER_SIZE <= n:
        base, length = unpack(data, pos)
        if length < MIN_BATCH_LENGTH:
            raise ProtocolError(f"corrupt record batch: length {length} at position {pos}")
        end = pos + LOG_OVERHEAD + length
        if end > n:
            break
        last = base + unpack_delta(data, pos + _LAST_DELTA_AT)[0] + 1
        if last > next_offset:
            next_offset = last
        pos = end
    return next_offset


def committed_batches(
    data: bytes | memoryview, aborted: Iterable[Aborted]
) -> Iterator[BatchHeader]:
    """The batch headers of `data` as read_committed sees them, given the
    aborted transactions its Fetch answer listed: every batch, in order, but
    the data batches of aborted transactions flagged as control batches, so
    a decoder skips them as it skips the markers (the position still moves
    past them).

    Kafka's Java consumer (CompletedFetch): the aborted transactions are
    taken in first-offset order; at each batch with a producer id, those
    starting at or before the batch's last offset put their producer into
    the aborted set; a transactional data batch of a producer in the set is
    aborted; an ABORT marker of that producer takes it out again (so its
    later transactions are read)."""
    pending = sorted((first, pid) for pid, first in aborted)
    i, n = 0, len(pending)
    producers: set[int] = set()
    for header in iter_batches(data):
        pid = header.producer_id
        if pid >= 0:
            last = header.base_offset + header.last_offset_delta
            while i < n and pending[i][0] <= last:
                producers.add(pending[i][1])
                i += 1
            attrs = header.attributes
            if pid in producers:
                if attrs & CONTROL_MASK:
                    marker = memoryview(data)[header.position : header.end]
                    if control_type(marker) == ABORT:
                        producers.discard(pid)
                elif attrs & TRANSACTIONAL_MASK:
                    header = header._replace(attributes=attrs | CONTROL_MASK)
        yield header


def decode_records(
    tp: TopicPartition,
    data: bytes,
    fetch_offset: int,
    aborted: Iterable[Aborted] | None = None,
) -> tuple[list[ConsumerRecord], int]:
    """Records at or after `fetch_offset` from a Fetch answer's record
    batches, and the offset after the last whole batch (control batches and
    records before `fetch_offset` are skipped; with `aborted`, the aborted
    transactions a read_committed answer listed, their records too). Raises
    ProtocolError on a corrupt batch."""
    out: list[ConsumerRecord] = []
    next_offset = fetch_offset
    topic, partition = tp
    # Records are tuple subclasses, which the cyclic GC tracks for life (it
    # only untracks exact tuples). Collections while thousands of them are
    # built promote the live ones to older generations, and with them come
    # full collections of the whole heap; paused here, the records meet one
    # young collection after the answer and are mostly gone (handed out,
    # processed, dropped) before the next. The pause never outlives the
    # call; a collector the application disabled stays disabled.
    gc_was_enabled = gc.isenabled()
    if gc_was_enabled:
        gc.disable()
    try:
        # read_committed's filter only when the answer lists aborted transactions
        batches = committed_batches(data, aborted) if aborted else iter_batches(data)
        for header in batches:
            base = header.base_offset
            end = base + header.last_offset_delta + 1
            if end <= fetch_offset:
                continue
            if end > next_offset:
                next_offset = end
            attrs = header.attributes
            if attrs & CONTROL_MASK:
                continue
            if attrs & COMPRESSION_MASK == 0 and type(data) is bytes:
                payload, pos, stop = data, header.position + HEADER_SIZE, header.end
            else:
                payload = batch_payload(data, header)
                pos, stop = 0, len(payload)
            start = len(out)
            pos = _decode_batch(
                out,
                payload,
                pos,
                header.record_count,
                topic,
                partition,
                base,
                header.base_timestamp,
            )
            if pos > stop:
                raise ValueError("records overrun their batch")
            if base < fetch_offset:  # only the first batch of an answer, if any
                out[start:] = [r for r in out[start:] if r[2] >= fetch_offset]
            if attrs & TIMESTAMP_TYPE_MASK:  # LogAppendTime: the broker's time for all
                ts = header.max_timestamp
                out[start:] = [_new_record(ConsumerRecord, (*r[:6], ts, 1)) for r in out[start:]]
    except (IndexError, ValueError, CorruptRecordError) as exc:
        raise ProtocolError(f"corrupt record batch in {topic}-{partition}: {exc}") from exc
    finally:
        if gc_was_enabled:
            gc.enable()
    return out, next_offset


def _decode_batch(
    out: list[ConsumerRecord],
    payload: bytes,
    pos: int,
    count: int,
    topic: str,
    partition: int,
    base: int,
    base_ts: int,
) -> int:
    """Appends the `count` records starting at `pos` of `payload` to `out`;
    returns the position after them. Every varint has a one-byte path and
    most a two-byte path (table lookups) before the general decoder."""
    append = out.append
    new = _new_record
    cls = ConsumerRecord
    zz, zz2 = _ZZ, _ZZ2
    no_headers: tuple[tuple[str, bytes | None], ...] = ()
    for _ in range(count):
        b = payload[pos]
        if b < 0x80:
            record_end = pos + 1 + zz[b]
            pos += 2  # and the record's attributes byte, unused
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
                offset, pos = zigzag_decode(payload, pos)
                offset += base
        b = payload[pos]
        if b == 1:  # length -1: a null key, the common case
            key = None
            pos += 1
        else:
            if b < 0x80:
                n = zz[b]
                pos += 1
            else:
                n, pos = zigzag_decode(payload, pos)
            if n < 0:
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
            headers, pos = _headers(payload, pos)
        if pos != record_end:
            raise ValueError("record length does not match its fields")
        append(new(cls, (topic, partition, offset, key, value, headers, ts, 0)))
    return pos


def _headers(payload: bytes, pos: int) -> tuple[tuple[tuple[str, bytes | None], ...], int]:
    count, pos = zigzag_decode(payload, pos)
    items = []
    for _ in range(count):
        n, pos = zigzag_decode(payload, pos)
        if n < 0:
            raise ValueError("null header key")
        key = payload[pos : pos + n].decode("utf-8")
        pos += n
        n, pos = zigzag_decode(payload, pos)
        value = None if n < 0 else payload[pos : pos + n]
        pos += max(n, 0)
        items.append((key, value))
    return tuple(items), pos
