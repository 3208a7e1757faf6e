"""Answers written straight from a handler's dict, by a writer compiled once
per response schema from kio's own field list.

kio's generic path builds an entity for every level of the answer (with the
type checks of kio's phantom types) and then writes it field by field through
a BytesIO: for a Metadata, JoinGroup or SyncGroup answer that was most of the
broker's CPU per request. This writer walks the same fields in the same order
from the schema kio generated, so kio stays the one schema source; runs of
fixed-size fields are one struct call, and nothing is built in between.

It takes the shapes handlers produce (dicts and lists, the values `build`
accepts) and gives kio's bytes (tested for every response version muster
serves). Anything else — an entity instead of a dict, a tagged field the
payload sets, a value kio would convert or refuse — raises `Generic`, and the
caller goes kio's way, which gives the same bytes or the same error.
"""

from __future__ import annotations

import datetime
import struct
import uuid
from collections.abc import Callable
from dataclasses import MISSING, Field, fields
from functools import cache
from typing import Any

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

from muster.protocol.fetch_response import _uvarint

# out, value -> None
Put = Callable[[bytearray, Any], None]
Write = Callable[[bytearray, Any], None]

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_MS = datetime.timedelta(milliseconds=1)
_ZERO_UUID = bytes(16)
_FORMAT = {
    "bool": "?",
    "int8": "b",
    "uint8": "B",
    "int16": "h",
    "uint16": "H",
    "error_code": "h",
    "int32": "i",
    "uint32": "I",
    "timedelta_i32": "i",
    "int64": "q",
    "uint64": "Q",
    "float64": "d",
    "timedelta_i64": "q",
    "datetime_i64": "q",
}


class Generic(Exception):
    """This payload goes kio's way."""


def _ms(value: Any) -> int:
    """A duration as build + kio write it: ms, or a timedelta rounded to ms."""
    if type(value) is int:
        return value
    if not isinstance(value, datetime.timedelta):
        value = datetime.timedelta(milliseconds=value)
    return round(value.total_seconds() * 1000)


def _epoch_ms(value: Any) -> int:
    if type(value) is int:
        return value
    if not isinstance(value, datetime.datetime):
        raise Generic
    return round(value.timestamp() * 1000)


def _nullable_epoch_ms(value: Any) -> int:
    return -1 if value is None else _epoch_ms(value)


def _error(value: Any) -> int:
    # an int that is no error code: build would refuse it
    return value.value if isinstance(value, ErrorCode) else ErrorCode(value).value


_CONVERT: dict[str, Callable[[Any], Any]] = {
    "error_code": _error,
    "timedelta_i32": _ms,
    "timedelta_i64": _ms,
    "datetime_i64": _epoch_ms,
}


def _sized_put(kafka_type: str, flexible: bool, nullable: bool) -> Put:
    """A string or a byte string: compact (uvarint n + 1) when flexible, else
    int16 (strings) or int32 (bytes) sized; null as 0 or -1."""
    text = kafka_type == "string"
    legacy = _I16 if text else _I32

    def put(out: bytearray, value: Any) -> None:
        if value is None:
            if not nullable:
                raise Generic
            if flexible:
                out.append(0)
            else:
                out += legacy.pack(-1)
            return
        if text:
            if type(value) is not str:
                raise Generic
            raw: Any = value.encode()
        else:
            if not isinstance(value, bytes | bytearray | memoryview):
                raise Generic
            raw = value
        if flexible:
            _uvarint(out, len(raw) + 1)
        else:
            out += legacy.pack(len(raw))
        out += raw

    return put


def _uuid_put(out: bytearray, value: Any) -> None:
    if value is None:
        out += _ZERO_UUID
    elif isinstance(value, uuid.UUID):
        out += value.bytes
    else:
        out += uuid.UUID(int=int(value)).bytes


def _primitive_put(kafka_type: str, flexible: bool, nullable: bool) -> Put:
    if kafka_type in ("string", "bytes", "records"):
        return _sized_put(kafka_type, flexible, nullable)
    if kafka_type == "uuid":
        return _uuid_put
    fmt = _FORMAT.get(kafka_type)
    if fmt is None:
        raise TypeError(kafka_type)
    one = struct.Struct(">" + fmt)
    convert = _nullable_epoch_ms if kafka_type == "datetime_i64" and nullable else None
    convert = convert or _CONVERT.get(kafka_type)

    def put(out: bytearray, value: Any) -> None:
        out += one.pack(convert(value) if convert is not None else value)

    return put


def _array_put(item: Put, flexible: bool, nullable: bool) -> Put:
    def put(out: bytearray, items: Any) -> None:
        if items is None:
            if not nullable:
                raise Generic
            if flexible:
                out.append(0)
            else:
                out += _I32.pack(-1)
            return
        if flexible:
            _uvarint(out, len(items) + 1)
        else:
            out += _I32.pack(len(items))
        for value in items:
            item(out, value)

    return put


def _default(f: Field[Any], kafka_type: str | None, array: bool) -> Any:
    """What `build` puts in a field the payload leaves out."""
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    if is_optional(f):
        return None
    if array or kafka_type is None:
        return ()
    if kafka_type == "string":
        return ""
    if kafka_type in ("bytes", "records"):
        return b""
    if kafka_type == "uuid":
        return None  # written as the zero uuid, as kio writes UUID(int=0)
    return 0


def _fixed_run(run: list[tuple[str, Any, Callable[[Any], Any] | None, str]]) -> Write:
    """Consecutive fixed-size fields: one struct call."""
    packer = struct.Struct(">" + "".join(fmt for _, _, _, fmt in run))
    names = tuple((name, default, convert) for name, default, convert, _ in run)

    def write(out: bytearray, d: Any) -> None:
        get = d.get
        out += packer.pack(
            *[
                convert(get(name, default)) if convert is not None else get(name, default)
                for name, default, convert in names
            ]
        )

    return write


def _field_write(name: str, default: Any, put: Put) -> Write:
    def write(out: bytearray, d: Any) -> None:
        put(out, d.get(name, default))

    return write


@cache
def entity_write(schema: type) -> Write | None:
    """The writer of one dict as `schema`, or None if a field is of a kind this
    writer does not write (a nested struct that is not in an array)."""
    flexible = bool(schema.__flexible__)
    steps: list[Write] = []
    run: list[tuple[str, Any, Callable[[Any], Any] | None, str]] = []
    tagged: list[str] = []
    for f in fields(schema):
        if get_field_tag(f) is not None:
            tagged.append(f.name)
            continue
        kind = classify_field(f)
        optional = is_optional(f)
        if isinstance(kind, EntityTupleField):
            inner = entity_write(kind.type_)
            if inner is None:
                return None
            put: Put = _array_put(inner, flexible, optional)
            kafka_type = None
        elif isinstance(kind, EntityField):
            return None
        else:
            kafka_type = get_schema_field_type(f)
            if isinstance(kind, PrimitiveTupleField):
                item = _primitive_put(kafka_type, flexible, False)
                put = _array_put(item, flexible, optional)
            else:
                fmt = _FORMAT.get(kafka_type)
                if fmt is not None and not (optional and kafka_type == "datetime_i64"):
                    default = _default(f, kafka_type, False)
                    run.append((f.name, default, _CONVERT.get(kafka_type), fmt))
                    continue
                put = _primitive_put(kafka_type, flexible, optional)
        if run:
            steps.append(_fixed_run(run))
            run = []
        array = isinstance(kind, EntityTupleField | PrimitiveTupleField)
        steps.append(_field_write(f.name, _default(f, kafka_type, array), put))
    if run:
        steps.append(_fixed_run(run))
    tags = frozenset(tagged)
    flat = tuple(steps)

    def write(out: bytearray, d: Any) -> None:
        if type(d) is not dict:
            raise Generic
        for step in flat:
            step(out, d)
        if flexible:
            if tags and not tags.isdisjoint(d):
                raise Generic  # a tagged field set: kio decides whether it differs from its default
            out.append(0)

    return write


def encode_direct(schema: type, payload: Any) -> bytearray | None:
    """The body of an answer of `schema`, or None: the caller goes kio's way."""
    write = entity_write(schema)
    if write is None:
        return None
    out = bytearray()
    try:
        write(out, payload)
    except (Generic, TypeError, ValueError, AttributeError, struct.error, OverflowError):
        return None
    return out
