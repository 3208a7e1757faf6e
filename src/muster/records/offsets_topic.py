"""Kafka's `__consumer_offsets` record schemas, declared once, with one codec.

Every record of the offsets topic is a (key, value) pair; both start with an
int16 *version* followed by the fields of that version, in Kafka's classic
(non-flexible) encoding: int16/int32/int64 big-endian, `string` = int16 length
+ UTF-8, `nullable string` = the same with length -1 for null, `bytes` = int32
length + data, `array` = int32 count + elements. Kafka tools (Burrow,
kafka-console-consumer's offsets formatter) read exactly this.

| record | key version | value versions |
|---|---|---|
| OffsetCommit | 0, 1 (we write 1) | 0-3 (we write 3; 1 when an expire timestamp is set) |
| GroupMetadata | 2 | 0-3 (we write 3) |

A tombstone is a key with a null value (a deletion in the compacted topic).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

# --------------------------------------------------------------------------
# Typed records (plain data)


@dataclass(frozen=True)
class OffsetCommitKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True)
class OffsetCommitValue:
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = -1
    expire_timestamp: int = -1


@dataclass(frozen=True)
class GroupMetadataKey:
    group: str


@dataclass(frozen=True)
class MemberMetadataValue:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int = -1
    members: tuple[MemberMetadataValue, ...] = field(default_factory=tuple)


# --------------------------------------------------------------------------
# THE schema table: (field, type, first version, last version or None, default)
# Types: int16, int32, int64, string, nullable_string, bytes, [Schema name].

Field = tuple[str, str, int, int | None, Any]


@dataclass(frozen=True)
class Schema:
    name: str
    cls: type
    min_version: int
    max_version: int
    fields: tuple[Field, ...]


SCHEMAS: dict[str, Schema] = {
    s.name: s
    for s in (
        Schema(
            "OffsetCommitKey",
            OffsetCommitKey,
            0,
            1,
            (
                ("group", "string", 0, None, ""),
                ("topic", "string", 0, None, ""),
                ("partition", "int32", 0, None, 0),
            ),
        ),
        Schema(
            "OffsetCommitValue",
            OffsetCommitValue,
            0,
            3,
            (
                ("offset", "int64", 0, None, -1),
                ("leader_epoch", "int32", 3, None, -1),
                ("metadata", "string", 0, None, ""),
                ("commit_timestamp", "int64", 0, None, -1),
                ("expire_timestamp", "int64", 1, 1, -1),
            ),
        ),
        Schema(
            "GroupMetadataKey",
            GroupMetadataKey,
            2,
            2,
            (("group", "string", 0, None, ""),),
        ),
        Schema(
            "GroupMetadataValue",
            GroupMetadataValue,
            0,
            3,
            (
                ("protocol_type", "string", 0, None, ""),
                ("generation", "int32", 0, None, 0),
                ("protocol", "nullable_string", 0, None, None),
                ("leader", "nullable_string", 0, None, None),
                ("current_state_timestamp", "int64", 2, None, -1),
                ("members", "[MemberMetadata]", 0, None, ()),
            ),
        ),
        Schema(
            "MemberMetadata",
            MemberMetadataValue,
            0,
            3,
            (
                ("member_id", "string", 0, None, ""),
                ("group_instance_id", "nullable_string", 3, None, None),
                ("client_id", "string", 0, None, ""),
                ("client_host", "string", 0, None, ""),
                ("rebalance_timeout", "int32", 1, None, -1),
                ("session_timeout", "int32", 0, None, 0),
                ("subscription", "bytes", 0, None, b""),
                ("assignment", "bytes", 0, None, b""),
            ),
        ),
    )
}

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSION = 3
OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY = 1
GROUP_METADATA_VALUE_VERSION = 3


class RecordFormatError(ValueError):
    pass


# --------------------------------------------------------------------------
# The generic codec

_INTS = {"int16": struct.Struct(">h"), "int32": struct.Struct(">i"), "int64": struct.Struct(">q")}


def _present(f: Field, version: int) -> bool:
    _, _, lo, hi, _ = f
    return version >= lo and (hi is None or version <= hi)


def _write(out: bytearray, kind: str, value: Any, version: int) -> None:
    if kind in _INTS:
        try:
            out += _INTS[kind].pack(value)
        except struct.error as exc:
            raise RecordFormatError(f"{value!r} does not fit {kind}") from exc
    elif kind in ("string", "nullable_string"):
        if value is None:
            if kind == "string":
                raise RecordFormatError("null in a non-nullable string")
            out += _INTS["int16"].pack(-1)
        else:
            data = value.encode("utf-8")
            out += _INTS["int16"].pack(len(data))
            out += data
    elif kind == "bytes":
        out += _INTS["int32"].pack(len(value))
        out += value
    elif kind.startswith("["):
        schema = SCHEMAS[kind[1:-1]]
        out += _INTS["int32"].pack(len(value))
        for item in value:
            _write_struct(out, schema, item, version)
    else:  # pragma: no cover - table error
        raise RecordFormatError(f"unknown type {kind}")


def _write_struct(out: bytearray, schema: Schema, obj: Any, version: int) -> None:
    for f in schema.fields:
        if _present(f, version):
            _write(out, f[1], getattr(obj, f[0]), version)


def _read(buf: memoryview, pos: int, kind: str, version: int) -> tuple[Any, int]:
    try:
        if kind in _INTS:
            st = _INTS[kind]
            return st.unpack_from(buf, pos)[0], pos + st.size
        if kind in ("string", "nullable_string"):
            (n,) = _INTS["int16"].unpack_from(buf, pos)
            pos += 2
            if n < 0:
                if kind == "string":
                    raise RecordFormatError("null in a non-nullable string")
                return None, pos
            if pos + n > len(buf):
                raise RecordFormatError("string runs past the end")
            return bytes(buf[pos : pos + n]).decode("utf-8"), pos + n
        if kind == "bytes":
            (n,) = _INTS["int32"].unpack_from(buf, pos)
            pos += 4
            if n < 0 or pos + n > len(buf):
                raise RecordFormatError("bad bytes length")
            return bytes(buf[pos : pos + n]), pos + n
        if kind.startswith("["):
            schema = SCHEMAS[kind[1:-1]]
            (n,) = _INTS["int32"].unpack_from(buf, pos)
            pos += 4
            if n < 0:
                raise RecordFormatError("bad array length")
            items = []
            for _ in range(n):
                item, pos = _read_struct(buf, pos, schema, version)
                items.append(item)
            return tuple(items), pos
    except struct.error as exc:
        raise RecordFormatError(str(exc)) from exc
    raise RecordFormatError(f"unknown type {kind}")  # pragma: no cover


def _read_struct(buf: memoryview, pos: int, schema: Schema, version: int) -> tuple[Any, int]:
    kwargs: dict[str, Any] = {}
    for f in schema.fields:
        if _present(f, version):
            kwargs[f[0]], pos = _read(buf, pos, f[1], version)
        else:
            kwargs[f[0]] = f[4]
    return schema.cls(**kwargs), pos


def encode(schema_name: str, obj: Any, version: int) -> bytes:
    """Version-prefixed encoding of `obj` with the named schema."""
    schema = SCHEMAS[schema_name]
    if not schema.min_version <= version <= schema.max_version:
        raise RecordFormatError(f"{schema_name} has no version {version}")
    out = bytearray(_INTS["int16"].pack(version))
    _write_struct(out, schema, obj, version)
    return bytes(out)


def decode(schema_name: str, data: bytes) -> tuple[int, Any]:
    """(version, record) from version-prefixed bytes; trailing bytes are refused."""
    schema = SCHEMAS[schema_name]
    buf = memoryview(data)
    if len(buf) < 2:
        raise RecordFormatError("record shorter than its version")
    (version,) = _INTS["int16"].unpack_from(buf, 0)
    if not schema.min_version <= version <= schema.max_version:
        raise RecordFormatError(f"{schema_name} has no version {version}")
    obj, pos = _read_struct(buf, 2, schema, version)
    if pos != len(buf):
        raise RecordFormatError(f"{len(buf) - pos} trailing bytes after {schema_name}")
    return version, obj


# --------------------------------------------------------------------------
# Keys and values of the offsets topic


def encode_key(key: OffsetCommitKey | GroupMetadataKey) -> bytes:
    if isinstance(key, OffsetCommitKey):
        return encode("OffsetCommitKey", key, OFFSET_COMMIT_KEY_VERSION)
    return encode("GroupMetadataKey", key, GROUP_METADATA_KEY_VERSION)


def decode_key(data: bytes) -> OffsetCommitKey | GroupMetadataKey | None:
    """The key, or None for a key version we do not know (Kafka skips those too:
    e.g. transaction markers or newer coordinators' record types)."""
    if len(data) < 2:
        raise RecordFormatError("key shorter than its version")
    version = _INTS["int16"].unpack_from(data, 0)[0]
    if version in (0, 1):
        return decode("OffsetCommitKey", data)[1]
    if version == 2:
        return decode("GroupMetadataKey", data)[1]
    return None


def encode_offset_commit_value(value: OffsetCommitValue) -> bytes:
    version = (
        OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY
        if value.expire_timestamp >= 0
        else OFFSET_COMMIT_VALUE_VERSION
    )
    return encode("OffsetCommitValue", value, version)


def decode_offset_commit_value(data: bytes) -> OffsetCommitValue:
    return decode("OffsetCommitValue", data)[1]


def encode_group_metadata_value(value: GroupMetadataValue) -> bytes:
    return encode("GroupMetadataValue", value, GROUP_METADATA_VALUE_VERSION)


def decode_group_metadata_value(data: bytes) -> GroupMetadataValue:
    version, value = decode("GroupMetadataValue", data)
    if version == 0:
        # v0 had no rebalance timeout: Kafka uses the session timeout.
        members = tuple(
            MemberMetadataValue(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.session_timeout,
                m.session_timeout,
                m.subscription,
                m.assignment,
            )
            for m in value.members
        )
        value = GroupMetadataValue(
            value.protocol_type,
            value.generation,
            value.protocol,
            value.leader,
            value.current_state_timestamp,
            members,
        )
    return value


def offset_commit_record(
    group: str, topic: str, partition: int, value: OffsetCommitValue | None
) -> tuple[bytes, bytes | None]:
    key = encode_key(OffsetCommitKey(group, topic, partition))
    return key, None if value is None else encode_offset_commit_value(value)


def group_metadata_record(
    group: str, value: GroupMetadataValue | None
) -> tuple[bytes, bytes | None]:
    key = encode_key(GroupMetadataKey(group))
    return key, None if value is None else encode_group_metadata_value(value)
