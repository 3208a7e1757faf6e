"""A group's history derived from `__consumer_offsets` alone, for brokers
without `__muster_group_events` (any Kafka): Kafka's own record schemas
(muster.records) decoded from the group's partition of the offsets topic.

Classic groups: each GroupMetadata record is a generation (its members,
protocol, leader, timestamp); consecutive generations give joins,
departures and assignment changes; a tombstone is the group's removal.
Consumer groups (KIP-848): ConsumerGroupMetadata records give the group
epochs, ConsumerGroupCurrentMemberAssignment records each member's epoch.
Pure: `derive(records, group_id)` takes (key, value, timestamp) triples;
`group_id_of(key)` names the group of a record `derive` reads. The console
reads one group's partition on the driver; `muster analyze` runs the same
`derive` per group on Spark (muster.analytics.derived). A record these schemas
cannot decode is skipped, as Kafka's tools skip what they cannot read.
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


# the key versions (record types) a group's history is derived from: classic
# GroupMetadata, ConsumerGroupMetadata, ConsumerGroupCurrentMemberAssignment
HISTORY_RECORD_TYPES = (2, 3, 8)


def offsets_partition(group_id: str, partitions: int) -> int:
    return partition_for(group_id, partitions)


def _record_type(key: bytes) -> int:
    return int.from_bytes(key[:2], "big", signed=True)


def group_id_of(key: bytes | None) -> str | None:
    """The group of a record `derive` reads (key versions 2, 3 and 8), or
    None for any other record or a key that does not decode."""
    if not key or len(key) < 2 or _record_type(key) not in HISTORY_RECORD_TYPES:
        return None
    try:
        if _record_type(key) == 2:
            gkey = ot.decode_key(bytes(key))
            return gkey.group if isinstance(gkey, ot.GroupMetadataKey) else None
        group = getattr(cg.decode_consumer_group_key(bytes(key)), "group_id", None)
    except ot.RecordFormatError:
        return None
    return group if isinstance(group, str) else None


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
        if group_id_of(key) != group_id:
            continue
        assert key is not None  # group_id_of named a group
        version = _record_type(key)
        try:
            if version == 2:
                if value is None:
                    out.append(Generation("removed", -1, at_ms))
                    members = {}
                    continue
                step = _classic(ot.decode_group_metadata_value(bytes(value)), at_ms, members)
                members = {m.member_id: m for m in step.members}
                out.append(step)
            elif value is not None:
                ckey = cg.decode_consumer_group_key(bytes(key))
                cvalue = cg.decode_consumer_group_value(version, bytes(value))
                if isinstance(cvalue, cg.ConsumerGroupMetadataValue):
                    out.append(Generation("epoch", cvalue.epoch, at_ms))
                elif isinstance(cvalue, cg.ConsumerGroupCurrentMemberAssignmentValue):
                    member = getattr(ckey, "member_id", "")
                    out.append(
                        Generation("member epoch", cvalue.member_epoch, at_ms, member_id=member)
                    )
        except ot.RecordFormatError:
            continue
    return out
