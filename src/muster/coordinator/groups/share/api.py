"""Core request and response types of ShareGroupHeartbeat (76) and
ShareGroupDescribe (77): what the edge decodes the wire into, and what the
core answers."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from muster.coordinator.groups.modern.target import SubscribedTopic

Assignment = tuple[tuple[uuid.UUID, tuple[int, ...]], ...]


@dataclass(frozen=True)
class ShareGroupHeartbeat:
    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None = None
    subscribed_topic_names: tuple[str, ...] | None = None  # None: unchanged
    client_id: str = ""
    client_host: str = ""
    # the broker's topics when the request arrived (see `handlers/modern_groups.TopicImage`)
    topics: Mapping[str, SubscribedTopic] = field(default_factory=dict)


@dataclass(frozen=True)
class ShareGroupHeartbeatResponse:
    error_code: int
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None  # None: unchanged, not sent


@dataclass(frozen=True)
class ShareGroupDescribe:
    group_ids: tuple[str, ...]
    # topic id -> name, for the members' assignments
    topic_names: Mapping[uuid.UUID, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ShareGroupDescribeResponse:
    groups: tuple[dict[str, Any], ...]  # kio's DescribedGroup fields


@dataclass(frozen=True)
class ShareOffsetsChange:
    """Alter/DeleteShareGroupOffsets ask first: may this group's start
    offsets change? Only an empty share group's may; an id nobody holds
    becomes an empty share group (as Kafka makes one)."""

    group_id: str


@dataclass(frozen=True)
class ShareOffsetsChangeResponse:
    error_code: int
    error_message: str | None = None
