"""Message bodies from kio's generated schemas, for every API and version.

Handlers build responses as plain dicts in Kafka's (snake_cased) field names;
`build` turns a dict into the kio entity of whatever version was negotiated,
dropping fields that version lacks and filling the ones the handler did not
name with the schema's default. So one handler serves every version.
"""

from __future__ import annotations

import datetime
import io
import uuid
from collections.abc import Callable, Mapping
from dataclasses import MISSING, Field, fields
from functools import cache
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
    get_schema_field_type,
    is_optional,
)

from muster.protocol.bounds import BoundsError, check_request
from muster.protocol.direct_writer import encode_direct
from muster.protocol.entities import schema_reader, schema_writer
from muster.protocol.fetch_response import Chunks, encode_fetch_response
from muster.protocol.legacy import legacy_schema
from muster.protocol.small_responses import WRITERS

_EPOCH = datetime.datetime.fromtimestamp(0, datetime.UTC)
_FETCH = 1


class DecodeError(ValueError):
    """A request body that does not parse as its declared API and version."""


@cache
def request_schema(api_key: int, version: int) -> type:
    return legacy_schema(api_key, version, "request") or load_request_schema(api_key, version)


@cache
def response_schema(api_key: int, version: int) -> type:
    return legacy_schema(api_key, version, "response") or load_response_schema(api_key, version)


def decode_request(api_key: int, version: int, body: bytes | memoryview, offset: int = 0) -> Any:
    schema = request_schema(api_key, version)
    try:
        check_request(schema, body, offset)  # before kio reserves what a count claims
    except BoundsError as exc:
        raise DecodeError(f"api {api_key} v{version}: {exc}") from exc
    try:
        entity, _size = schema_reader(schema)(body, offset)
    except Exception as exc:  # kio raises assorted errors on garbage
        raise DecodeError(f"api {api_key} v{version}: {exc}") from exc
    return entity


class SameAnswer:
    """An answer that is the same for every request (ApiVersions, for one API
    table): kio's generic writer takes ~0.8 ms for its ~70 entries, which every
    new connection would otherwise pay; encoded once per version instead."""

    __slots__ = ("_bodies", "payload")

    def __init__(self, payload: Mapping[str, Any]) -> None:
        self.payload = payload
        self._bodies: dict[tuple[int, int], bytes] = {}

    def body(self, api_key: int, version: int) -> bytes:
        body = self._bodies.get((api_key, version))
        if body is None:
            body = encode_response(api_key, version, self.payload)
            self._bodies[(api_key, version)] = body
        return body


def encode_response(api_key: int, version: int, payload: Mapping[str, Any] | Any) -> bytes:
    body = encode_response_view(api_key, version, payload)
    return b"".join(body) if isinstance(body, Chunks) else bytes(body)


def encode_response_view(
    api_key: int, version: int, payload: Mapping[str, Any] | Any
) -> memoryview | bytes | bytearray | Chunks:
    """The encoded body without a final copy (Fetch answers carry megabytes: theirs
    may come as Chunks, the record sets not copied into one buffer)."""
    if isinstance(payload, SameAnswer):
        return payload.body(api_key, version)
    if api_key == _FETCH:
        fast = encode_fetch_response(version, payload)
        if fast is not None:
            return fast
    written = WRITERS.get(api_key)
    if written is not None:
        body = written(version, payload)
        if body is not None:
            return body
    schema = response_schema(api_key, version)
    direct = encode_direct(schema, payload)
    if direct is not None:
        return direct
    entity = build(schema, payload)
    buf = io.BytesIO()
    schema_writer(schema)(buf, entity)
    return buf.getbuffer()


def _primitive(kafka_type: str, optional: bool) -> Callable[[Any], Any]:
    def convert(value: Any) -> Any:
        if value is None:
            return None
        if kafka_type == "timedelta_i32" or kafka_type == "timedelta_i64":
            if isinstance(value, datetime.timedelta):
                return value
            return datetime.timedelta(milliseconds=value)
        if kafka_type == "datetime_i64":
            if isinstance(value, datetime.datetime):
                return value
            return _EPOCH + datetime.timedelta(milliseconds=value)
        if kafka_type == "error_code":
            return ErrorCode(int(value))
        if kafka_type == "uuid":
            return value if isinstance(value, uuid.UUID) else uuid.UUID(int=int(value))
        return value

    return convert


def _zero(kafka_type: str) -> Any:
    if kafka_type in ("string",):
        return ""
    if kafka_type in ("bytes", "records"):
        return b""
    if kafka_type == "bool":
        return False
    if kafka_type == "uuid":
        return uuid.UUID(int=0)
    return 0


def _field_plan(f: Field[Any]) -> tuple[str, Callable[[Any], Any], bool, Callable[[], Any]]:
    """(name, convert, has_default, make_fallback) for one schema field."""
    kind = classify_field(f)
    optional = is_optional(f)
    has_default = f.default is not MISSING or f.default_factory is not MISSING
    if isinstance(kind, EntityField):
        sub = kind.type_

        def convert_entity(v: Any) -> Any:
            return None if v is None else build(sub, v)

        return f.name, convert_entity, has_default, lambda: None if optional else build(sub, {})
    if isinstance(kind, EntityTupleField):
        sub = kind.type_

        def convert_entities(v: Any) -> Any:
            return None if v is None else tuple(build(sub, item) for item in v)

        return f.name, convert_entities, has_default, lambda: None if optional else ()
    kafka_type = get_schema_field_type(f)
    conv = _primitive(kafka_type, optional)
    if isinstance(kind, PrimitiveTupleField):

        def convert_items(v: Any) -> Any:
            return None if v is None else tuple(conv(x) for x in v)

        return f.name, convert_items, has_default, lambda: None if optional else ()
    assert isinstance(kind, PrimitiveField)
    zero = _zero(kafka_type)
    return f.name, conv, has_default, lambda: None if optional else conv(zero)


@cache
def _plan(schema: type) -> tuple[tuple[str, Callable[[Any], Any], bool, Callable[[], Any]], ...]:
    return tuple(_field_plan(f) for f in fields(schema))


def build(schema: type, data: Mapping[str, Any] | Any) -> Any:
    """A kio entity of `schema` from a dict (or an entity of that very schema)."""
    if type(data) is schema:
        return data
    if not isinstance(data, Mapping):
        raise TypeError(f"cannot build {schema.__qualname__} from {type(data).__name__}")
    kwargs: dict[str, Any] = {}
    for name, convert, has_default, fallback in _plan(schema):
        if name in data:
            kwargs[name] = convert(data[name])
        elif not has_default:
            kwargs[name] = fallback()
    return schema(**kwargs)
