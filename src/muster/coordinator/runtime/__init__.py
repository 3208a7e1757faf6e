"""Runtime-facing types of the pure coordinator core."""

from muster.coordinator.runtime.partitioning import java_string_hash, kafka_abs, partition_for
from muster.coordinator.runtime.result import Cancel, Record, Result, Schedule, TimerOp

__all__ = [
    "Cancel",
    "Record",
    "Result",
    "Schedule",
    "TimerOp",
    "java_string_hash",
    "kafka_abs",
    "partition_for",
]
