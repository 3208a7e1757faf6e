"""Kafka's `__share_group_state` records (KIP-932's share coordinator),
declared in the one schema table of `offsets_topic` and encoded by its codec.

Two record types (the key's version; Kafka 4.4's share-coordinator
`CoordinatorRecordType`), one key shape: (group_id string, topic_id uuid,
partition int32), classic encoding.
- 0 ShareSnapshot -> snapshot_epoch, state_epoch, leader_epoch int32,
  start_offset int64, create_timestamp, write_timestamp int64, state_batches;
  tag 0: delivery_complete_count int32 (default -1, then not written)
- 1 ShareUpdate -> snapshot_epoch, leader_epoch int32, start_offset int64,
  state_batches; tag 0: delivery_complete_count
A state batch: first_offset, last_offset int64, delivery_state int8,
delivery_count int16. Values are version 0, flexible. Checked against the
generated classes of kafka-share-coordinator-4.4.0.jar (tests/records).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from muster.records.modern_group_records import value_schema
from muster.records.offsets_topic import SCHEMAS, RecordFormatError, Schema, decode, encode

SNAPSHOT, UPDATE = 0, 1


@dataclass(slots=True, frozen=True)
class ShareStateKey:
    """The key of both record types: one share partition of one group."""

    group_id: str
    topic_id: uuid.UUID
    partition: int


@dataclass(slots=True, frozen=True)
class StateBatch:
    first_offset: int
    last_offset: int
    delivery_state: int  # 0 AVAILABLE, 2 ACKNOWLEDGED, 4 ARCHIVED
    delivery_count: int


@dataclass(slots=True, frozen=True)
class ShareSnapshotValue:
    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    create_timestamp: int
    write_timestamp: int
    state_batches: tuple[StateBatch, ...] = ()
    delivery_complete_count: int = -1  # tagged (0)


@dataclass(slots=True, frozen=True)
class ShareUpdateValue:
    snapshot_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: tuple[StateBatch, ...] = ()
    delivery_complete_count: int = -1  # tagged (0)


_KEY_FIELDS = (
    ("group_id", "string", 0, None, ""),
    ("topic_id", "uuid", 0, None, None),
    ("partition", "int32", 0, None, 0),
)
_BATCHES = ("state_batches", "[ShareStateBatch]", 0, None, ())
_COMPLETE = ("delivery_complete_count", "int32", 0, None, -1)

SCHEMAS.update(
    {
        s.name: s
        for s in (
            Schema("ShareSnapshotKey", ShareStateKey, SNAPSHOT, SNAPSHOT, _KEY_FIELDS),
            Schema("ShareUpdateKey", ShareStateKey, UPDATE, UPDATE, _KEY_FIELDS),
            Schema(
                "ShareStateBatch",
                StateBatch,
                0,
                0,
                (
                    ("first_offset", "int64", 0, None, 0),
                    ("last_offset", "int64", 0, None, 0),
                    ("delivery_state", "int8", 0, None, 0),
                    ("delivery_count", "int16", 0, None, 0),
                ),
                flexible_from=0,
            ),
            value_schema(
                ShareSnapshotValue,
                ("snapshot_epoch", "int32", 0, None, 0),
                ("state_epoch", "int32", 0, None, 0),
                ("leader_epoch", "int32", 0, None, 0),
                ("start_offset", "int64", 0, None, 0),
                ("create_timestamp", "int64", 0, None, 0),
                ("write_timestamp", "int64", 0, None, 0),
                _BATCHES,
                _COMPLETE,
                tags=(("delivery_complete_count", 0),),
            ),
            value_schema(
                ShareUpdateValue,
                ("snapshot_epoch", "int32", 0, None, 0),
                ("leader_epoch", "int32", 0, None, 0),
                ("start_offset", "int64", 0, None, 0),
                _BATCHES,
                _COMPLETE,
                tags=(("delivery_complete_count", 0),),
            ),
        )
    }
)

_KEYS = {SNAPSHOT: "ShareSnapshotKey", UPDATE: "ShareUpdateKey"}
_VALUES = {SNAPSHOT: "ShareSnapshotValue", UPDATE: "ShareUpdateValue"}


def share_state_record(
    key: ShareStateKey, value: ShareSnapshotValue | ShareUpdateValue | None, kind: int
) -> tuple[bytes, bytes | None]:
    """(key bytes, value bytes or None: a tombstone) of a ShareSnapshot or
    ShareUpdate (`kind`)."""
    if kind not in _KEYS:
        raise RecordFormatError(f"no share-state record type {kind}")
    key_bytes = encode(_KEYS[kind], key, kind)
    return key_bytes, None if value is None else encode(_VALUES[kind], value, 0)


def decode_share_state_record(
    key: bytes, value: bytes | None
) -> tuple[int, ShareStateKey, ShareSnapshotValue | ShareUpdateValue | None]:
    """(record type, key, value or None for a tombstone)."""
    if len(key) < 2:
        raise RecordFormatError("key shorter than its version")
    kind = int.from_bytes(key[:2], "big", signed=True)
    if kind not in _KEYS:
        raise RecordFormatError(f"not a share-state record (type {kind})")
    typed_key = decode(_KEYS[kind], key)[1]
    typed_value = None if value is None else decode(_VALUES[kind], value)[1]
    return kind, typed_key, typed_value
