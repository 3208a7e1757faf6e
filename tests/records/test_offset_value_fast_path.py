"""The OffsetCommit readers' fast paths (keys and values) agree with the schema table."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from muster.records import offsets_topic as ot


@given(
    offset=st.integers(-1, 2**63 - 1),
    epoch=st.integers(-1, 2**31 - 1),
    metadata=st.text(max_size=50),
    stamp=st.integers(-1, 2**62),
)
def test_fast_decode_matches_generic(offset: int, epoch: int, metadata: str, stamp: int) -> None:
    value = ot.OffsetCommitValue(offset, epoch, metadata, stamp)
    data = ot.encode_offset_commit_value(value)
    assert ot.decode_offset_commit_value(data) == ot.decode("OffsetCommitValue", data)[1] == value


def test_legacy_version_with_expiry_still_decodes() -> None:
    value = ot.OffsetCommitValue(42, -1, "m", 1000, 2000)
    data = ot.encode_offset_commit_value(value)
    assert data[:2] == b"\x00\x01"
    assert ot.decode_offset_commit_value(data) == value


@given(group=st.text(max_size=30), topic=st.text(max_size=30), partition=st.integers(0, 2**31 - 1))
def test_fast_key_decode_matches_generic(group: str, topic: str, partition: int) -> None:
    key = ot.OffsetCommitKey(group, topic, partition)
    data = ot.encode_key(key)
    assert ot.decode_key(data) == ot.decode("OffsetCommitKey", data)[1] == key


@given(group=st.text(max_size=30), topic=st.text(max_size=30), partition=st.integers(0, 2**31 - 1))
def test_a_key_reader_reads_a_run_of_keys_as_the_one_reader_does(
    group: str, topic: str, partition: int
) -> None:
    reader = ot.OffsetCommitKeyReader()
    for g, t, p in [(group, topic, partition), (group, topic, 7), ("other", topic, 7)]:
        data = ot.encode_key(ot.OffsetCommitKey(g, t, p))
        assert reader.read(data) == ot.offset_commit_key_fields(data) == (g, t, p)


def test_key_fields_are_none_for_other_record_types_only() -> None:
    assert ot.offset_commit_key_fields(ot.encode_key(ot.GroupMetadataKey("g"))) is None
    assert ot.offset_commit_key_fields(bytes.fromhex("00050001")) is None
