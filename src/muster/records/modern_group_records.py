"""Kafka's ConsumerGroup* records of `__consumer_offsets` (KIP-848), declared in
the one schema table of `offsets_topic` and encoded by its codec.

Kafka 4.x's `group-coordinator/src/main/resources/common/message/*.json`:
the key's int16 version is the record type and its fields use the classic
encoding; every value is version 0 in the flexible encoding (compact
strings and arrays, tagged fields; see `flexible.py`).

Record type (the key's version), key fields -> value fields:
- 3 ConsumerGroupMetadata (group_id) -> epoch; tag 0: metadata_hash (Kafka 4.1,
  KIP-1101)
- 4 ConsumerGroupPartitionMetadata (group_id) -> topics: id, name, partition
  count, racks per partition (Kafka stops writing it in 4.1)
- 5 ConsumerGroupMemberMetadata (group_id, member_id) -> instance, rack and
  client ids, host, subscribed names and regex, rebalance timeout, server
  assignor; tag 0: classic member metadata (a classic member in the group)
- 6 ConsumerGroupTargetAssignmentMetadata (group_id) -> assignment_epoch
- 7 ConsumerGroupTargetAssignmentMember (group_id, member_id) -> partitions
- 8 ConsumerGroupCurrentMemberAssignment (group_id, member_id) -> member and
  previous epoch, state, assigned and pending-revocation partitions
- 16 ConsumerGroupRegularExpression (group_id, regular_expression) -> matching
  topics, metadata version, timestamp

Topic ids are `uuid.UUID`. `offsets_topic.decode_key` returns None for these
key versions; `decode_consumer_group_key` reads them, and the coordinator's
replay applies them to its consumer groups.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from muster.records.offsets_topic import (
    SCHEMAS,
    RecordFormatError,
    Schema,
    decode,
    encode,
)

VALUE_VERSION = 0

# ---------------------------------------------------------------------------
# keys


@dataclass(slots=True, frozen=True)
class _GroupKey:
    group_id: str


@dataclass(slots=True, frozen=True)
class _MemberKey:
    group_id: str
    member_id: str


# The key types differ only by record type; equality still tells them apart
# (a dataclass compares equal only to an instance of its own class).
class ConsumerGroupMetadataKey(_GroupKey):
    __slots__ = ()


class ConsumerGroupPartitionMetadataKey(_GroupKey):
    __slots__ = ()


class ConsumerGroupTargetAssignmentMetadataKey(_GroupKey):
    __slots__ = ()


class ConsumerGroupMemberMetadataKey(_MemberKey):
    __slots__ = ()


class ConsumerGroupTargetAssignmentMemberKey(_MemberKey):
    __slots__ = ()


class ConsumerGroupCurrentMemberAssignmentKey(_MemberKey):
    __slots__ = ()


@dataclass(slots=True, frozen=True)
class ConsumerGroupRegularExpressionKey:
    group_id: str
    regular_expression: str


# ---------------------------------------------------------------------------
# values and their nested structs


@dataclass(slots=True, frozen=True)
class ConsumerGroupMetadataValue:
    epoch: int
    metadata_hash: int = 0  # tagged (0); 0 = not computed


@dataclass(slots=True, frozen=True)
class PartitionMetadata:
    partition: int
    racks: tuple[str, ...] = ()


@dataclass(slots=True, frozen=True)
class TopicMetadata:
    topic_id: uuid.UUID
    topic_name: str
    num_partitions: int
    partition_metadata: tuple[PartitionMetadata, ...] = ()


@dataclass(slots=True, frozen=True)
class ConsumerGroupPartitionMetadataValue:
    topics: tuple[TopicMetadata, ...] = ()


@dataclass(slots=True, frozen=True)
class ClassicProtocol:
    name: str
    metadata: bytes


@dataclass(slots=True, frozen=True)
class ClassicMemberMetadata:
    """A member that speaks the classic protocol inside a consumer group."""

    session_timeout_ms: int
    supported_protocols: tuple[ClassicProtocol, ...] = ()


@dataclass(slots=True, frozen=True)
class ConsumerGroupMemberMetadataValue:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    classic_member_metadata: ClassicMemberMetadata | None = None  # tagged (0)


@dataclass(slots=True, frozen=True)
class ConsumerGroupTargetAssignmentMetadataValue:
    assignment_epoch: int


@dataclass(slots=True, frozen=True)
class TopicPartitions:
    topic_id: uuid.UUID
    partitions: tuple[int, ...] = ()


@dataclass(slots=True, frozen=True)
class ConsumerGroupTargetAssignmentMemberValue:
    topic_partitions: tuple[TopicPartitions, ...] = ()


@dataclass(slots=True, frozen=True)
class ConsumerGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int  # Kafka's MemberState: 0 STABLE, 1 UNREVOKED_PARTITIONS, 2 UNRELEASED_PARTITIONS
    assigned_partitions: tuple[TopicPartitions, ...] = ()
    partitions_pending_revocation: tuple[TopicPartitions, ...] = ()


@dataclass(slots=True, frozen=True)
class ConsumerGroupRegularExpressionValue:
    topics: tuple[str, ...] = ()
    version: int = 0  # the topic metadata version the regex was resolved against
    timestamp: int = 0  # when it was resolved (ms)


# ---------------------------------------------------------------------------
# the table entries: (field, type, first version, last version or None, default)

# record type (the key's version) -> key class and value class
RECORD_TYPES: dict[int, tuple[type, type]] = {
    3: (ConsumerGroupMetadataKey, ConsumerGroupMetadataValue),
    4: (ConsumerGroupPartitionMetadataKey, ConsumerGroupPartitionMetadataValue),
    5: (ConsumerGroupMemberMetadataKey, ConsumerGroupMemberMetadataValue),
    6: (ConsumerGroupTargetAssignmentMetadataKey, ConsumerGroupTargetAssignmentMetadataValue),
    7: (ConsumerGroupTargetAssignmentMemberKey, ConsumerGroupTargetAssignmentMemberValue),
    8: (ConsumerGroupCurrentMemberAssignmentKey, ConsumerGroupCurrentMemberAssignmentValue),
    16: (ConsumerGroupRegularExpressionKey, ConsumerGroupRegularExpressionValue),
}
_KEY_TYPE = {key_cls: record_type for record_type, (key_cls, _) in RECORD_TYPES.items()}


def key_schema(cls: type, record_type: int, *names: str) -> Schema:
    """A record key's schema: string fields, the record type as its version
    (shared with the ShareGroup* records)."""
    return Schema(
        cls.__name__,
        cls,
        record_type,
        record_type,
        tuple((n, "string", 0, None, "") for n in names),
    )


def value_schema(cls: type, *fields: tuple, tags: tuple[tuple[str, int], ...] = ()) -> Schema:
    """A record value's schema: version 0, flexible."""
    return Schema(cls.__name__, cls, 0, 0, fields, flexible_from=0, tags=tags)


TOPIC_PARTITIONS = ("[TopicPartitions]", 0, None, ())

SCHEMAS.update(
    {
        s.name: s
        for s in (
            key_schema(ConsumerGroupMetadataKey, 3, "group_id"),
            key_schema(ConsumerGroupPartitionMetadataKey, 4, "group_id"),
            key_schema(ConsumerGroupMemberMetadataKey, 5, "group_id", "member_id"),
            key_schema(ConsumerGroupTargetAssignmentMetadataKey, 6, "group_id"),
            key_schema(ConsumerGroupTargetAssignmentMemberKey, 7, "group_id", "member_id"),
            key_schema(ConsumerGroupCurrentMemberAssignmentKey, 8, "group_id", "member_id"),
            key_schema(ConsumerGroupRegularExpressionKey, 16, "group_id", "regular_expression"),
            value_schema(
                ConsumerGroupMetadataValue,
                ("epoch", "int32", 0, None, 0),
                ("metadata_hash", "int64", 0, None, 0),
                tags=(("metadata_hash", 0),),
            ),
            value_schema(
                PartitionMetadata,
                ("partition", "int32", 0, None, 0),
                ("racks", "[string]", 0, None, ()),
            ),
            value_schema(
                TopicMetadata,
                ("topic_id", "uuid", 0, None, None),
                ("topic_name", "string", 0, None, ""),
                ("num_partitions", "int32", 0, None, 0),
                ("partition_metadata", "[PartitionMetadata]", 0, None, ()),
            ),
            value_schema(
                ConsumerGroupPartitionMetadataValue, ("topics", "[TopicMetadata]", 0, None, ())
            ),
            value_schema(
                ClassicProtocol,
                ("name", "string", 0, None, ""),
                ("metadata", "bytes", 0, None, b""),
            ),
            value_schema(
                ClassicMemberMetadata,
                ("session_timeout_ms", "int32", 0, None, 0),
                ("supported_protocols", "[ClassicProtocol]", 0, None, ()),
            ),
            value_schema(
                ConsumerGroupMemberMetadataValue,
                ("instance_id", "nullable_string", 0, None, None),
                ("rack_id", "nullable_string", 0, None, None),
                ("client_id", "string", 0, None, ""),
                ("client_host", "string", 0, None, ""),
                ("subscribed_topic_names", "[string]", 0, None, ()),
                ("subscribed_topic_regex", "nullable_string", 0, None, None),
                ("rebalance_timeout_ms", "int32", 0, None, -1),
                ("server_assignor", "nullable_string", 0, None, None),
                ("classic_member_metadata", "{ClassicMemberMetadata}", 0, None, None),
                tags=(("classic_member_metadata", 0),),
            ),
            value_schema(
                ConsumerGroupTargetAssignmentMetadataValue,
                ("assignment_epoch", "int32", 0, None, 0),
            ),
            value_schema(
                TopicPartitions,
                ("topic_id", "uuid", 0, None, None),
                ("partitions", "[int32]", 0, None, ()),
            ),
            value_schema(
                ConsumerGroupTargetAssignmentMemberValue, ("topic_partitions", *TOPIC_PARTITIONS)
            ),
            value_schema(
                ConsumerGroupCurrentMemberAssignmentValue,
                ("member_epoch", "int32", 0, None, 0),
                ("previous_member_epoch", "int32", 0, None, 0),
                ("state", "int8", 0, None, 0),
                ("assigned_partitions", *TOPIC_PARTITIONS),
                ("partitions_pending_revocation", *TOPIC_PARTITIONS),
            ),
            value_schema(
                ConsumerGroupRegularExpressionValue,
                ("topics", "[string]", 0, None, ()),
                ("version", "int64", 0, None, 0),
                ("timestamp", "int64", 0, None, 0),
            ),
        )
    }
)

# records are built positionally: table order is dataclass order
for _key_cls, _value_cls in RECORD_TYPES.values():
    for _cls in (_key_cls, _value_cls):
        _fields = [f[0] for f in SCHEMAS[_cls.__name__].fields]
        assert _fields == list(_cls.__dataclass_fields__), _cls.__name__


def encode_consumer_group_key(key: object) -> bytes:
    record_type = _KEY_TYPE.get(type(key))
    if record_type is None:
        raise RecordFormatError(f"not a ConsumerGroup* key: {type(key).__name__}")
    return encode(type(key).__name__, key, record_type)


def decode_consumer_group_key(data: bytes) -> object | None:
    """The typed key of a ConsumerGroup* record, or None for other record types."""
    if len(data) < 2:
        raise RecordFormatError("key shorter than its version")
    classes = RECORD_TYPES.get(int.from_bytes(data[:2], "big", signed=True))
    return None if classes is None else decode(classes[0].__name__, data)[1]


def encode_consumer_group_value(value: object) -> bytes:
    return encode(type(value).__name__, value, VALUE_VERSION)


def decode_consumer_group_value(record_type: int, data: bytes) -> object:
    """The value of a record of `record_type` (the key's version)."""
    classes = RECORD_TYPES.get(record_type)
    if classes is None:
        raise RecordFormatError(f"record type {record_type} is not a ConsumerGroup* record")
    return decode(classes[1].__name__, data)[1]


def consumer_group_record(key: object, value: object | None) -> tuple[bytes, bytes | None]:
    """(key bytes, value bytes or None for a tombstone), as written to the log."""
    return encode_consumer_group_key(key), None if value is None else encode_consumer_group_value(
        value
    )
