"""Kafka's ShareGroup* records of `__consumer_offsets` (KIP-932), declared in
the one schema table of `offsets_topic` and encoded by its codec, like the
ConsumerGroup* records (`modern_group_records.py`).

Record types (the key's version; Kafka 4.4's `CoordinatorRecordType`), key
fields -> value fields, every value version 0 and flexible:
- 10 ShareGroupMemberMetadata (group_id, member_id) -> rack, client id and
  host, subscribed topic names
- 11 ShareGroupMetadata (group_id) -> epoch; tag 0: metadata_hash
- 12 ShareGroupTargetAssignmentMetadata (group_id) -> assignment_epoch
- 13 ShareGroupTargetAssignmentMember (group_id, member_id) -> partitions
- 14 ShareGroupCurrentMemberAssignment (group_id, member_id) -> member and
  previous epoch, state, assigned partitions

ShareGroupStatePartitionMetadata (15) is not written yet: it tracks which
share partitions have durable state, which comes with `__share_group_state`.
"""

from __future__ import annotations

from dataclasses import dataclass

from muster.records.modern_group_records import (
    TOPIC_PARTITIONS,
    TopicPartitions,
    key_schema,
    value_schema,
)
from muster.records.offsets_topic import SCHEMAS, RecordFormatError, decode, encode


@dataclass(slots=True, frozen=True)
class ShareGroupMetadataKey:
    group_id: str


@dataclass(slots=True, frozen=True)
class ShareGroupTargetAssignmentMetadataKey:
    group_id: str


@dataclass(slots=True, frozen=True)
class ShareGroupMemberMetadataKey:
    group_id: str
    member_id: str


@dataclass(slots=True, frozen=True)
class ShareGroupTargetAssignmentMemberKey:
    group_id: str
    member_id: str


@dataclass(slots=True, frozen=True)
class ShareGroupCurrentMemberAssignmentKey:
    group_id: str
    member_id: str


@dataclass(slots=True, frozen=True)
class ShareGroupMemberMetadataValue:
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...] = ()


@dataclass(slots=True, frozen=True)
class ShareGroupMetadataValue:
    epoch: int
    metadata_hash: int = 0  # tagged (0)


@dataclass(slots=True, frozen=True)
class ShareGroupTargetAssignmentMetadataValue:
    assignment_epoch: int


@dataclass(slots=True, frozen=True)
class ShareGroupTargetAssignmentMemberValue:
    topic_partitions: tuple[TopicPartitions, ...] = ()


@dataclass(slots=True, frozen=True)
class ShareGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int  # Kafka's MemberState; a share member is always 0 (STABLE)
    assigned_partitions: tuple[TopicPartitions, ...] = ()


RECORD_TYPES: dict[int, tuple[type, type]] = {
    10: (ShareGroupMemberMetadataKey, ShareGroupMemberMetadataValue),
    11: (ShareGroupMetadataKey, ShareGroupMetadataValue),
    12: (ShareGroupTargetAssignmentMetadataKey, ShareGroupTargetAssignmentMetadataValue),
    13: (ShareGroupTargetAssignmentMemberKey, ShareGroupTargetAssignmentMemberValue),
    14: (ShareGroupCurrentMemberAssignmentKey, ShareGroupCurrentMemberAssignmentValue),
}
_KEY_TYPE = {key_cls: record_type for record_type, (key_cls, _) in RECORD_TYPES.items()}


SCHEMAS.update(
    {
        s.name: s
        for s in (
            key_schema(ShareGroupMemberMetadataKey, 10, "group_id", "member_id"),
            key_schema(ShareGroupMetadataKey, 11, "group_id"),
            key_schema(ShareGroupTargetAssignmentMetadataKey, 12, "group_id"),
            key_schema(ShareGroupTargetAssignmentMemberKey, 13, "group_id", "member_id"),
            key_schema(ShareGroupCurrentMemberAssignmentKey, 14, "group_id", "member_id"),
            value_schema(
                ShareGroupMemberMetadataValue,
                ("rack_id", "nullable_string", 0, None, None),
                ("client_id", "string", 0, None, ""),
                ("client_host", "string", 0, None, ""),
                ("subscribed_topic_names", "[string]", 0, None, ()),
            ),
            value_schema(
                ShareGroupMetadataValue,
                ("epoch", "int32", 0, None, 0),
                ("metadata_hash", "int64", 0, None, 0),
                tags=(("metadata_hash", 0),),
            ),
            value_schema(
                ShareGroupTargetAssignmentMetadataValue, ("assignment_epoch", "int32", 0, None, 0)
            ),
            value_schema(
                ShareGroupTargetAssignmentMemberValue, ("topic_partitions", *TOPIC_PARTITIONS)
            ),
            value_schema(
                ShareGroupCurrentMemberAssignmentValue,
                ("member_epoch", "int32", 0, None, 0),
                ("previous_member_epoch", "int32", 0, None, 0),
                ("state", "int8", 0, None, 0),
                ("assigned_partitions", *TOPIC_PARTITIONS),
            ),
        )
    }
)

for _key_cls, _value_cls in RECORD_TYPES.values():
    for _cls in (_key_cls, _value_cls):
        _fields = [f[0] for f in SCHEMAS[_cls.__name__].fields]
        assert _fields == list(_cls.__dataclass_fields__), _cls.__name__


def share_group_record(key: object, value: object | None) -> tuple[bytes, bytes | None]:
    """(key bytes, value bytes or None for a tombstone), as written to the log."""
    record_type = _KEY_TYPE.get(type(key))
    if record_type is None:
        raise RecordFormatError(f"not a ShareGroup* key: {type(key).__name__}")
    key_bytes = encode(type(key).__name__, key, record_type)
    return key_bytes, None if value is None else encode(type(value).__name__, value, 0)


def decode_share_group_record(key: bytes, value: bytes | None) -> tuple[object, object | None]:
    """The typed key and value (None: a tombstone) of a ShareGroup* record."""
    if len(key) < 2:
        raise RecordFormatError("key shorter than its version")
    classes = RECORD_TYPES.get(int.from_bytes(key[:2], "big", signed=True))
    if classes is None:
        raise RecordFormatError("not a ShareGroup* record")
    typed_key = decode(classes[0].__name__, key)[1]
    return typed_key, None if value is None else decode(classes[1].__name__, value)[1]
