"""Rebalance domain events, written by the runtime to `__muster_group_events`.

Each event is a flat dataclass; `to_json()` gives one UTF-8 JSON object with
a `type` field naming the class. Timestamps are epoch milliseconds from the
coordinator's clock. Fields:

GroupStateChanged  — every state transition:
  group_id, from_state, to_state, generation (after the change), cause, at_ms.
RebalanceStarted   — every transition to PreparingRebalance:
  group_id, generation (the generation being left), from_state, cause (one of
  CAUSES), member_id (the member whose action caused it, "" if none),
  reason (the client's LeaveGroup/JoinGroup reason, or None), detail (human
  words), member_count (members once the change that caused it applied:
  a joining member is counted, a leaving one is not), at_ms.
JoinCompleted      — the join phase ended (CompletingRebalance or Empty):
  group_id, generation (new), protocol, leader_id, member_count,
  waited_for (one of WAITED_FOR), removed_members (member ids that did not
  rejoin), join_duration_ms (since the rebalance started), at_ms.
RebalanceCompleted — the group reached Stable (or Empty) after a rebalance:
  group_id, generation, protocol_type, protocol, leader_id, member_count,
  static_member_count, causes (every cause since the group was last stable,
  in order), started_ms, join_completed_ms, completed_ms, duration_ms,
  waited_for.
GroupStoreFailed   — storing the group (SyncGroup) could not be made durable:
  group_id, generation, error_code, at_ms; a new rebalance follows.
MemberRemoved      — a member left the group for any reason:
  group_id, member_id, group_instance_id, cause, reason, at_ms.
StaticMemberReplaced — a static member rejoined under a new member id:
  group_id, group_instance_id, old_member_id, new_member_id, rebalance (True
  when the replacement starts a rebalance, False when the group stays Stable
  and the new id inherits the assignment), at_ms.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

# The internal topic the broker's runtime writes these events to (one partition,
# keyed by group id).
EVENTS_TOPIC = "__muster_group_events"

# Causes of a transition to PreparingRebalance / of a member's removal
MEMBER_JOINED = "member_joined"
MEMBER_LEFT = "member_left"
SESSION_EXPIRED = "session_expired"
NEW_MEMBER_JOIN_TIMEOUT = "new_member_join_timeout"
PENDING_MEMBER_EXPIRED = "pending_member_expired"
REBALANCE_TIMEOUT = "rebalance_timeout"
SYNC_TIMEOUT = "sync_timeout"
LEADER_REJOINED = "leader_rejoined"
MEMBER_METADATA_CHANGED = "member_metadata_changed"
STATIC_MEMBER_REPLACED = "static_member_replaced"
GROUP_STORE_FAILED = "group_store_failed"
GROUP_MAX_SIZE = "group_max_size"
JOIN_COMPLETED = "join_completed"
SYNC_COMPLETED = "sync_completed"
GROUP_DELETED = "group_deleted"
OFFSETS_EXPIRED = "offsets_expired"
LOADED = "loaded"

CAUSES = (
    MEMBER_JOINED,
    MEMBER_LEFT,
    SESSION_EXPIRED,
    NEW_MEMBER_JOIN_TIMEOUT,
    SYNC_TIMEOUT,
    LEADER_REJOINED,
    MEMBER_METADATA_CHANGED,
    STATIC_MEMBER_REPLACED,
    GROUP_STORE_FAILED,
)

# What a join phase waited for before it completed
ALL_MEMBERS_JOINED = "all_members_joined"
REBALANCE_TIMEOUT_EXPIRED = "rebalance_timeout_expired"
INITIAL_DELAY_ELAPSED = "initial_delay_elapsed"
WAITED_FOR = (ALL_MEMBERS_JOINED, REBALANCE_TIMEOUT_EXPIRED, INITIAL_DELAY_ELAPSED)


class _Event:
    def to_json(self) -> bytes:
        body = {"type": type(self).__name__, **asdict(self)}  # type: ignore[call-overload]
        return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


@dataclass(frozen=True)
class GroupStateChanged(_Event):
    group_id: str
    from_state: str
    to_state: str
    generation: int
    cause: str
    at_ms: int


@dataclass(frozen=True)
class RebalanceStarted(_Event):
    group_id: str
    generation: int
    from_state: str
    cause: str
    member_id: str
    reason: str | None
    detail: str
    member_count: int
    at_ms: int


@dataclass(frozen=True)
class JoinCompleted(_Event):
    group_id: str
    generation: int
    protocol: str | None
    leader_id: str | None
    member_count: int
    waited_for: str
    removed_members: tuple[str, ...]
    join_duration_ms: int
    at_ms: int


@dataclass(frozen=True)
class RebalanceCompleted(_Event):
    group_id: str
    generation: int
    protocol_type: str | None
    protocol: str | None
    leader_id: str | None
    member_count: int
    static_member_count: int
    causes: tuple[str, ...]
    started_ms: int
    join_completed_ms: int
    completed_ms: int
    duration_ms: int
    waited_for: str


@dataclass(frozen=True)
class GroupStoreFailed(_Event):
    group_id: str
    generation: int
    error_code: int
    at_ms: int


@dataclass(frozen=True)
class MemberRemoved(_Event):
    group_id: str
    member_id: str
    group_instance_id: str | None
    cause: str
    reason: str | None
    at_ms: int


@dataclass(frozen=True)
class StaticMemberReplaced(_Event):
    group_id: str
    group_instance_id: str
    old_member_id: str
    new_member_id: str
    rebalance: bool
    at_ms: int


GroupEvent = (
    GroupStateChanged
    | RebalanceStarted
    | JoinCompleted
    | RebalanceCompleted
    | GroupStoreFailed
    | MemberRemoved
    | StaticMemberReplaced
)
