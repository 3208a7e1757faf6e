"""What the consumer's membership core exchanges with its driver: the
requests it asks to send, the events it reports, and the Kafka API keys and
error codes it branches on."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from muster.client.errors import KafkaError

TP = tuple[str, int]

FIND_COORDINATOR = 10
JOIN_GROUP = 11
HEARTBEAT = 12
LEAVE_GROUP = 13
SYNC_GROUP = 14
OFFSET_COMMIT = 8
OFFSET_FETCH = 9

# Kafka error codes the machine branches on.
NONE = 0
OFFSET_METADATA_TOO_LARGE = 12
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
ILLEGAL_GENERATION = 22
UNKNOWN_MEMBER_ID = 25
REBALANCE_IN_PROGRESS = 27
MEMBER_ID_REQUIRED = 79
FENCED_INSTANCE_ID = 82
COORDINATOR_ERRORS = frozenset(
    {COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR}
)
LOST_ERRORS = frozenset({ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID})


@dataclass(frozen=True)
class Request:
    """A request for the driver to send. `to` is "any" (the least-loaded
    broker), "coordinator", "node" (broker `node`), "metadata" (not a Kafka
    request: the driver refreshes metadata for body["topics"] and answers
    with {topic: partition_count}) or "group" (the fetcher asking the
    membership for committed offsets of `tag`)."""

    kind: str
    api_key: int
    body: dict[str, Any]
    to: str
    tag: Any = None
    node: int = -1  # the broker, when to == "node"
    versions: tuple[int, int] | None = None  # the versions the body fits (None: any)


@dataclass(frozen=True)
class Event:
    """Something for the driver: `revoke`/`assign`/`lost` (partitions),
    `commit` (tag, offsets, error), `committed` (tag, offsets, error),
    `fatal` (error)."""

    kind: str
    partitions: frozenset[TP] = frozenset()
    tag: Any = None
    offsets: Mapping[TP, int] = field(default_factory=dict)
    error: KafkaError | None = None


@dataclass
class Commit:
    """An offset commit waiting to be sent, or in flight."""

    tag: Any
    offsets: dict[TP, int]
    generation_bound: bool  # fails (not retried) if the generation moves on
    attempts: int = 0
    epoch: int = -1  # the generation id / member epoch it was last sent with
