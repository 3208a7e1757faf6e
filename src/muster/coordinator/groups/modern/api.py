"""Core request and response types of the consumer group APIs
(ConsumerGroupHeartbeat 68, ConsumerGroupDescribe 69): what the edge decodes
the wire versions into, and what the core answers."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from muster.coordinator.groups.modern.target import SubscribedTopic

TopicPartitionList = tuple[tuple[uuid.UUID, tuple[int, ...]], ...]


@dataclass(frozen=True)
class ConsumerGroupHeartbeat:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: TopicPartitionList | None = None  # what the member owns; None: not said
    client_id: str = ""
    client_host: str = ""
    api_version: int = 1
    # the cluster's topics as the broker knew them when the request arrived
    # (a fixed image, Kafka's MetadataImage): name -> id and partition count
    topics: Mapping[str, SubscribedTopic] = field(default_factory=dict)


@dataclass(frozen=True)
class ConsumerGroupHeartbeatResponse:
    error_code: int
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: TopicPartitionList | None = None  # None: unchanged, not sent


@dataclass(frozen=True)
class ConsumerGroupDescribe:
    group_ids: tuple[str, ...]
    include_authorized_operations: bool = False


@dataclass(frozen=True)
class ConsumerGroupDescribeResponse:
    groups: tuple[dict[str, Any], ...]  # kio's DescribedGroup fields
