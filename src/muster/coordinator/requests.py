"""Core request types: what the edge decodes every wire version of a group or
offset API into. Field meanings follow the newest Kafka version of each
request; defaults are what older versions imply."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class JoinGroup:
    group_id: str
    member_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int  # v0: the edge passes session_timeout_ms
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    group_instance_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    require_known_member_id: bool = False  # v4+ without an instance id
    reason: str | None = None  # v8+
    supports_skip_assignment: bool = False  # v9+ (static leader rejoin)
    # the broker's topics (name -> id, partitions), a fixed image taken when
    # the request arrived; read by a classic member of a consumer group (its
    # subscription is resolved as a heartbeat's is)
    topics: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class SyncGroup:
    group_id: str
    generation_id: int
    member_id: str
    assignments: tuple[tuple[str, bytes], ...] = ()
    group_instance_id: str | None = None
    protocol_type: str | None = None  # v5+
    protocol_name: str | None = None  # v5+


@dataclass(frozen=True)
class Heartbeat:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None


@dataclass(frozen=True)
class LeavingMember:
    member_id: str
    group_instance_id: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class LeaveGroup:
    group_id: str
    members: tuple[LeavingMember, ...]  # v0-2: one member built from member_id


@dataclass(slots=True)  # not frozen: made per commit, and frozen costs 3.5x to build
class CommitPartition:
    partition: int
    offset: int
    leader_epoch: int = -1
    metadata: str | None = ""
    commit_timestamp: int = -1  # v1 only; -1 = now


@dataclass(slots=True)  # see CommitPartition
class CommitTopic:
    name: str
    partitions: tuple[CommitPartition, ...]


@dataclass(slots=True)  # see CommitPartition
class OffsetCommit:
    group_id: str
    topics: tuple[CommitTopic, ...]
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None
    retention_time_ms: int = -1  # v2-v4; -1 = broker default
    api_version: int = 9  # consumer-protocol members must commit with v9+


@dataclass(frozen=True)
class TxnOffsetCommit:
    """Offsets a transactional producer commits; they stay pending (invisible
    to OffsetFetch) until its transaction's marker reaches this partition."""

    group_id: str
    producer_id: int
    producer_epoch: int
    topics: tuple[CommitTopic, ...]
    generation_id: int = -1  # v3+
    member_id: str = ""
    group_instance_id: str | None = None


@dataclass(frozen=True)
class CompleteTxn:
    """The transaction coordinator ends a producer's transaction on this
    partition: write its marker, then commit or drop its pending offsets."""

    producer_id: int
    producer_epoch: int
    commit: bool


@dataclass(frozen=True)
class FetchTopic:
    name: str
    partitions: tuple[int, ...]


@dataclass(frozen=True)
class FetchGroup:
    group_id: str
    topics: tuple[FetchTopic, ...] | None = None  # None = all partitions
    member_id: str | None = None  # v9+: a consumer-group member's id and epoch
    member_epoch: int = -1


@dataclass(frozen=True)
class OffsetFetch:
    groups: tuple[FetchGroup, ...]  # v0-7: one group
    require_stable: bool = False


@dataclass(frozen=True)
class DescribeGroups:
    groups: tuple[str, ...]
    include_authorized_operations: bool = False


@dataclass(frozen=True)
class ListGroups:
    states_filter: tuple[str, ...] = ()
    types_filter: tuple[str, ...] = ()


@dataclass(frozen=True)
class DeleteGroups:
    groups: tuple[str, ...]


@dataclass(frozen=True)
class OffsetDeleteTopic:
    name: str
    partitions: tuple[int, ...]


@dataclass(frozen=True)
class OffsetDelete:
    group_id: str
    topics: tuple[OffsetDeleteTopic, ...] = field(default_factory=tuple)
