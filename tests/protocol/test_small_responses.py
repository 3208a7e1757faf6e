"""The direct OffsetCommit and Heartbeat writers give kio's bytes, for every
version muster serves, and leave payloads they do not know to kio."""

from __future__ import annotations

import io
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from muster.coordinator.responses import PartitionError, TopicErrors
from muster.protocol.codec import build, encode_response, response_schema
from muster.protocol.entities import schema_writer
from muster.protocol.small_responses import CommitAnswer, heartbeat, offset_commit
from muster.server.api_table import build_table

_errors = st.sampled_from(
    [ErrorCode.none, ErrorCode.unknown_topic_or_partition, ErrorCode.illegal_generation, 0, 27]
)
_partition = st.fixed_dictionaries(
    {"partition_index": st.integers(0, 2**31 - 1), "error_code": _errors}
)
_topic = st.fixed_dictionaries(
    {"name": st.text(min_size=0, max_size=12), "partitions": st.lists(_partition, max_size=4)}
)
_throttle = st.integers(0, 2**31 - 1)


def _kio(api_key: int, version: int, payload: dict[str, Any]) -> bytes:
    schema = response_schema(api_key, version)
    buf = io.BytesIO()
    schema_writer(schema)(buf, build(schema, payload))
    return buf.getvalue()


def _served(api_key: int) -> range:
    entry = build_table()[api_key]
    return range(entry.min_version, entry.max_version + 1)


def test_every_served_version_is_covered() -> None:
    # a version added to the api table must be one these writers know
    assert list(_served(8)) == list(range(10))
    assert list(_served(12)) == list(range(5))


@settings(max_examples=150, deadline=None)
@given(
    version=st.sampled_from(list(_served(8))),
    topics=st.lists(_topic, max_size=4),
    throttle=_throttle,
)
def test_offset_commit_matches_kio(version: int, topics: list[Any], throttle: int) -> None:
    payload = {"throttle_time": throttle, "topics": topics}
    body = offset_commit(version, payload)
    assert body is not None
    assert body == _kio(8, version, payload)
    assert encode_response(8, version, payload) == body


@settings(max_examples=150, deadline=None)
@given(version=st.sampled_from(list(_served(8))), topics=st.lists(_topic, max_size=4))
def test_coordinator_answer_matches_kio(version: int, topics: list[Any]) -> None:
    # the handler's answer without dicts: the core's topics and partitions as they are
    core = tuple(
        TopicErrors(
            t["name"],
            tuple(
                PartitionError(p["partition_index"], int(p["error_code"])) for p in t["partitions"]
            ),
        )
        for t in topics
    )
    expected = _kio(8, version, {"throttle_time": 0, "topics": topics})
    assert offset_commit(version, CommitAnswer(core)) == expected
    assert encode_response(8, version, CommitAnswer(core)) == expected


@settings(max_examples=60, deadline=None)
@given(version=st.sampled_from(list(_served(12))), error=_errors, throttle=_throttle)
def test_heartbeat_matches_kio(version: int, error: int, throttle: int) -> None:
    payload = {"error_code": error, "throttle_time": throttle}
    body = heartbeat(version, payload)
    assert body is not None
    assert body == _kio(12, version, payload)
    assert encode_response(12, version, payload) == body


def test_fields_left_out_take_kio_defaults() -> None:
    for version in _served(8):
        assert offset_commit(version, {}) == _kio(8, version, {})
        part = {"name": "t", "partitions": [{"partition_index": 3}]}
        assert offset_commit(version, {"topics": [part]}) == _kio(8, version, {"topics": [part]})
    for version in _served(12):
        assert heartbeat(version, {}) == _kio(12, version, {})


def test_a_key_it_does_not_write_goes_the_generic_way() -> None:
    odd = {"error_code": 0, "throttle_time": 0, "something_new": 1}
    assert heartbeat(4, odd) is None
    topic = {"name": "t", "partitions": [{"partition_index": 0, "error_code": 0, "x": 1}]}
    assert offset_commit(8, {"topics": [topic]}) is None
    assert offset_commit(8, {"topics": [{"name": "t", "partitions": [], "x": 1}]}) is None
    assert offset_commit(10, {"topics": []}) is None  # a version it was not written for
    # kio still answers them (it ignores what the schema does not have)
    assert encode_response(12, 4, odd) == _kio(12, 4, {"error_code": 0, "throttle_time": 0})
