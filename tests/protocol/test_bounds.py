"""The bounds walk agrees with kio on every request muster serves, and refuses
the counts that made kio's native reader abort the broker."""

from __future__ import annotations

import io
import struct
import uuid
from dataclasses import fields
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.request_header.v2.header import RequestHeader
from kio.serial import entity_writer
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
    get_schema_field_type,
    is_optional,
)

from muster.protocol.bounds import BoundsError, check_request
from muster.protocol.codec import DecodeError, build, decode_request, request_schema
from muster.protocol.header import parse_request_header
from muster.server.api_table import build_table

_SAMPLES: dict[str, Any] = {
    "string": "ab",
    "bytes": b"xyz",
    "records": b"\x00\x01\x02\x03",
    "uuid": uuid.UUID(int=5),
    "bool": True,
}

# counts and sizes that claim far more than any frame holds
_HOSTILE = [
    bytes.fromhex(h)
    for h in ("ffffffff0f", "feffffff0f", "7fffffff", "80808080", "ffff", "00", "01", "ff")
]


def _sample(schema: type) -> dict[str, Any]:
    """Every field set, every array two long: the longest layout a schema has."""
    out: dict[str, Any] = {}
    for f in fields(schema):
        kind = classify_field(f)
        if isinstance(kind, EntityTupleField):
            out[f.name] = [_sample(kind.type_), _sample(kind.type_)]
        elif isinstance(kind, EntityField):
            out[f.name] = _sample(kind.type_)
        else:
            value = _SAMPLES.get(get_schema_field_type(f), 1)
            out[f.name] = [value, value] if isinstance(kind, PrimitiveTupleField) else value
    return out


def _served() -> list[tuple[int, int]]:
    return [
        (key, version)
        for key, entry in sorted(build_table().items())
        for version in range(entry.min_version, entry.max_version + 1)
    ]


@pytest.mark.parametrize(("api_key", "version"), _served())
def test_walk_accepts_every_served_request_and_ends_where_kio_does(
    api_key: int, version: int
) -> None:
    schema = request_schema(api_key, version)
    buf = io.BytesIO()
    entity_writer(schema)(buf, build(schema, _sample(schema)))
    body = buf.getvalue()
    assert check_request(schema, body, 0) == len(body)
    decode_request(api_key, version, body)
    if body:  # one byte short is refused by one of the two, and never crashes
        with pytest.raises(DecodeError):
            decode_request(api_key, version, body[:-1])


@pytest.mark.parametrize(
    ("api_key", "version", "body_hex"),
    [
        # compact array counts of 2**32 - 2 and - 1: kio reserved 34 GB and aborted
        (15, 5, "ffffffff0f"),  # DescribeGroups v5 groups
        (10, 5, "00ffffffff0f7fffffffffffffff0fff"),  # FindCoordinator v5 keys
        (9, 8, "feffffff0ffeffffff0fffffffff07"),  # OffsetFetch v8 groups
        (37, 3, "ffffffff0fffffffff070159d9"),  # CreatePartitions v3 topics
        (33, 2, "feffffff0f2700"),  # AlterConfigs v2 resources
    ],
)
def test_counts_larger_than_the_frame_are_refused(
    api_key: int, version: int, body_hex: str
) -> None:
    with pytest.raises(DecodeError, match="items in"):
        decode_request(api_key, version, bytes.fromhex(body_hex))


def test_legacy_array_count_over_the_frame_is_refused() -> None:
    # Metadata v4 topics: 2**31 - 1 entries announced in a 6-byte body
    with pytest.raises(DecodeError, match="items in"):
        decode_request(3, 4, struct.pack(">i", 2**31 - 1) + b"\x00\x00")


def test_header_tag_count_over_the_frame_is_refused() -> None:
    buf = io.BytesIO()
    entity_writer(RequestHeader)(
        buf,
        RequestHeader(request_api_key=3, request_api_version=12, correlation_id=1, client_id="c"),
    )
    frame = buf.getvalue()[:-1] + b"\xfe\xff\xff\xff\x0f"  # tagged-field count 2**32 - 2
    with pytest.raises(DecodeError):
        parse_request_header(frame, True)


def test_tagged_field_size_must_fit() -> None:
    schema = request_schema(18, 3)  # ApiVersions v3: two compact strings then tags
    body = b"\x02a\x02b" + b"\x01" + b"\x00\x7f"  # one tag of 127 bytes, none there
    with pytest.raises(BoundsError):
        check_request(schema, body, 0)


_SERVED = _served()


@settings(max_examples=400, deadline=None)
@given(
    which=st.integers(0, len(_SERVED) - 1),
    edits=st.lists(
        st.tuples(st.integers(0, 10_000), st.sampled_from(_HOSTILE)), min_size=1, max_size=4
    ),
)
def test_mutated_requests_decode_or_raise_decode_error(
    which: int, edits: list[tuple[int, bytes]]
) -> None:
    api_key, version = _SERVED[which]
    schema = request_schema(api_key, version)
    buf = io.BytesIO()
    entity_writer(schema)(buf, build(schema, _sample(schema)))
    body = bytearray(buf.getvalue())
    for at, chunk in edits:
        at = at % (len(body) + 1)
        body[at : at + len(chunk)] = chunk
    try:
        request = decode_request(api_key, version, bytes(body))
    except DecodeError:
        return
    _assert_no_null_where_schema_has_none(request)


def _assert_no_null_where_schema_has_none(entity: Any) -> None:
    """What a handler may rely on: a field that is not optional is never None."""
    for f in fields(entity):
        value = getattr(entity, f.name)
        if value is None:
            assert is_optional(f), f"{type(entity).__qualname__}.{f.name} decoded as None"
            continue
        kind = classify_field(f)
        if isinstance(kind, EntityField):
            _assert_no_null_where_schema_has_none(value)
        elif isinstance(kind, EntityTupleField):
            for item in value:
                _assert_no_null_where_schema_has_none(item)


@pytest.mark.parametrize(
    ("api_key", "version", "body_hex"),
    [
        # found by reliability/fuzz_wire.py: each made a handler iterate None
        (2, 1, "00000001ffffffff"),  # ListOffsets v1: topics -1
        (2, 6, "000000010000"),  # ListOffsets v6: topics compact null
        (10, 0, "ffff"),  # FindCoordinator v0: key null
        (8, 2, "00016100000001ffff"),  # OffsetCommit v2: member id null
        (1, 4, "ffffffff000001f400000001000fffff00ffffffff"),  # Fetch v4: topics -1
    ],
)
def test_null_where_the_schema_has_no_null_is_refused(
    api_key: int, version: int, body_hex: str
) -> None:
    with pytest.raises(DecodeError, match="cannot be null"):
        decode_request(api_key, version, bytes.fromhex(body_hex))


def test_null_where_the_schema_allows_it_is_kept() -> None:
    # Metadata v4: a null topic list asks for every topic
    request = decode_request(3, 4, bytes.fromhex("ffffffff01"))
    assert request.topics is None
