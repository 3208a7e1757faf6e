"""Errors raised by the record layer (bad record batches), and the base of
every error below the broker that maps to one Kafka error code: the storage
errors of `muster.log.port` derive from it too, so the broker catches both
with `except CodedError`."""

from __future__ import annotations


class CodedError(Exception):
    """An error a client sees as one Kafka error code."""

    error_code: int = -1  # UNKNOWN_SERVER_ERROR


class CorruptRecordError(CodedError):
    error_code = 2  # CORRUPT_MESSAGE


class InvalidRecordError(CodedError):
    error_code = 87  # INVALID_RECORD


class RecordTooLargeError(CodedError):
    error_code = 10  # MESSAGE_TOO_LARGE
