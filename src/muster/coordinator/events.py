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
JoinWaiting        — a member's JoinGroup is held in PreparingRebalance until
  the join phase ends (it has rejoined this round): group_id, generation (the
  one being left), member_id, group_instance_id, client_id, joined (members
  rejoined so far), member_count, deadline_ms (when the join phase ends at the
  latest: members not rejoined by then are dropped), at_ms. Written so a
  watcher can tell, live, who has rejoined and who is still awaited; Kafka's
  DescribeGroups cannot say it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import Any

from muster.coordinator import events_modern as _consumer
from muster.coordinator.event_base import (  # noqa: F401 (names this module always had)
    NO_REASON,
    Cause,
    _Event,
    _member,
    _quoted,
    _reason,
    cause,
)

# ---- causes -------------------------------------------------------------------
#
# One class per cause of a rebalance, a member's removal or a state change:
# its code (the `cause` field on disk) and its words. Adding a cause is one
# new subclass here, used where the coordinator starts the rebalance;
# `muster.explain`, the analytics and the metrics find it by its code. The
# base class is in `event_base`; consumer-group causes in `events_modern`.


class MemberJoined(Cause):
    code, words, starts_rebalances = "member_joined", "a new member joined", True

    def started(self, member: str, reason: str | None) -> str:
        return f"{_member(member)} joined the group{_quoted(reason)}"


class MemberLeft(Cause):
    code, words, starts_rebalances = "member_left", "a member left", True

    def started(self, member: str, reason: str | None) -> str:
        return f"{_member(member)} left the group (LeaveGroup){_reason(reason)}"

    def removed(self, who: str, reason: str | None) -> str:
        return f"{who} left the group{_reason(reason)}."


class SessionExpired(Cause):
    code, words, starts_rebalances = "session_expired", "a member's session expired", True

    def started(self, member: str, reason: str | None) -> str:
        return f"{_member(member)} stopped heartbeating and its session timed out"

    def removed(self, who: str, reason: str | None) -> str:
        return f"{who} was removed: its session timed out."


class NewMemberJoinTimeout(Cause):
    code, starts_rebalances = "new_member_join_timeout", True
    words = "a new member did not rejoin in time"

    def started(self, member: str, reason: str | None) -> str:
        return f"new {_member(member)} did not rejoin before the new-member join timeout"

    def removed(self, who: str, reason: str | None) -> str:
        return f"{who} was removed: as a new member it did not rejoin in time."


class PendingMemberExpired(Cause):
    code = "pending_member_expired"
    words = "a pending member never completed its join"

    def removed(self, who: str, reason: str | None) -> str:
        return f"{who} was removed: it never completed its join (pending member expired)."


class RebalanceTimeout(Cause):
    code = "rebalance_timeout"
    words = "a member did not rejoin before the rebalance timeout"

    def removed(self, who: str, reason: str | None) -> str:
        return f"{who} was removed: it did not rejoin before the rebalance timeout."


class SyncTimeout(Cause):
    code, starts_rebalances = "sync_timeout", True
    words = "members did not send SyncGroup before the rebalance timeout"

    def started(self, member: str, reason: str | None) -> str:
        return "some members did not send SyncGroup before the rebalance timeout"

    def removed(self, who: str, reason: str | None) -> str:
        return f"{who} was removed: it did not send SyncGroup in time."


class LeaderRejoined(Cause):
    code, words, starts_rebalances = "leader_rejoined", "the leader rejoined", True

    def started(self, member: str, reason: str | None) -> str:
        who = member or "unknown"
        return f"the group leader ({who}) rejoined, so a new assignment is needed{_quoted(reason)}"


class MemberMetadataChanged(Cause):
    code, starts_rebalances = "member_metadata_changed", True
    words = "a member rejoined with changed subscription metadata"

    def started(self, member: str, reason: str | None) -> str:
        return (
            f"{_member(member)} rejoined with a changed subscription or protocol metadata"
            + _quoted(reason)
        )


class StaticMemberReplacedCause(Cause):
    code, starts_rebalances = "static_member_replaced", True
    words = "a static member was replaced by a new instance"

    def started(self, member: str, reason: str | None) -> str:
        return f"a static member was replaced by a new instance ({member or 'unknown id'})"


class GroupStoreFailedCause(Cause):
    code, starts_rebalances = "group_store_failed", True
    words = "the group's assignment could not be stored"

    def started(self, member: str, reason: str | None) -> str:
        return "the group's new assignment could not be stored durably"


class GroupMaxSize(Cause):
    code, words = "group_max_size", "the group was over group.max.size"


class JoinCompletedCause(Cause):
    code = "join_completed"


class SyncCompleted(Cause):
    code = "sync_completed"


class GroupDeleted(Cause):
    code = "group_deleted"

    def dead(self) -> str:
        return "the group was deleted."


class OffsetsExpired(Cause):
    code = "offsets_expired"

    def dead(self) -> str:
        return "the group was removed: it stayed empty and its offsets expired."


class Loaded(Cause):
    code = "loaded"


# the codes, for the coordinator's handlers
MEMBER_JOINED = MemberJoined.code
MEMBER_LEFT = MemberLeft.code
SESSION_EXPIRED = SessionExpired.code
NEW_MEMBER_JOIN_TIMEOUT = NewMemberJoinTimeout.code
PENDING_MEMBER_EXPIRED = PendingMemberExpired.code
REBALANCE_TIMEOUT = RebalanceTimeout.code
SYNC_TIMEOUT = SyncTimeout.code
LEADER_REJOINED = LeaderRejoined.code
MEMBER_METADATA_CHANGED = MemberMetadataChanged.code
STATIC_MEMBER_REPLACED = StaticMemberReplacedCause.code
GROUP_STORE_FAILED = GroupStoreFailedCause.code
GROUP_MAX_SIZE = GroupMaxSize.code
JOIN_COMPLETED = JoinCompletedCause.code
SYNC_COMPLETED = SyncCompleted.code
GROUP_DELETED = GroupDeleted.code
OFFSETS_EXPIRED = OffsetsExpired.code
LOADED = Loaded.code


def rebalance_causes() -> tuple[str, ...]:
    """The codes of every cause that starts rebalances, as registered now (the
    metrics enumerate them, so a new Cause subclass shows up there too)."""
    return tuple(code for code, c in Cause.registry.items() if c.starts_rebalances)


# causes that start rebalances (those defined here)
CAUSES = rebalance_causes()

# What a join phase waited for before it completed, and its words
ALL_MEMBERS_JOINED = "all_members_joined"
REBALANCE_TIMEOUT_EXPIRED = "rebalance_timeout_expired"
INITIAL_DELAY_ELAPSED = "initial_delay_elapsed"
WAITED_WORDS = {
    ALL_MEMBERS_JOINED: "every member had joined",
    REBALANCE_TIMEOUT_EXPIRED: "the rebalance timeout expired before every member had rejoined",
    INITIAL_DELAY_ELAPSED: (
        "the initial rebalance delay (group.initial.rebalance.delay.ms) had elapsed"
    ),
}
WAITED_FOR = tuple(WAITED_WORDS)


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


@dataclass(frozen=True)
class JoinWaiting(_Event):
    group_id: str
    generation: int
    member_id: str
    group_instance_id: str | None
    client_id: str
    joined: int
    member_count: int
    deadline_ms: int
    at_ms: int


GroupEvent = (
    GroupStateChanged
    | RebalanceStarted
    | JoinCompleted
    | RebalanceCompleted
    | GroupStoreFailed
    | MemberRemoved
    | StaticMemberReplaced
    | JoinWaiting
)


EVENT_TYPES: dict[str, type[GroupEvent]] = {
    cls.__name__: cls
    for cls in (
        GroupStateChanged,
        RebalanceStarted,
        JoinCompleted,
        RebalanceCompleted,
        GroupStoreFailed,
        MemberRemoved,
        StaticMemberReplaced,
        JoinWaiting,
    )
}


# consumer (KIP-848) group events: their own module, read by `from_json` too
EVENT_TYPES.update({c.__name__: c for c in _consumer.CONSUMER_EVENT_TYPES})  # type: ignore[misc]


def _missing(annotation: str) -> Any:
    """What a field absent from an older record reads as."""
    if "None" in annotation:
        return None
    if annotation.startswith("tuple"):
        return ()
    return {"int": 0, "str": "", "bool": False}.get(annotation)


def from_json(value: bytes | str | None) -> GroupEvent | None:
    """One `__muster_group_events` record value as its event; None when it is
    not one this version knows (newer types, other JSON, not JSON at all).
    Fields an older writer did not have read as empty; extra fields are ignored."""
    if value is None:
        return None
    try:
        body = json.loads(value)
    except ValueError:  # UnicodeDecodeError is one too
        return None
    return from_dict(body) if isinstance(body, dict) else None


def from_dict(body: dict[str, Any]) -> GroupEvent | None:
    """An event from its JSON fields (a `type` naming the class); None for a
    type this version does not know. Absent or null fields read as empty."""
    kind = body.get("type")
    cls = EVENT_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        return None
    args = {}
    for f in fields(cls):
        v = body.get(f.name)
        if v is None:
            v = _missing(str(f.type))
        args[f.name] = tuple(v) if isinstance(v, list) else v
    return cls(**args)


# ---- the fold: events into rebalances --------------------------------------------
#
# How the coordinator writes a rebalance (in log order): `MemberRemoved` (a
# member left / expired while Stable or CompletingRebalance) immediately
# followed by `RebalanceStarted` with the same member: the cause;
# `RebalanceStarted` again for each later return to PreparingRebalance before
# the group is stable; `JoinCompleted` when the join phase ends, `MemberRemoved`
# for the members it dropped; `RebalanceCompleted` when Stable (or Empty) again.


@dataclass
class Rebalance:
    """One rebalance: from leaving a stable (or empty) group to the next one."""

    starts: list[RebalanceStarted] = field(default_factory=list)
    removals: list[MemberRemoved] = field(default_factory=list)
    joins: list[JoinCompleted] = field(default_factory=list)
    store_failures: list[GroupStoreFailed] = field(default_factory=list)
    replacements: list[StaticMemberReplaced] = field(default_factory=list)  # that rebalanced
    completed: RebalanceCompleted | None = None

    @property
    def started_ms(self) -> int | None:
        if self.completed is not None:
            return self.completed.started_ms
        if self.starts:
            return self.starts[0].at_ms
        return None

    @property
    def done(self) -> bool:
        return self.completed is not None


@dataclass(frozen=True)
class Note:
    """Something worth telling that is not part of a rebalance: a member
    removed without one, a static member replaced without one, a failed store
    outside one, the group becoming Dead."""

    at_ms: int
    event: GroupEvent


def fold(events: Iterable[GroupEvent]) -> list[Rebalance | Note]:
    """One group's events (log order) as rebalances and notes, oldest first."""
    items: list[Rebalance | Note] = []
    current: Rebalance | None = None
    removed_before_start: list[MemberRemoved] = []

    def open_rebalance() -> Rebalance:
        nonlocal current
        if current is None or current.done:
            current = Rebalance()
            items.append(current)
        return current

    def flush_removals() -> None:
        items.extend(Note(r.at_ms or 0, r) for r in removed_before_start)
        removed_before_start.clear()

    for event in events:
        if isinstance(event, JoinWaiting):
            continue  # the join phase's progress: live views read it, the story does not
        in_progress = current is not None and not current.done
        if isinstance(event, RebalanceStarted):
            rebalance = open_rebalance()
            rebalance.starts.append(event)
            rebalance.removals.extend(removed_before_start)
            removed_before_start.clear()
            continue
        if isinstance(event, MemberRemoved):
            if in_progress:
                current.removals.append(event)  # type: ignore[union-attr]
            else:  # the RebalanceStarted it causes follows right after
                removed_before_start.append(event)
            continue
        flush_removals()
        if isinstance(event, JoinCompleted):
            open_rebalance().joins.append(event)
        elif isinstance(event, RebalanceCompleted):
            open_rebalance().completed = event
        elif isinstance(event, GroupStoreFailed):
            if in_progress:
                current.store_failures.append(event)  # type: ignore[union-attr]
            else:
                items.append(Note(event.at_ms or 0, event))
        elif isinstance(event, StaticMemberReplaced):
            if event.rebalance and in_progress:
                current.replacements.append(event)  # type: ignore[union-attr]
            else:
                items.append(Note(event.at_ms or 0, event))
        elif isinstance(event, GroupStateChanged) and event.to_state == "Dead":
            items.append(Note(event.at_ms or 0, event))
        elif isinstance(event, _consumer.CONSUMER_EVENT_TYPES):
            # a consumer group has no rebalance barrier: each step is told alone
            items.append(Note(event.at_ms or 0, event))  # type: ignore[arg-type]
    flush_removals()
    return items
