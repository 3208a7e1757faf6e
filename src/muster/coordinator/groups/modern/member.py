"""A member of a consumer (KIP-848) group, as its records describe it.

Everything here is what `ConsumerGroupMemberMetadata` and
`ConsumerGroupCurrentMemberAssignment` records carry, so a member rebuilt by
replay equals the live one. Members are immutable: a change is a new member,
which is what the records written for it describe.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum

from muster.records.modern_group_records import ClassicMemberMetadata

TopicId = uuid.UUID
# topic id -> partition indexes; treated as immutable
Partitions = Mapping[TopicId, frozenset[int]]

NO_PARTITIONS: Partitions = {}


class MemberState(IntEnum):
    """Kafka's MemberState, with its record values."""

    STABLE = 0  # reconciled with the target assignment
    UNREVOKED_PARTITIONS = 1  # must give partitions up before its next epoch
    UNRELEASED_PARTITIONS = 2  # at the target epoch, waiting for others to give some up
    UNKNOWN = 127  # a state a newer broker wrote; the member is fenced

    @classmethod
    def from_record(cls, value: int) -> MemberState:
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN


@dataclass(frozen=True, slots=True)
class ConsumerMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: frozenset[str] = frozenset()
    subscribed_topic_regex: str = ""
    server_assignor: str | None = None
    assigned: Partitions = field(default_factory=dict)
    pending_revocation: Partitions = field(default_factory=dict)
    # a member speaking the classic protocol (JoinGroup/SyncGroup/Heartbeat):
    # its session timeout and JoinGroup protocols; None for a consumer-protocol one
    classic: ClassicMemberMetadata | None = None

    @property
    def uses_classic(self) -> bool:
        return self.classic is not None

    def with_epoch(self, epoch: int, **changes: object) -> ConsumerMember:
        """Kafka's updateMemberEpoch: the old epoch becomes the previous one."""
        return dataclasses.replace(
            self, member_epoch=epoch, previous_member_epoch=self.member_epoch, **changes
        )


def partitions(pairs: Mapping[TopicId, object]) -> Partitions:
    """A Partitions value from any iterables of partition indexes, empty topics dropped."""
    out: dict[TopicId, frozenset[int]] = {}
    for topic, parts in pairs.items():
        frozen = frozenset(parts)  # type: ignore[arg-type]
        if frozen:
            out[topic] = frozen
    return out
