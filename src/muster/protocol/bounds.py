"""A walk over a request's wire layout that checks every length before kio reads it.

kio's native reader reserves room for an array as soon as it reads the array's
count, before it reads a single element: a count of 0xfffffffe in five bytes of
a frame made it ask for 34 GB, and the failed allocation aborted the broker.
So every request frame is walked here first, by the same schema kio decodes it
with, and refused when a count or a size claims more bytes than the frame has
left (every element of an array takes at least one byte). The walk builds no
objects; it only moves an offset.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from functools import cache

from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)

# skim(buf, pos, end) -> the offset after the value; raises BoundsError
Skim = Callable[[bytes | memoryview, int, int], int]

_FIXED = {
    "bool": 1,
    "int8": 1,
    "uint8": 1,
    "int16": 2,
    "uint16": 2,
    "error_code": 2,
    "int32": 4,
    "uint32": 4,
    "timedelta_i32": 4,
    "int64": 8,
    "uint64": 8,
    "float64": 8,
    "timedelta_i64": 8,
    "datetime_i64": 8,
    "uuid": 16,
}


class BoundsError(ValueError):
    """A count or size in the frame claims more bytes than the frame holds,
    or marks null a field the schema does not let be null (Kafka refuses that
    too: "non-nullable field ... was serialized as null"); a handler would
    otherwise meet a None where its schema promises a value."""


_NULL = "null in a field that cannot be null"


def check_request(schema: type, buf: bytes | memoryview, offset: int) -> int:
    """Where the request ends; BoundsError unless every length in it fits the frame."""
    return _entity(schema, False)(buf, offset, len(buf))


def _uvarint(buf: bytes | memoryview, pos: int, end: int) -> tuple[int, int]:
    if pos < end and buf[pos] < 0x80:  # nearly every count and size is one byte
        return buf[pos], pos + 1
    value = 0
    shift = 0
    while True:
        if pos >= end:
            raise BoundsError("frame ends inside a varint")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise BoundsError("varint longer than five bytes")


def _fixed(size: int) -> Skim:
    def skim(buf: bytes | memoryview, pos: int, end: int) -> int:
        pos += size
        if pos > end:
            raise BoundsError("frame ends inside a field")
        return pos

    return skim


def _sized(width: int, nullable: bool) -> Skim:
    """A legacy string (int16 size) or bytes (int32 size); -1 is null."""

    def skim(buf: bytes | memoryview, pos: int, end: int) -> int:
        if pos + width > end:
            raise BoundsError("frame ends inside a size")
        size = int.from_bytes(buf[pos : pos + width], "big", signed=True)
        pos += width
        if size < -1 or (size == -1 and not nullable):
            raise BoundsError(_NULL if size == -1 else f"negative size {size}")
        if size > 0:
            pos += size
            if pos > end:
                raise BoundsError(f"size {size} runs past the frame")
        return pos

    return skim


def _compact_sized(nullable: bool) -> Skim:
    """A compact string or bytes: uvarint size + 1, 0 is null."""

    def skim(buf: bytes | memoryview, pos: int, end: int) -> int:
        size, pos = _uvarint(buf, pos, end)
        if size > 1:
            pos += size - 1
            if pos > end:
                raise BoundsError(f"size {size - 1} runs past the frame")
        elif size == 0 and not nullable:
            raise BoundsError(_NULL)
        return pos

    return skim


def _array(item: Skim, compact: bool, nullable: bool) -> Skim:
    def skim(buf: bytes | memoryview, pos: int, end: int) -> int:
        if compact:
            count, pos = _uvarint(buf, pos, end)
            count -= 1  # 0 is a null array
        else:
            if pos + 4 > end:
                raise BoundsError("frame ends inside an array count")
            count = int.from_bytes(buf[pos : pos + 4], "big", signed=True)
            pos += 4
            if count < -1:
                raise BoundsError(f"negative array count {count}")
        if count == -1 and not nullable:
            raise BoundsError(_NULL)
        if count > end - pos:
            raise BoundsError(f"array of {count} items in {end - pos} bytes")
        for _ in range(count):
            pos = item(buf, pos, end)
        return pos

    return skim


def _primitive(kafka_type: str, flexible: bool, legacy_string: bool, nullable: bool) -> Skim:
    size = _FIXED.get(kafka_type)
    if size is not None:
        return _fixed(size)
    if kafka_type in ("string", "bytes", "records"):
        if flexible and not legacy_string:
            return _compact_sized(nullable)
        return _sized(2 if kafka_type == "string" else 4, nullable)
    raise TypeError(f"no bounds walk for kafka type {kafka_type!r}")


def _nullable(inner: Skim) -> Skim:
    def skim(buf: bytes | memoryview, pos: int, end: int) -> int:
        if pos >= end:
            raise BoundsError("frame ends inside a struct marker")
        marker = buf[pos]
        pos += 1
        return pos if marker == 0xFF else inner(buf, pos, end)

    return skim


@cache
def _entity(schema: type, nullable: bool) -> Skim:
    flexible = bool(schema.__flexible__)
    header = schema.__name__ == "RequestHeader"
    plain: list[Skim | int] = []  # an int: that many fixed bytes
    tagged: dict[int, Skim] = {}
    for field in fields(schema):
        tag = get_field_tag(field)
        kind = classify_field(field)
        walk: Skim | int
        if isinstance(kind, EntityField):
            walk = _entity(kind.type_, tag is None and is_optional(field))
        elif isinstance(kind, EntityTupleField):
            walk = _array(_entity(kind.type_, False), flexible, is_optional(field))
        else:
            kafka_type = get_schema_field_type(field)
            legacy = header and field.name == "client_id"  # always a legacy string
            if isinstance(kind, PrimitiveTupleField):
                item = _primitive(kafka_type, flexible, legacy, False)
                walk = _array(item, flexible, is_optional(field))
            else:
                assert isinstance(kind, PrimitiveField)
                walk = _FIXED.get(kafka_type) or _primitive(
                    kafka_type, flexible, legacy, is_optional(field)
                )
        if tag is not None:
            tagged[int(tag)] = _fixed(walk) if isinstance(walk, int) else walk
        elif isinstance(walk, int) and plain and isinstance(plain[-1], int):
            plain[-1] += walk  # one bounds step for a run of fixed-size fields
        else:
            plain.append(walk)
    steps = tuple(_fixed(w) if isinstance(w, int) else w for w in plain)

    def skim(buf: bytes | memoryview, pos: int, end: int) -> int:
        for walk in steps:
            pos = walk(buf, pos, end)
        if flexible:
            pos = _tags(tagged, buf, pos, end)
        return pos

    return _nullable(skim) if nullable else skim


def skip_tagged_fields(buf: bytes | memoryview, pos: int, end: int) -> int:
    """Past a tagged-field section none of whose tags are known (a request header's)."""
    return _tags({}, buf, pos, end)


def _tags(known: dict[int, Skim], buf: bytes | memoryview, pos: int, end: int) -> int:
    if pos < end and buf[pos] == 0:  # no tagged fields, the usual case
        return pos + 1
    count, pos = _uvarint(buf, pos, end)
    if count > end - pos:
        raise BoundsError(f"{count} tagged fields in {end - pos} bytes")
    for _ in range(count):
        tag, pos = _uvarint(buf, pos, end)
        size, pos = _uvarint(buf, pos, end)
        stop = pos + size
        if stop > end:
            raise BoundsError(f"tagged field of {size} bytes runs past the frame")
        walk = known.get(tag)
        if walk is not None:
            walk(buf, pos, stop)
        pos = stop
    return pos
