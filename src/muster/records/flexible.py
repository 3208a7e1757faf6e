"""Kafka's *flexible* encoding (KIP-482) for the schema table of
`offsets_topic`: what the ConsumerGroup* values of `__consumer_offsets` use.

Differences from the classic encoding `offsets_topic` compiles:
- strings, bytes and arrays are "compact": an unsigned varint of length + 1
  (0 for null), then the data;
- every struct (the value itself and each nested one) ends with a tagged-field
  section: a varint count, then per field its tag, its size and its data, tags
  ascending. A tagged field is written only when it differs from its default;
  a nullable struct in a tagged field is preceded by a presence byte 1, as
  Kafka's generated code writes it; tags a reader does not know are skipped;
- `uuid` is 16 bytes, most significant half first (uuid.UUID.bytes).

Types in the table, besides offsets_topic's: `uuid`; `[int32]`, `[string]`,
`[uuid]` (arrays of primitives, no per-element tag section); `{Name}` a
nullable single struct. Structs nested in a flexible struct are flexible.

These records are few (one per member or group change), so this codec is
interpreted from the table instead of compiled like the OffsetCommit path.
It must not import `offsets_topic` (which imports it): the schema table is
passed in.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Mapping
from typing import Any

_INTS = {
    "int8": struct.Struct(">b"),
    "int16": struct.Struct(">h"),
    "int32": struct.Struct(">i"),
    "int64": struct.Struct(">q"),
}

Reader = Callable[[bytes, int, int], tuple[Any, int]]
Writer = Callable[[bytearray, Any], None]


class FlexibleFormatError(ValueError):
    """Raised for malformed flexible data; offsets_topic turns it into its own error."""


def _read_uvarint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= end:
            raise FlexibleFormatError("varint runs past the end")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise FlexibleFormatError("varint longer than 5 bytes")


def _write_uvarint(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _take(buf: bytes, pos: int, end: int, n: int) -> int:
    if n < 0 or pos + n > end:
        raise FlexibleFormatError("field runs past the end")
    return pos + n


class Codec:
    """Reader and writer of one schema table's flexible structs."""

    def __init__(self, schemas: Mapping[str, Any]) -> None:
        self.schemas = schemas

    # -- reading --------------------------------------------------------------

    def read_struct(
        self, name: str, version: int, buf: bytes, pos: int, end: int
    ) -> tuple[Any, int]:
        schema = self.schemas[name]
        tags = dict(schema.tags)
        values: dict[str, Any] = {}
        for fname, kind, lo, hi, default in schema.fields:
            present = version >= lo and (hi is None or version <= hi)
            if not present or fname in tags:
                values[fname] = default
                continue
            values[fname], pos = self.read_value(kind, version, buf, pos, end)
        count, pos = _read_uvarint(buf, pos, end)
        by_tag = {tag: fname for fname, tag in schema.tags}
        kinds = {f[0]: f[1] for f in schema.fields}
        for _ in range(count):
            tag, pos = _read_uvarint(buf, pos, end)
            size, pos = _read_uvarint(buf, pos, end)
            stop = _take(buf, pos, end, size)
            fname = by_tag.get(tag)
            if fname is not None:
                kind = kinds[fname]
                if kind.startswith("{"):
                    values[fname], used = self._read_optional(kind[1:-1], version, buf, pos, stop)
                else:
                    values[fname], used = self.read_value(kind, version, buf, pos, stop)
                if used != stop:
                    raise FlexibleFormatError(f"tagged field {fname} has trailing bytes")
            pos = stop
        return schema.cls(*(values[f[0]] for f in schema.fields)), pos

    def _read_optional(
        self, name: str, version: int, buf: bytes, pos: int, end: int
    ) -> tuple[Any, int]:
        stop = _take(buf, pos, end, 1)
        if buf[pos] >= 0x80:  # int8 -1: null
            return None, stop
        return self.read_struct(name, version, buf, stop, end)

    def read_value(
        self, kind: str, version: int, buf: bytes, pos: int, end: int
    ) -> tuple[Any, int]:
        if kind in _INTS:
            st = _INTS[kind]
            stop = _take(buf, pos, end, st.size)
            return st.unpack_from(buf, pos)[0], stop
        if kind == "uuid":
            stop = _take(buf, pos, end, 16)
            return uuid.UUID(bytes=bytes(buf[pos:stop])), stop
        if kind in ("string", "nullable_string", "bytes"):
            n, pos = _read_uvarint(buf, pos, end)
            if n == 0:
                if kind != "nullable_string":
                    raise FlexibleFormatError(f"null in a non-nullable {kind}")
                return None, pos
            stop = _take(buf, pos, end, n - 1)
            raw = bytes(buf[pos:stop])
            return (raw if kind == "bytes" else raw.decode("utf-8")), stop
        if kind.startswith("["):
            n, pos = _read_uvarint(buf, pos, end)
            if n == 0:
                raise FlexibleFormatError("null array")
            items = []
            inner = kind[1:-1]
            for _ in range(n - 1):
                if inner in self.schemas:
                    item, pos = self.read_struct(inner, version, buf, pos, end)
                else:
                    item, pos = self.read_value(inner, version, buf, pos, end)
                items.append(item)
            return tuple(items), pos
        if kind.startswith("{"):
            return self._read_optional(kind[1:-1], version, buf, pos, end)
        raise FlexibleFormatError(f"unknown type {kind}")  # pragma: no cover - table error

    # -- writing --------------------------------------------------------------

    def write_struct(self, name: str, version: int, out: bytearray, obj: Any) -> None:
        schema = self.schemas[name]
        tags = dict(schema.tags)
        tagged: list[tuple[int, bytes]] = []
        for fname, kind, lo, hi, default in schema.fields:
            if not (version >= lo and (hi is None or version <= hi)):
                continue
            value = getattr(obj, fname)
            if fname not in tags:
                self.write_value(kind, version, out, value)
            elif value != default:
                data = bytearray()
                self.write_value(kind, version, data, value)
                tagged.append((tags[fname], bytes(data)))
        _write_uvarint(out, len(tagged))
        for tag, data in sorted(tagged):
            _write_uvarint(out, tag)
            _write_uvarint(out, len(data))
            out += data

    def write_value(self, kind: str, version: int, out: bytearray, value: Any) -> None:
        if kind in _INTS:
            out += _INTS[kind].pack(value)
        elif kind == "uuid":
            out += value.bytes
        elif kind in ("string", "nullable_string", "bytes"):
            if value is None:
                if kind != "nullable_string":
                    raise FlexibleFormatError(f"null in a non-nullable {kind}")
                _write_uvarint(out, 0)
                return
            data = value if kind == "bytes" else value.encode("utf-8")
            _write_uvarint(out, len(data) + 1)
            out += data
        elif kind.startswith("["):
            inner = kind[1:-1]
            _write_uvarint(out, len(value) + 1)
            for item in value:
                if inner in self.schemas:
                    self.write_struct(inner, version, out, item)
                else:
                    self.write_value(inner, version, out, item)
        elif kind.startswith("{"):
            if value is None:
                out.append(0xFF)
            else:
                out.append(1)
                self.write_struct(kind[1:-1], version, out, value)
        else:  # pragma: no cover - table error
            raise FlexibleFormatError(f"unknown type {kind}")

    def reader(self, name: str, version: int) -> Reader:
        def read(buf: bytes, pos: int, end: int) -> tuple[Any, int]:
            return self.read_struct(name, version, buf, pos, end)

        return read

    def writer(self, name: str, version: int) -> Writer:
        def write(out: bytearray, obj: Any) -> None:
            self.write_struct(name, version, out, obj)

        return write
