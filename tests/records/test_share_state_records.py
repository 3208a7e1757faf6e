"""`__share_group_state` records: the bytes Kafka 4.4's share coordinator
writes. The expected bytes were written by the generated classes of
kafka-share-coordinator-4.4.0.jar (ShareSnapshotKey/Value, ShareUpdateKey/
Value, `Message.write` after the int16 record type / value version), so
Kafka tooling reads muster's topic and muster reads Kafka's."""

from __future__ import annotations

import uuid

import pytest

from muster.records.offsets_topic import RecordFormatError
from muster.records.share_state_records import (
    SNAPSHOT,
    UPDATE,
    ShareSnapshotValue,
    ShareStateKey,
    ShareUpdateValue,
    StateBatch,
    decode_share_state_record,
    share_state_record,
)

KEY = ShareStateKey("g", uuid.UUID(bytes=bytes(range(1, 17))), 3)
SNAPSHOT_KEY = "00000001670102030405060708090a0b0c0d0e0f1000000003"
UPDATE_KEY = "00010001670102030405060708090a0b0c0d0e0f1000000003"
# epochs 2/1/0, start 10, created 1000, written 2000, [10-12 acked x1, 13 archived x5],
# delivery_complete_count 4 (tag 0)
SNAPSHOT_VALUE = (
    "0000000000020000000100000000000000000000000a00000000000003e800000000000007d003"
    "000000000000000a000000000000000c02000100000000000000000d000000000000000d040005"
    "0001000400000004"
)
# snapshot epoch 2, start 10, [14-15 available x2], no complete count (default -1)
UPDATE_VALUE = "00000000000200000000000000000000000a02000000000000000e000000000000000f0000020000"


def test_a_snapshot_is_written_as_kafka_writes_it() -> None:
    value = ShareSnapshotValue(
        2, 1, 0, 10, 1000, 2000, (StateBatch(10, 12, 2, 1), StateBatch(13, 13, 4, 5)), 4
    )
    key_bytes, value_bytes = share_state_record(KEY, value, SNAPSHOT)
    assert (key_bytes.hex(), value_bytes and value_bytes.hex()) == (SNAPSHOT_KEY, SNAPSHOT_VALUE)
    assert decode_share_state_record(key_bytes, value_bytes) == (SNAPSHOT, KEY, value)


def test_an_update_is_written_as_kafka_writes_it() -> None:
    value = ShareUpdateValue(2, 0, 10, (StateBatch(14, 15, 0, 2),))
    key_bytes, value_bytes = share_state_record(KEY, value, UPDATE)
    assert (key_bytes.hex(), value_bytes and value_bytes.hex()) == (UPDATE_KEY, UPDATE_VALUE)
    assert decode_share_state_record(key_bytes, value_bytes) == (UPDATE, KEY, value)


def test_a_tombstone_and_bad_bytes() -> None:
    key_bytes, value_bytes = share_state_record(KEY, None, UPDATE)
    assert value_bytes is None
    assert decode_share_state_record(key_bytes, None) == (UPDATE, KEY, None)
    with pytest.raises(RecordFormatError):
        decode_share_state_record(bytes.fromhex("0002") + key_bytes[2:], None)
    with pytest.raises(RecordFormatError):
        decode_share_state_record(key_bytes[:-1], None)
