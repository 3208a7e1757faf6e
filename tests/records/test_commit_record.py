"""The commit records `offset_commit_record` writes directly (struct calls,
no table codec objects) are the table codec's bytes, and read back to the
same commit; values the direct writer cannot take go the table way and fail
the same way."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from muster.records.offsets_topic import (
    OffsetCommitKey,
    OffsetCommitValue,
    RecordFormatError,
    decode_key,
    decode_offset_commit_value,
    encode,
    encode_key,
    offset_commit_record,
)


@settings(max_examples=300, deadline=None)
@given(
    group=st.text(max_size=40),
    topic=st.text(min_size=1, max_size=40),
    partition=st.integers(0, 2**31 - 1),
    offset=st.integers(-1, 2**63 - 1),
    epoch=st.integers(-1, 2**31 - 1),
    metadata=st.text(max_size=300),
    stamp=st.integers(-1, 2**62),
)
def test_same_bytes_as_the_table_codec(
    group: str, topic: str, partition: int, offset: int, epoch: int, metadata: str, stamp: int
) -> None:
    value = OffsetCommitValue(offset, epoch, metadata, stamp, -1)
    lean = offset_commit_record(group, topic, partition, value)
    table = encode_key(OffsetCommitKey(group, topic, partition))
    assert lean == (table, encode("OffsetCommitValue", value, 3))
    key = decode_key(lean[0])
    assert (key.group, key.topic, key.partition) == (group, topic, partition)  # type: ignore[union-attr]
    assert decode_offset_commit_value(lean[1]) == value


def test_out_of_range_fails_like_the_table_codec() -> None:
    with pytest.raises(RecordFormatError):
        offset_commit_record("g", "t", 0, OffsetCommitValue(2**63, -1, "", 0, -1))
