"""A group's history derived from `__consumer_offsets` alone, for brokers
without `__muster_group_events` (any Kafka): Kafka's own record schemas
(muster.records) decoded from the group's partition of the offsets topic.

Classic groups: each GroupMetadata record is a generation (its members,
protocol, leader, timestamp); consecutive generations give joins,
departures and assignment changes; a tombstone is the group's removal.
Consumer groups (KIP-848): ConsumerGroupMetadata records give the group
epochs, ConsumerGroupCurrentMemberAssignment records each member's epoch.
Pure: `derive(records, group_id)` takes (key, value, timestamp) triples.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from muster.coordinator.partitioning import partition_for
from muster.protocol.consumer_protocol import decode_assignment
from muster.records import modern_group_records as cg
from muster.records import offsets_topic as ot

OFFSETS_TOPIC = "__consumer_offsets"

Partition = tuple[str, int]


@dataclass(frozen=True)
class DerivedMember:
    member_id: str
    client_id: str
    client_host: str
    instance_id: str | None
    assignment: frozenset[Partition]
    rebalance_timeout_ms: int = -1
    session_timeout_ms: int = -1


@dataclass(frozen=True)
class Generation:
    """One step of the group: a classic generation or a consumer-group epoch."""

    kind: str  # "generation" | "epoch" | "member epoch" | "removed"
    number: int
    at_ms: int
    protocol: str | None = None
    leader: str | None = None
    members: tuple[DerivedMember, ...] = ()
    joined: tuple[str, ...] = ()
    left: tuple[str, ...] = ()
    moved: tuple[str, ...] = ()  # members whose assignment changed
    member_id: str | None = None  # "member epoch" steps

    def summary(self) -> str:
        if self.kind == "removed":
            return "group removed (tombstone)"
        if self.kind == "epoch":
            return f"group epoch {self.number}"
        if self.kind == "member epoch":
            return f"member {self.member_id} at epoch {self.number}"
        parts = [f"generation {self.number}: {len(self.members)} member(s)"]
        if self.protocol:
            parts.append(f"protocol {self.protocol}, leader {self.leader}")
        if self.joined:
            parts.append("joined: " + ", ".join(self.joined))
        if self.left:
            parts.append("left: " + ", ".join(self.left))
        if self.moved:
            parts.append("assignment changed: " + ", ".join(self.moved))
        return "; ".join(parts)


def offsets_partition(group_id: str, partitions: int) -> int:
    return partition_for(group_id, partitions)


def _assignment(data: bytes) -> frozenset[Partition]:
    try:
        return decode_assignment(data).partition_set()
    except ValueError:
        return frozenset()


def _classic(
    value: ot.GroupMetadataValue, at_ms: int, before: dict[str, DerivedMember]
) -> Generation:
    members = tuple(
        DerivedMember(
            m.member_id,
            m.client_id,
            m.client_host,
            m.group_instance_id,
            _assignment(m.assignment),
            m.rebalance_timeout,
            m.session_timeout,
        )
        for m in value.members
    )
    now = {m.member_id: m for m in members}
    return Generation(
        "generation",
        value.generation,
        value.current_state_timestamp if value.current_state_timestamp > 0 else at_ms,
        value.protocol,
        value.leader,
        members,
        joined=tuple(m for m in now if m not in before),
        left=tuple(m for m in before if m not in now),
        moved=tuple(m for m in now if m in before and now[m].assignment != before[m].assignment),
    )


def derive(
    records: Iterable[tuple[bytes | None, bytes | None, int]], group_id: str
) -> list[Generation]:
    """The group's steps, oldest first, from its offsets-topic records."""
    out: list[Generation] = []
    members: dict[str, DerivedMember] = {}
    for key, value, at_ms in records:
        if not key or len(key) < 2:
            continue
        version = int.from_bytes(key[:2], "big", signed=True)
        if version == 2:
            gkey = ot.decode_key(key)
            if not isinstance(gkey, ot.GroupMetadataKey) or gkey.group != group_id:
                continue
            if value is None:
                out.append(Generation("removed", -1, at_ms))
                members = {}
                continue
            step = _classic(ot.decode_group_metadata_value(value), at_ms, members)
            members = {m.member_id: m for m in step.members}
            out.append(step)
        elif version in (3, 8):
            ckey = cg.decode_consumer_group_key(key)
            if ckey is None or getattr(ckey, "group_id", None) != group_id or value is None:
                continue
            cvalue = cg.decode_consumer_group_value(version, value)
            if isinstance(cvalue, cg.ConsumerGroupMetadataValue):
                out.append(Generation("epoch", cvalue.epoch, at_ms))
            elif isinstance(cvalue, cg.ConsumerGroupCurrentMemberAssignmentValue):
                member = getattr(ckey, "member_id", "")
                out.append(Generation("member epoch", cvalue.member_epoch, at_ms, member_id=member))
    return out
