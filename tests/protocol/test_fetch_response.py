"""The direct Fetch answer writer gives kio's bytes, for every version muster serves."""

from __future__ import annotations

import io
import uuid
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from muster.protocol.codec import build, encode_response, response_schema
from muster.protocol.entities import schema_writer
from muster.protocol.fetch_response import Chunks, encode_fetch_response

_i64 = st.integers(-1, 2**40)
_aborted = st.none() | st.lists(
    st.fixed_dictionaries({"producer_id": _i64, "first_offset": _i64}), max_size=3
)
# short record sets are copied into the header bytes, long ones become chunks
_records = st.binary(max_size=40) | st.integers(16_000, 40_000).map(lambda n: b"r" * n)
_partition = st.fixed_dictionaries(
    {
        "partition_index": st.integers(0, 2**31 - 1),
        "error_code": st.sampled_from([ErrorCode.none, ErrorCode.offset_out_of_range]),
        "high_watermark": _i64,
        "last_stable_offset": _i64,
        "log_start_offset": _i64,
        "aborted_transactions": _aborted,
        "preferred_read_replica": st.just(-1),
        "records": _records,
    }
)
_topic_name = st.text("abcxyz-._", min_size=1, max_size=12)


def _kio(version: int, payload: dict[str, Any]) -> bytes:
    schema = response_schema(1, version)
    buf = io.BytesIO()
    schema_writer(schema)(buf, build(schema, payload))
    return buf.getvalue()


@settings(max_examples=60, deadline=None)
@given(
    version=st.integers(4, 16),
    names=st.lists(_topic_name, max_size=3, unique=True),
    parts=st.lists(st.lists(_partition, max_size=3), min_size=3, max_size=3),
    session=st.integers(0, 2**31 - 1),
)
def test_direct_writer_matches_kio(
    version: int, names: list[str], parts: list[list[dict[str, Any]]], session: int
) -> None:
    topics = []
    for i, name in enumerate(names):
        key = {"topic_id": uuid.uuid5(uuid.NAMESPACE_DNS, name)} if version >= 13 else {
            "topic": name
        }
        topics.append({**key, "partitions": parts[i]})
    payload = {
        "throttle_time": 0,
        "error_code": ErrorCode.none,
        "session_id": session,
        "responses": topics,
    }
    body = encode_fetch_response(version, payload)
    assert body is not None
    joined = b"".join(body) if isinstance(body, Chunks) else body
    if isinstance(body, Chunks):
        assert body.nbytes == len(joined)
    assert joined == _kio(version, payload)
    assert encode_response(1, version, payload) == joined


def test_a_field_it_does_not_write_goes_the_generic_way() -> None:
    entry = {
        "partition_index": 0,
        "error_code": ErrorCode.not_leader_or_follower,
        "high_watermark": -1,
        "records": b"",
        "current_leader": {"leader_id": 1, "leader_epoch": 3},
    }
    payload = {"throttle_time": 0, "responses": [{"topic": "t", "partitions": [entry]}]}
    assert encode_fetch_response(12, payload) is None
    assert encode_response(1, 12, payload) == _kio(12, payload)  # the tag is written
