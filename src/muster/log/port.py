"""The storage port: what the broker needs from a partition log.

The log is the database: record batches are stored exactly as producers sent
them (only the base offset is rewritten), so the broker never decodes records
on the produce/fetch path. Two implementations: the on-disk segment log
(production) and an in-memory log (core tests).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from muster.log.config import LogConfig

# bad batches are the record layer's errors; re-exported for the log's users
from muster.records.errors import (
    CodedError,
    CorruptRecordError,
    InvalidRecordError,
    RecordTooLargeError,
)

__all__ = [
    "AppendInfo",
    "CodedError",
    "CorruptRecordError",
    "InvalidProducerEpochError",
    "InvalidRecordError",
    "InvalidTxnStateError",
    "LogError",
    "OffsetOutOfRangeError",
    "OutOfOrderSequenceError",
    "PartitionLog",
    "RecordTooLargeError",
]


class LogError(CodedError):
    """Base of storage errors; each maps to one Kafka error code."""


class OutOfOrderSequenceError(LogError):
    error_code = 45  # OUT_OF_ORDER_SEQUENCE_NUMBER


class InvalidProducerEpochError(LogError):
    error_code = 47  # INVALID_PRODUCER_EPOCH


class InvalidTxnStateError(LogError):
    error_code = 48  # INVALID_TXN_STATE


class OffsetOutOfRangeError(LogError):
    error_code = 1  # OFFSET_OUT_OF_RANGE


class StorageError(LogError):
    """The disk refused a write or an fsync (ENOSPC, EIO): nothing of the
    refused write is kept, and the log takes writes again once the disk does."""

    error_code = 56  # KAFKA_STORAGE_ERROR


class UnreadableLogError(Exception):
    """A file the log needs at start is damaged and guessing would serve
    wrong data; the message names the file and what to do."""


@dataclass(frozen=True)
class AppendInfo:
    base_offset: int  # offset given to the first record appended
    last_offset: int  # offset of the last record appended
    log_append_time_ms: int  # -1 unless the topic uses LogAppendTime
    log_start_offset: int
    duplicate: bool = False  # idempotent retry of an already-stored batch


class PartitionLog(Protocol):
    topic: str
    partition: int
    config: LogConfig

    @property
    def log_start_offset(self) -> int: ...

    @property
    def log_end_offset(self) -> int:
        """Next offset to assign (last offset + 1 of the last batch)."""

    @property
    def flushed_offset(self) -> int:
        """Every offset below this is on stable storage."""

    def append(self, records: bytes, now_ms: int, coordinator: bool = False) -> AppendInfo:
        """Validates (CRC, magic 2, idempotent sequences), assigns offsets, writes.
        `coordinator`: a broker coordinator's own write (no sequence checks)."""

    def append_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        now_ms: int,
    ) -> AppendInfo:
        """Writes the control batch that ends the producer's transaction here
        (written even when none is ongoing, as Kafka does). An epoch older than
        the producer's is InvalidProducerEpochError; a newer one fences it."""

    def first_unstable_offset(self, high_watermark: int | None = None) -> int | None:
        """First offset of the oldest ongoing transaction, None if there is none.
        With `high_watermark`, a transaction whose end marker is at or past it
        still counts (its outcome is not visible yet)."""

    def aborted_transactions(self, fetch_offset: int, upper: int) -> list[tuple[int, int]]:
        """(producer id, first offset) of the aborted transactions overlapping
        [fetch_offset, upper), by first offset (a read_committed Fetch answer)."""

    def read(self, offset: int, max_bytes: int, upper: int | None = None) -> bytes:
        """Whole batches from the one containing `offset`, at most max_bytes, but
        always at least one batch if any exists (KIP-74). Batches at or past
        `upper` (an offset) are not returned."""

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with timestamp >= timestamp_ms."""

    def max_timestamp(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the record with the largest timestamp."""

    def delete_records(self, offset: int) -> int:
        """Moves the log start offset up to `offset` (at most the log end),
        durably; returns the new log start offset."""

    def flush(self) -> None:
        """fsync everything appended so far; safe to call from another thread."""
