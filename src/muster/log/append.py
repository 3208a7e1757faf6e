"""The append path shared by the segment log and the in-memory log.

Validates a produce request's record set, checks idempotent sequences, and
rewrites base offsets (and LogAppendTime) in a copy of the bytes: no record
is decoded. Control batches (transaction markers) come only from the log's
own append_marker: a client's is refused, as Kafka does, since a forged
marker would end someone else's transaction.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

from muster.log.config import LogConfig
from muster.log.port import AppendInfo, InvalidRecordError
from muster.log.producer_state import ProducerEntry, ProducerStateManager
from muster.records.batch import (
    CONTROL_MASK,
    LOG_OVERHEAD,
    BatchHeader,
    batch_payload,
    decode_records,
    set_log_append_time,
    validate_batches,
)
from muster.records.control import end_txn_marker

_INT64 = struct.Struct(">q")


@dataclass(slots=True)
class PreparedAppend:
    buf: bytearray
    # per batch: (base_offset, next_offset, max_timestamp, position, size)
    batches: list[tuple[int, int, int, int, int]]
    pending: dict[int, ProducerEntry]
    base_offset: int
    next_offset: int
    log_append_time_ms: int


def _check_keys(records: bytes | bytearray | memoryview, headers: list[BatchHeader]) -> None:
    """Kafka refuses keyless records on compacted topics (the one place the
    append path decodes records; compacted topics are low-volume)."""
    for h in headers:
        if h.is_control:
            continue
        if any(r.key is None for r in decode_records(h, batch_payload(records, h))):
            raise InvalidRecordError("Compacted topic cannot accept message without key")


def prepare_append(
    records: bytes | bytearray | memoryview,
    now_ms: int,
    next_offset: int,
    producers: ProducerStateManager,
    config: LogConfig,
    log_start_offset: int,
    marker: bool = False,
    coordinator: bool = False,
) -> PreparedAppend | AppendInfo:
    """Returns the bytes to write, or the original AppendInfo of a duplicate.
    `marker`: the record set is a transaction marker built by the log.
    `coordinator`: the broker's own coordinator writes it (Kafka's
    AppendOrigin.Coordinator): a transactional batch of offsets carries the
    producer's id and epoch but no sequence, so only the epoch is checked."""
    headers = validate_batches(records, config.max_message_bytes, unsequenced_ok=coordinator)
    pending: dict[int, ProducerEntry] = {}
    idempotent = False
    for h in headers:
        if h.attributes & CONTROL_MASK and not marker:
            raise InvalidRecordError("clients are not allowed to write control records")
        if h.producer_id >= 0:
            idempotent = True
    if config.compact and not coordinator:  # the coordinator writes keys itself
        _check_keys(records, headers)
    log_append = config.log_append_time
    buf = bytearray(records)
    batches: list[tuple[int, int, int, int, int]] = []
    offset = next_offset
    pack = _INT64.pack_into
    for h in headers:
        if idempotent:
            dup = producers.check(h, pending, check_sequence=not coordinator)
            if dup is not None:
                return AppendInfo(
                    dup.first_offset, dup.last_offset, dup.timestamp, log_start_offset, True
                )
            producers.stage(h, offset, now_ms if log_append else -1, pending)
        pos = h.position
        pack(buf, pos, offset)
        if log_append:
            set_log_append_time(buf, h, now_ms)
            max_ts = now_ms
        else:
            max_ts = h.max_timestamp
        nxt = offset + h.last_offset_delta + 1
        batches.append((offset, nxt, max_ts, pos, h.batch_length + LOG_OVERHEAD))
        offset = nxt
    return PreparedAppend(buf, batches, pending, next_offset, offset, now_ms if log_append else -1)


def append_end_marker(
    append: Callable[[bytes, int, bool], AppendInfo],
    producers: ProducerStateManager,
    producer_id: int,
    producer_epoch: int,
    commit: bool,
    coordinator_epoch: int,
    now_ms: int,
    flushed_offset: int,
) -> AppendInfo:
    """A log's append_marker: checks the epoch, writes the control batch with
    `append(records, now_ms, marker=True)`, then ends the producer's
    transaction in `producers` at the marker's offset."""
    producers.check_marker(producer_id, producer_epoch)
    marker = end_txn_marker(producer_id, producer_epoch, commit, coordinator_epoch, now_ms)
    info = append(marker, now_ms, True)
    producers.end_txn(producer_id, producer_epoch, commit, info.base_offset)
    producers.prune(info.log_start_offset)
    producers.settle(flushed_offset)
    return info
