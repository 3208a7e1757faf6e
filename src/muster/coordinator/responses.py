"""Core response types, shaped like the newest Kafka version of each response.
The edge encodes them into whatever version the client asked for (e.g.
OffsetFetch v0-7 take groups[0]; LeaveGroup v0-2 lift the single member's
error to the top level; JoinGroup v0-6 turn a null protocol name into "")."""

from __future__ import annotations

from dataclasses import dataclass, field

# DescribeGroups' authorized_operations when the client did not ask for them
AUTHORIZED_OPERATIONS_OMITTED = -2147483648
# ...and when it did, with no authorizer: READ(3) | DELETE(6) | DESCRIBE(8) on a group
GROUP_AUTHORIZED_OPERATIONS = (1 << 3) | (1 << 6) | (1 << 8)


@dataclass(frozen=True)
class JoinGroupMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True)
class JoinGroupResponse:
    error_code: int
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False
    member_id: str = ""
    members: tuple[JoinGroupMember, ...] = ()
    throttle_time_ms: int = 0


@dataclass(frozen=True)
class SyncGroupResponse:
    error_code: int
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""
    throttle_time_ms: int = 0


@dataclass(frozen=True)
class HeartbeatResponse:
    error_code: int
    throttle_time_ms: int = 0


@dataclass(frozen=True)
class LeaveGroupMemberResponse:
    member_id: str
    group_instance_id: str | None
    error_code: int


@dataclass(frozen=True)
class LeaveGroupResponse:
    error_code: int
    members: tuple[LeaveGroupMemberResponse, ...] = ()
    throttle_time_ms: int = 0


@dataclass(frozen=True)
class PartitionError:
    partition_index: int
    error_code: int


@dataclass(frozen=True)
class TopicErrors:
    name: str
    partitions: tuple[PartitionError, ...]


@dataclass(frozen=True)
class OffsetCommitResponse:
    topics: tuple[TopicErrors, ...]
    throttle_time_ms: int = 0


@dataclass(frozen=True)
class FetchedPartition:
    partition_index: int
    committed_offset: int
    committed_leader_epoch: int = -1
    metadata: str | None = ""
    error_code: int = 0


@dataclass(frozen=True)
class FetchedTopic:
    name: str
    partitions: tuple[FetchedPartition, ...]


@dataclass(frozen=True)
class FetchedGroup:
    group_id: str
    topics: tuple[FetchedTopic, ...] = ()
    error_code: int = 0


@dataclass(frozen=True)
class OffsetFetchResponse:
    groups: tuple[FetchedGroup, ...]
    throttle_time_ms: int = 0


@dataclass(frozen=True)
class DescribedGroupMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    member_metadata: bytes
    member_assignment: bytes


@dataclass(frozen=True)
class DescribedGroup:
    error_code: int
    group_id: str
    group_state: str
    protocol_type: str
    protocol_data: str
    members: tuple[DescribedGroupMember, ...] = ()
    authorized_operations: int = AUTHORIZED_OPERATIONS_OMITTED


@dataclass(frozen=True)
class DescribeGroupsResponse:
    groups: tuple[DescribedGroup, ...]
    throttle_time_ms: int = 0


@dataclass(frozen=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    group_state: str
    group_type: str = "classic"


@dataclass(frozen=True)
class ListGroupsResponse:
    error_code: int
    groups: tuple[ListedGroup, ...] = field(default_factory=tuple)
    throttle_time_ms: int = 0


@dataclass(frozen=True)
class DeletedGroup:
    group_id: str
    error_code: int


@dataclass(frozen=True)
class DeleteGroupsResponse:
    results: tuple[DeletedGroup, ...]
    throttle_time_ms: int = 0


@dataclass(frozen=True)
class OffsetDeleteResponse:
    error_code: int
    topics: tuple[TopicErrors, ...] = ()
    throttle_time_ms: int = 0
