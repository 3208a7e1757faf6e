"""The `__consumer_offsets` record schemas: byte-exact, Kafka's layouts."""

from __future__ import annotations

import pytest

from muster.records.offsets_topic import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    RecordFormatError,
    decode,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    encode,
    encode_group_metadata_value,
    encode_key,
    encode_offset_commit_value,
)


def test_offset_commit_key_golden() -> None:
    # key version 1 | group "g" | topic "t" | partition 0x01020304
    data = encode_key(OffsetCommitKey("g", "t", 0x01020304))
    assert data == bytes.fromhex("000100016700017401020304")
    assert decode_key(data) == OffsetCommitKey("g", "t", 0x01020304)
    # key version 0 decodes the same way
    assert decode_key(bytes.fromhex("000000016700017400000000")) == OffsetCommitKey("g", "t", 0)


def test_offset_commit_value_v3_golden() -> None:
    v = OffsetCommitValue(offset=5, leader_epoch=7, metadata="m", commit_timestamp=1000)
    data = encode_offset_commit_value(v)
    assert data == bytes.fromhex("000300000000000000050000000700016d00000000000003e8")
    assert decode_offset_commit_value(data) == v


def test_offset_commit_value_with_expiry_is_v1() -> None:
    v = OffsetCommitValue(offset=1, metadata="", commit_timestamp=2, expire_timestamp=3)
    data = encode_offset_commit_value(v)
    assert data == bytes.fromhex("00010000000000000001000000000000000000020000000000000003")
    assert decode_offset_commit_value(data) == v


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_offset_commit_value_all_versions_round_trip(version: int) -> None:
    v = OffsetCommitValue(
        offset=42,
        leader_epoch=9 if version >= 3 else -1,
        metadata="meta",
        commit_timestamp=77,
        expire_timestamp=88 if version == 1 else -1,
    )
    data = encode("OffsetCommitValue", v, version)
    assert decode("OffsetCommitValue", data) == (version, v)
    assert encode("OffsetCommitValue", decode("OffsetCommitValue", data)[1], version) == data


def test_group_metadata_key_golden() -> None:
    data = encode_key(GroupMetadataKey("grp"))
    assert data == bytes.fromhex("00020003677270")
    assert decode_key(data) == GroupMetadataKey("grp")


def test_group_metadata_value_v3_golden() -> None:
    member = MemberMetadataValue("m", "i", "c", "h", 300, 100, b"\x01", b"\x02\x03")
    v = GroupMetadataValue("consumer", 2, "range", "m", 9, (member,))
    data = encode_group_metadata_value(v)
    expected = (
        "0003"
        "0008" + b"consumer".hex() + "00000002"
        "0005" + b"range".hex() + "00016d"
        "0000000000000009"
        "00000001"
        "00016d"
        "000169"
        "000163"
        "000168"
        "0000012c"
        "00000064"
        "0000000101"
        "000000020203"
    )
    assert data.hex() == expected
    assert decode_group_metadata_value(data) == v


def test_empty_group_value_has_null_protocol_and_leader() -> None:
    v = GroupMetadataValue("consumer", 3, None, None, 5, ())
    data = encode_group_metadata_value(v)
    assert data.endswith(bytes.fromhex("ffffffff000000000000000500000000"))
    assert decode_group_metadata_value(data) == v


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_group_metadata_value_versions(version: int) -> None:
    member = MemberMetadataValue(
        "m-1",
        "inst" if version >= 3 else None,
        "cid",
        "/1.2.3.4",
        60000 if version >= 1 else 10000,
        10000,
        b"sub",
        b"asg",
    )
    v = GroupMetadataValue("consumer", 7, "range", "m-1", 123 if version >= 2 else -1, (member,))
    data = encode("GroupMetadataValue", v, version)
    assert decode_group_metadata_value(data) == v
    assert encode("GroupMetadataValue", decode_group_metadata_value(data), version) == data


def test_v0_member_rebalance_timeout_defaults_to_session_timeout() -> None:
    member = MemberMetadataValue("m", None, "c", "h", -1, 10000, b"", b"")
    data = encode(
        "GroupMetadataValue", GroupMetadataValue("consumer", 1, "r", "m", -1, (member,)), 0
    )
    assert decode_group_metadata_value(data).members[0].rebalance_timeout == 10000


def test_unknown_key_version_is_skipped_and_garbage_refused() -> None:
    assert decode_key(bytes.fromhex("00050001")) is None
    with pytest.raises(RecordFormatError):
        decode_offset_commit_value(bytes.fromhex("000300"))
    with pytest.raises(RecordFormatError):
        decode_offset_commit_value(bytes.fromhex("0009") + bytes(30))
    with pytest.raises(RecordFormatError):
        decode_key(bytes.fromhex("0002000367727000"))
