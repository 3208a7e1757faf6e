"""Events of consumer (KIP-848) groups, beside the classic ones of `events`.

A consumer group has no rebalance barrier: its group epoch moves (a member
joined, left, changed its subscription, a topic changed), the target
assignment follows, and each member reconciles on its own heartbeats. So the
events say why the epoch moved and how each member moved:

ConsumerGroupEpochBumped — group_id, epoch (new), cause (one of the causes
  below), member_id ("" when none), detail (words), member_count, at_ms.
ConsumerTargetAssigned  — the target assignment was computed for an epoch:
  group_id, epoch, assignor, member_count, changed_members (members whose
  target changed), at_ms.
ConsumerMemberReconciled — a member's current assignment moved: group_id,
  member_id, from_epoch, to_epoch, state (Kafka's MemberState name),
  assigned (partition count), revoking (partitions it must give up first, as
  "topic-id:partition"), at_ms, deadline_ms (when revoking: the time it is
  removed unless it has given them up, at_ms + its rebalance timeout; else 0).
ConsumerMemberRemoved   — group_id, member_id, instance_id, cause, at_ms.
ConsumerGroupConverted  — the group changed type online (KIP-848 migration):
  group_id, to_type ("consumer" or "classic"), epoch (the generation / group
  epoch carried over), member_count, cause, member_id (the member whose
  leaving caused a downgrade, else ""), at_ms.
"""

from __future__ import annotations

from dataclasses import dataclass

from muster.coordinator.event_base import Cause, _Event, cause


class ConsumerMemberJoinedCause(Cause):
    code, words = "consumer_member_joined", "a member joined the consumer group"


class ConsumerMemberRejoinedCause(Cause):
    code, words = "consumer_member_rejoined", "a fenced member joined again under its id"


class ConsumerMemberLeftCause(Cause):
    code, words = "consumer_member_left", "a member left the consumer group"


class ConsumerStaticMemberLeftCause(Cause):
    code, words = "consumer_static_member_left", "a static member left for now (epoch -2)"


class ConsumerStaticMemberReplacedCause(Cause):
    code, words = "consumer_static_member_replaced", "a static member came back under a new id"


class ConsumerSubscriptionChangedCause(Cause):
    code, words = "consumer_subscription_changed", "a member changed its subscription"


class ConsumerMetadataChangedCause(Cause):
    code, words = "consumer_metadata_changed", "a subscribed topic was created, grown or deleted"


class ConsumerRegexResolvedCause(Cause):
    code = "consumer_regex_resolved"
    words = "a subscribed regular expression matched other topics"


class ConsumerSessionExpiredCause(Cause):
    code, words = "consumer_session_expired", "a member stopped heartbeating"


class ConsumerRevocationTimeoutCause(Cause):
    code = "consumer_revocation_timeout"
    words = "a member did not give up partitions within its rebalance timeout"


class ClassicMemberJoinedCause(Cause):
    code = "classic_member_joined"
    words = "a classic-protocol member joined the consumer group (JoinGroup)"


class ClassicMemberLeftCause(Cause):
    code = "classic_member_left"
    words = "a classic-protocol member left the consumer group (LeaveGroup)"


class ClassicJoinTimeoutCause(Cause):
    code = "classic_join_timeout"
    words = "a classic-protocol member told to rejoin did not within its rebalance timeout"


class ClassicSyncTimeoutCause(Cause):
    code = "classic_sync_timeout"
    words = "a classic-protocol member did not send SyncGroup within its rebalance timeout"


class GroupUpgradedCause(Cause):
    code = "group_upgraded"
    words = (
        "a consumer-protocol member joined a classic group, which became a consumer group"
        " (online upgrade)"
    )


class GroupDowngradedCause(Cause):
    code, starts_rebalances = "group_downgraded", True
    words = (
        "the last consumer-protocol member left a group of classic members, which became"
        " a classic group (online downgrade)"
    )

    def started(self, member: str, reason: str | None) -> str:
        who = f"member {member}" if member else "the last consumer-protocol member"
        return f"{who} left and the group was downgraded to a classic group"


class StaticDowngradeCause(Cause):
    code, starts_rebalances = "group_downgraded_static", True
    words = (
        "a classic static member replaced the last consumer-protocol static member (same"
        " group.instance.id), and the group became a classic group (online downgrade)"
    )

    def started(self, member: str, reason: str | None) -> str:
        return (
            f"member {member} was replaced by a classic static member, the group was"
            " downgraded to a classic group while members were still moving partitions"
        )


CONSUMER_MEMBER_JOINED = ConsumerMemberJoinedCause.code
CONSUMER_MEMBER_REJOINED = ConsumerMemberRejoinedCause.code
CONSUMER_MEMBER_LEFT = ConsumerMemberLeftCause.code
CONSUMER_STATIC_MEMBER_LEFT = ConsumerStaticMemberLeftCause.code
CONSUMER_STATIC_MEMBER_REPLACED = ConsumerStaticMemberReplacedCause.code
CONSUMER_SUBSCRIPTION_CHANGED = ConsumerSubscriptionChangedCause.code
CONSUMER_METADATA_CHANGED = ConsumerMetadataChangedCause.code
CONSUMER_REGEX_RESOLVED = ConsumerRegexResolvedCause.code
CONSUMER_SESSION_EXPIRED = ConsumerSessionExpiredCause.code
CONSUMER_REVOCATION_TIMEOUT = ConsumerRevocationTimeoutCause.code
CLASSIC_MEMBER_JOINED = ClassicMemberJoinedCause.code
CLASSIC_MEMBER_LEFT = ClassicMemberLeftCause.code
CLASSIC_JOIN_TIMEOUT = ClassicJoinTimeoutCause.code
CLASSIC_SYNC_TIMEOUT = ClassicSyncTimeoutCause.code
GROUP_UPGRADED = GroupUpgradedCause.code
GROUP_DOWNGRADED = GroupDowngradedCause.code
GROUP_DOWNGRADED_STATIC = StaticDowngradeCause.code


@dataclass(frozen=True)
class ConsumerGroupEpochBumped(_Event):
    group_id: str
    epoch: int
    cause: str
    member_id: str
    detail: str
    member_count: int
    at_ms: int

    def sentence(self) -> str:
        who = f" (member {self.member_id})" if self.member_id else ""
        return (
            f"the group epoch moved to {self.epoch}: {cause(self.cause).text}{who};"
            f" {self.member_count} member(s) now"
        )


@dataclass(frozen=True)
class ConsumerTargetAssigned(_Event):
    group_id: str
    epoch: int
    assignor: str
    member_count: int
    changed_members: tuple[str, ...]
    at_ms: int

    def sentence(self) -> str:
        return (
            f"the {self.assignor} assignor computed the target of epoch {self.epoch} for"
            f" {self.member_count} member(s); {len(self.changed_members)} got a new target"
        )


@dataclass(frozen=True)
class ConsumerMemberReconciled(_Event):
    group_id: str
    member_id: str
    from_epoch: int
    to_epoch: int
    state: str
    assigned: int
    revoking: tuple[str, ...]
    at_ms: int
    deadline_ms: int = 0  # 0: none (not revoking, or written before it was told)

    def sentence(self) -> str:
        who = f"member {self.member_id}"
        if self.to_epoch == -2:
            return f"static {who} left for now, keeping its {self.assigned} partition(s)"
        if self.state == "UNREVOKED_PARTITIONS":
            return (
                f"{who} must give up {len(self.revoking)} partition(s) before it moves past"
                f" epoch {self.to_epoch}: {', '.join(self.revoking)}"
            )
        if self.state == "UNRELEASED_PARTITIONS":
            return (
                f"{who} reached epoch {self.to_epoch} with {self.assigned} partition(s) and"
                " waits for other members to release the rest of its target"
            )
        return f"{who} reached epoch {self.to_epoch} with {self.assigned} partition(s)"


@dataclass(frozen=True)
class ConsumerMemberRemoved(_Event):
    group_id: str
    member_id: str
    instance_id: str | None
    cause: str
    at_ms: int

    def sentence(self) -> str:
        return f"member {self.member_id} was removed ({cause(self.cause).text})"


@dataclass(frozen=True)
class ConsumerGroupConverted(_Event):
    group_id: str
    to_type: str
    epoch: int
    member_count: int
    cause: str
    member_id: str
    at_ms: int

    def sentence(self) -> str:
        return (
            f"the group became a {self.to_type} group at epoch {self.epoch} with"
            f" {self.member_count} member(s): {cause(self.cause).text}"
        )


CONSUMER_EVENT_TYPES = (
    ConsumerGroupEpochBumped,
    ConsumerTargetAssigned,
    ConsumerMemberReconciled,
    ConsumerMemberRemoved,
    ConsumerGroupConverted,
)
