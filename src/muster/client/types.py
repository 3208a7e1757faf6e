"""Public value types of the client."""

from __future__ import annotations

from typing import NamedTuple


class TopicPartition(NamedTuple):
    """A partition of a topic; equal to (and hashes as) the plain tuple."""

    topic: str
    partition: int


class ConsumerRecord(NamedTuple):
    """One consumed record (a NamedTuple: cheap to build, immutable)."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    timestamp: int
    timestamp_type: int = 0  # 0 CreateTime, 1 LogAppendTime

    # confluent-kafka's Message accessors, so code ports over.
    def error(self) -> None:
        return None

    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)
