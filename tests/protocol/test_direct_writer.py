"""The compiled answer writer gives kio's bytes for every response version
muster serves, from payloads of every shape a schema allows (fields left out,
nulls where a field may be null), and leaves to kio what it does not write."""

from __future__ import annotations

import datetime
import io
import uuid
from dataclasses import MISSING, fields
from functools import cache
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)

from muster.protocol.codec import build, encode_response, response_schema
from muster.protocol.direct_writer import encode_direct, entity_write
from muster.protocol.entities import schema_writer
from muster.server.api_table import build_table

_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
_UNSIGNED = {"uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64}


def _scalar(kafka_type: str) -> st.SearchStrategy[Any]:
    if kafka_type in _BITS:
        n = _BITS[kafka_type]
        return st.integers(-(2 ** (n - 1)), 2 ** (n - 1) - 1)
    if kafka_type in _UNSIGNED:
        return st.integers(0, 2 ** _UNSIGNED[kafka_type] - 1)
    if kafka_type == "bool":
        return st.booleans()
    if kafka_type == "float64":
        return st.floats(allow_nan=False)
    if kafka_type == "string":
        return st.text(max_size=8)
    if kafka_type in ("bytes", "records"):
        return st.binary(max_size=8)
    if kafka_type == "uuid":
        return st.uuids()
    if kafka_type == "error_code":
        return st.sampled_from(list(ErrorCode)) | st.sampled_from([0, 3, 27])
    if kafka_type == "timedelta_i32":
        return st.integers(-1, 2**31 - 1) | st.just(datetime.timedelta(seconds=3))
    if kafka_type == "timedelta_i64":
        return st.integers(-1, 2**40)
    if kafka_type == "datetime_i64":
        return st.integers(-1, 2**41)
    raise AssertionError(kafka_type)


@cache
def payloads(schema: type, depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    """Dicts as handlers write them: any field may be left out, nullable ones None."""
    optional: dict[str, st.SearchStrategy[Any]] = {}
    for f in fields(schema):
        if get_field_tag(f) is not None:
            continue  # a tagged field set goes kio's way (tested below)
        kind = classify_field(f)
        if isinstance(kind, EntityTupleField):
            items = payloads(kind.type_, depth + 1) if depth < 3 else st.nothing()
            value: st.SearchStrategy[Any] = st.lists(items, max_size=2)
        elif isinstance(kind, EntityField):
            continue
        elif isinstance(kind, PrimitiveTupleField):
            value = st.lists(_scalar(get_schema_field_type(f)), max_size=3)
        else:
            value = _scalar(get_schema_field_type(f))
        if is_optional(f):
            value = st.none() | value
        optional[f.name] = value
    return st.fixed_dictionaries({}, optional=optional)


def _served() -> list[tuple[int, int]]:
    return [
        (key, v)
        for key, entry in sorted(build_table().items())
        for v in range(entry.min_version, entry.max_version + 1)
    ]


def _kio(schema: type, payload: dict[str, Any]) -> bytes:
    buf = io.BytesIO()
    schema_writer(schema)(buf, build(schema, payload))
    return buf.getvalue()


_WRITTEN = [(k, v) for k, v in _served() if entity_write(response_schema(k, v)) is not None]


def test_it_writes_nearly_every_served_answer() -> None:
    # what it cannot write (a nested struct outside an array) is rare
    assert len(_WRITTEN) >= 0.9 * len(_served())
    for key in (3, 10, 11, 14, 9, 15, 18, 2, 0):  # Metadata, groups, ApiVersions, ...
        assert any(k == key for k, _ in _WRITTEN)


@pytest.mark.parametrize(("api_key", "version"), _WRITTEN)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_matches_kio_for_every_served_version(api_key: int, version: int, data: Any) -> None:
    schema = response_schema(api_key, version)
    payload = data.draw(payloads(schema))
    try:
        expected: bytes | None = _kio(schema, payload)
    except Exception:
        expected = None  # kio refuses it (a value out of range): so must this writer
    direct = encode_direct(schema, payload)
    if expected is None:
        assert direct is None
    else:
        assert direct is not None and bytes(direct) == expected
        if api_key != 1:  # Fetch's own writer takes only whole partitions (its test)
            assert encode_response(api_key, version, payload) == expected


def test_what_it_does_not_write_goes_kios_way() -> None:
    schema = response_schema(3, 12)  # Metadata v12
    topic = {"name": "t", "topic_id": uuid.uuid4(), "partitions": []}
    assert encode_direct(schema, {"topics": [topic]}) is not None
    # an entity in place of a dict, a string where bytes belong, a null the schema forbids
    assert encode_direct(schema, build(schema, {"topics": [topic]})) is None
    assert encode_direct(schema, {"brokers": [{"node_id": 1, "host": None, "port": 1}]}) is None
    assert encode_direct(response_schema(14, 5), {"assignment": "text"}) is None
    # an error code no error is: build refuses it
    assert encode_direct(response_schema(12, 4), {"error_code": 31_000}) is None
    # a tagged field set (Fetch v12 current_leader): kio decides what to write
    fetch = response_schema(1, 12)
    part = {"partition_index": 0, "current_leader": {"leader_id": 1, "leader_epoch": 2}}
    payload = {"responses": [{"topic": "t", "partitions": [part]}]}
    assert encode_direct(fetch, payload) is None
    assert encode_response(1, 12, payload) == _kio(fetch, payload)


def test_field_defaults_are_kios() -> None:
    for api_key, version in _WRITTEN:
        schema = response_schema(api_key, version)
        assert bytes(encode_direct(schema, {}) or b"?") == _kio(schema, {}), (api_key, version)


def test_nested_defaults_too() -> None:
    schema = response_schema(3, 12)
    payload = {"topics": [{"partitions": [{}]}], "brokers": [{}]}
    assert bytes(encode_direct(schema, payload) or b"?") == _kio(schema, payload)
    assert MISSING is not None  # dataclasses' marker is what defaults are read against
