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
| ConsumerGroup* (KIP-848) | 3-8, 16 | 0, flexible (`modern_group_records`) |

Schemas with `flexible_from` set use Kafka's flexible encoding from that
version on (compact lengths, tagged fields): see `flexible.py`.

A tombstone is a key with a null value (a deletion in the compacted topic).
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from muster.records.flexible import Codec, FlexibleFormatError

# --------------------------------------------------------------------------
# Typed records (plain data)


@dataclass(slots=True)
class OffsetCommitKey:
    group: str
    topic: str
    partition: int


@dataclass(slots=True)
class OffsetCommitValue:
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = -1
    expire_timestamp: int = -1


@dataclass(slots=True)
class GroupMetadataKey:
    group: str


@dataclass(slots=True)
class MemberMetadataValue:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass(slots=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int = -1
    members: tuple[MemberMetadataValue, ...] = field(default_factory=tuple)


# --------------------------------------------------------------------------
# THE schema table: (field, type, first version, last version or None, default)
# Types: int8, int16, int32, int64, string, nullable_string, bytes, uuid, [Schema name];
# flexible schemas also uuid, [int32]/[string]/[uuid], {Schema name} (flexible.py).

Field = tuple[str, str, int, int | None, Any]


@dataclass(frozen=True)
class Schema:
    name: str
    cls: type
    min_version: int
    max_version: int
    fields: tuple[Field, ...]
    flexible_from: int | None = None  # Kafka's "flexibleVersions": "N+"
    tags: tuple[tuple[str, int], ...] = ()  # tagged fields: (field, tag)

    def flexible(self, version: int) -> bool:
        return self.flexible_from is not None and version >= self.flexible_from


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

# generated readers build records positionally: table order is dataclass order
for _schema in SCHEMAS.values():
    assert [f[0] for f in _schema.fields] == list(_schema.cls.__dataclass_fields__), _schema.name

_FLEXIBLE = Codec(SCHEMAS)

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSION = 3
OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY = 1
GROUP_METADATA_VALUE_VERSION = 3


class RecordFormatError(ValueError):
    pass


# --------------------------------------------------------------------------
# The generic codec: for each (schema, version) the table is compiled once into
# a straight-line reader and writer (generated source, no per-field dispatch;
# loading a partition decodes millions of records).

_INTS = {
    "int8": struct.Struct(">b"),
    "int16": struct.Struct(">h"),
    "int32": struct.Struct(">i"),
    "int64": struct.Struct(">q"),
}
_Reader = Callable[[bytes, int, int], tuple[Any, int]]
_Writer = Callable[[bytearray, Any], None]
_READERS: dict[tuple[str, int], _Reader] = {}
_unpack_version = _INTS["int16"].unpack_from
_pack_version = _INTS["int16"].pack
_WRITERS: dict[tuple[str, int], _Writer] = {}


def _present(f: Field, version: int) -> bool:
    _, _, lo, hi, _ = f
    return version >= lo and (hi is None or version <= hi)


def _namespace() -> dict[str, Any]:
    ns: dict[str, Any] = {"RecordFormatError": RecordFormatError, "_UUID": uuid.UUID}
    for kind, st in _INTS.items():
        ns[f"_unpack_{kind}"] = st.unpack_from
        ns[f"_pack_{kind}"] = st.pack
    return ns


def _reader(name: str, version: int) -> _Reader:
    key = (name, version)
    if key in _READERS:
        return _READERS[key]
    schema = SCHEMAS[name]
    if schema.flexible(version):
        _READERS[key] = _FLEXIBLE.reader(name, version)
        return _READERS[key]
    ns = _namespace()
    ns["_cls"] = schema.cls
    body = ["def read(buf, pos, end):"]
    args = []
    run: list[tuple[str, str]] = []  # consecutive fixed-width fields: one unpack

    def flush_run() -> None:
        if not run:
            return
        fmt = ">" + "".join(_INTS[k].format[1:] for _, k in run)
        st = struct.Struct(fmt)
        ns[f"s_{run[0][0]}"] = st.unpack_from
        names = ", ".join(v for v, _ in run)
        body.append(f"    {names}, = s_{run[0][0]}(buf, pos); pos += {st.size}")
        run.clear()

    for f in schema.fields:
        fname, kind, _, _, default = f
        var = f"v_{fname}"
        args.append(var)
        if not _present(f, version):
            ns[f"d_{fname}"] = default
            body.append(f"    {var} = d_{fname}")
            continue
        if kind in _INTS:
            run.append((var, kind))
            continue
        flush_run()
        if kind in ("string", "nullable_string"):
            null = (
                f"{var} = None"
                if kind == "nullable_string"
                else "raise RecordFormatError('null in a non-nullable string')"
            )
            body += [
                "    n = _unpack_int16(buf, pos)[0]; pos += 2",
                f"    if n < 0: {null}",
                "    else:",
                "        if pos + n > end: raise RecordFormatError('string runs past the end')",
                f"        {var} = buf[pos:pos + n].decode('utf-8'); pos += n",
            ]
        elif kind == "bytes":
            body += [
                "    n = _unpack_int32(buf, pos)[0]; pos += 4",
                "    if n < 0 or pos + n > end: raise RecordFormatError('bad bytes length')",
                f"    {var} = bytes(buf[pos:pos + n]); pos += n",
            ]
        elif kind == "uuid":  # 16 bytes (the __share_group_state keys)
            body += [
                "    if pos + 16 > end: raise RecordFormatError('uuid runs past the end')",
                f"    {var} = _UUID(bytes=bytes(buf[pos:pos + 16])); pos += 16",
            ]
        elif kind.startswith("["):
            ns[f"r_{fname}"] = _reader(kind[1:-1], version)
            body += [
                "    n = _unpack_int32(buf, pos)[0]; pos += 4",
                "    if n < 0: raise RecordFormatError('bad array length')",
                "    items = []",
                "    for _ in range(n):",
                f"        item, pos = r_{fname}(buf, pos, end)",
                "        items.append(item)",
                f"    {var} = tuple(items)",
            ]
        else:  # pragma: no cover - table error
            raise RecordFormatError(f"unknown type {kind}")
    flush_run()
    body.append(f"    return _cls({', '.join(args)}), pos")
    exec("\n".join(body), ns)  # source generated from SCHEMAS above, nothing else
    _READERS[key] = ns["read"]
    return _READERS[key]


def _writer(name: str, version: int) -> _Writer:
    key = (name, version)
    if key in _WRITERS:
        return _WRITERS[key]
    schema = SCHEMAS[name]
    if schema.flexible(version):
        _WRITERS[key] = _FLEXIBLE.writer(name, version)
        return _WRITERS[key]
    ns = _namespace()
    body = ["def write(out, obj):"]
    for f in schema.fields:
        fname, kind, _, _, _ = f
        if not _present(f, version):
            continue
        body.append(f"    v = obj.{fname}")
        if kind in _INTS:
            body.append(f"    out += _pack_{kind}(v)")
        elif kind in ("string", "nullable_string"):
            null = (
                "out += _pack_int16(-1)"
                if kind == "nullable_string"
                else "raise RecordFormatError('null in a non-nullable string')"
            )
            body += [
                f"    if v is None: {null}",
                "    else:",
                "        data = v.encode('utf-8')",
                "        out += _pack_int16(len(data)); out += data",
            ]
        elif kind == "bytes":
            body.append("    out += _pack_int32(len(v)); out += v")
        elif kind == "uuid":
            body.append("    out += v.bytes")
        elif kind.startswith("["):
            ns[f"w_{fname}"] = _writer(kind[1:-1], version)
            body += [
                "    out += _pack_int32(len(v))",
                "    for item in v:",
                f"        w_{fname}(out, item)",
            ]
        else:  # pragma: no cover - table error
            raise RecordFormatError(f"unknown type {kind}")
    body.append("    return None")
    exec("\n".join(body), ns)  # source generated from SCHEMAS above, nothing else
    _WRITERS[key] = ns["write"]
    return _WRITERS[key]


def encode(schema_name: str, obj: Any, version: int) -> bytes:
    """Version-prefixed encoding of `obj` with the named schema."""
    write = _WRITERS.get((schema_name, version))
    if write is None:
        schema = SCHEMAS[schema_name]
        if not schema.min_version <= version <= schema.max_version:
            raise RecordFormatError(f"{schema_name} has no version {version}")
        write = _writer(schema_name, version)
    out = bytearray(_pack_version(version))
    try:
        write(out, obj)
    except (struct.error, FlexibleFormatError) as exc:
        raise RecordFormatError(f"{schema_name} v{version}: {exc}") from exc
    return bytes(out)


def decode(schema_name: str, data: bytes) -> tuple[int, Any]:
    """(version, record) from version-prefixed bytes; trailing bytes are refused."""
    if type(data) is not bytes:
        data = bytes(data)
    end = len(data)
    try:
        version = _unpack_version(data, 0)[0]
        read = _READERS.get((schema_name, version))
        if read is None:
            schema = SCHEMAS[schema_name]
            if not schema.min_version <= version <= schema.max_version:
                raise RecordFormatError(f"{schema_name} has no version {version}")
            read = _reader(schema_name, version)
        obj, pos = read(data, 2, end)
    except (struct.error, UnicodeDecodeError, FlexibleFormatError) as exc:
        raise RecordFormatError(f"{schema_name}: {exc}") from exc
    if pos != end:
        raise RecordFormatError(f"{end - pos} trailing bytes after {schema_name}")
    return version, obj


# --------------------------------------------------------------------------
# Keys and values of the offsets topic


def encode_key(key: OffsetCommitKey | GroupMetadataKey) -> bytes:
    if isinstance(key, OffsetCommitKey):
        return encode("OffsetCommitKey", key, OFFSET_COMMIT_KEY_VERSION)
    return encode("GroupMetadataKey", key, GROUP_METADATA_KEY_VERSION)


def record_type(data: bytes) -> int:
    """A `__consumer_offsets` key's version, which names its record type
    (0/1 OffsetCommit, 2 GroupMetadata, 3+ the ConsumerGroup* records)."""
    if len(data) < 2:
        raise RecordFormatError("key shorter than its version")
    return _unpack_version(data, 0)[0]  # type: ignore[no-any-return]


def decode_key(data: bytes) -> OffsetCommitKey | GroupMetadataKey | None:
    """The key, or None for a key version we do not know (Kafka skips those too:
    e.g. transaction markers or newer coordinators' record types)."""
    record_type(data)  # raises for a key too short to have one
    fields = offset_commit_key_fields(data)
    if fields is not None:
        return OffsetCommitKey(*fields)
    schema_name = _KEY_SCHEMAS.get(_unpack_version(data, 0)[0])
    return None if schema_name is None else decode(schema_name, data)[1]


_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_KEY_HEAD = struct.Struct(">hh")  # version, group length
_unpack_key_head = _KEY_HEAD.unpack_from
_unpack_int16 = _INT16.unpack_from
_unpack_int32 = _INT32.unpack_from


def offset_commit_key_fields(data: bytes) -> tuple[str, str, int] | None:
    """(group, topic, partition) of an OffsetCommitKey (v0/v1), None for any
    other record type: the one reader of these keys (`decode_key` wraps it).
    The usual shape is read with three struct calls; any other goes through
    the table codec and fails as it does."""
    n = len(data)
    if n >= 8:
        version, glen = _unpack_key_head(data, 0)
        tpos = 4 + glen
        if 0 <= version <= 1 and glen >= 0 and tpos + 2 <= n:
            (tlen,) = _unpack_int16(data, tpos)
            ppos = tpos + 2 + tlen
            if tlen >= 0 and ppos + 4 == n:
                try:
                    group, topic = data[4:tpos].decode(), data[tpos + 2 : ppos].decode()
                    return group, topic, _unpack_int32(data, ppos)[0]
                except UnicodeDecodeError:
                    pass
    if n >= 2 and data[0] == 0 and data[1] in (0, 1):
        key = decode("OffsetCommitKey", data)[1]
        return key.group, key.topic, key.partition
    return None


class OffsetCommitKeyReader:
    """`offset_commit_key_fields` for a stream of OffsetCommitKeys (a shard's
    replay, at load and live). Keys of one (group, topic) share every byte
    but the partition, their last four, and come in runs (a commit's
    records; a load's, nearly all of a large log), so the group and topic
    read for one key serve the next keys of its run, read by one slice and
    one struct call. The run's first bytes are remembered only for a key of
    the usual shape, whose partition is exactly its last four bytes."""

    __slots__ = ("_names", "_prefix")

    def __init__(self) -> None:
        self._prefix: bytes | None = None
        self._names = ("", "")

    def read(self, data: bytes) -> tuple[str, str, int]:
        n = len(data)
        prefix = data[: n - 4]
        if prefix == self._prefix:
            group, topic = self._names
            return group, topic, _unpack_int32(data, n - 4)[0]
        fields = offset_commit_key_fields(data)
        if fields is None:
            raise RecordFormatError("not an OffsetCommitKey")
        usual = n >= 8 and _unpack_int32(data, n - 4)[0] == fields[2]
        self._prefix = prefix if usual else None
        self._names = (fields[0], fields[1])
        return fields


# key version -> key schema of the other record types (versions 0 and 1, the
# OffsetCommitKey, are read by offset_commit_key_fields; versions 3+ belong to
# newer coordinators' records: modern_group_records.py)
_KEY_SCHEMAS = {2: "GroupMetadataKey"}


def encode_offset_commit_value(value: OffsetCommitValue) -> bytes:
    version = (
        OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY
        if value.expire_timestamp >= 0
        else OFFSET_COMMIT_VALUE_VERSION
    )
    return encode("OffsetCommitValue", value, version)


_V3_HEAD = struct.Struct(">hqih")  # version, offset, leader_epoch, metadata length
# v3 with empty metadata, what muster writes when there is none: version, offset,
# leader epoch, metadata length (0), commit timestamp (one struct call)
_V3_EMPTY_METADATA = struct.Struct(">hqihq")
_INT64 = struct.Struct(">q")


def decode_offset_commit_value(data: bytes) -> OffsetCommitValue:
    return OffsetCommitValue(*offset_commit_value_fields(data))


def offset_commit_value_fields(data: bytes) -> tuple[int, int, str, int, int]:
    """(offset, leader_epoch, metadata, commit_timestamp, expire_timestamp).

    The one reader of these values (`decode_offset_commit_value` wraps it).
    The load path decodes one of these per committed partition: v3, what
    muster writes, is read with one struct call (no metadata) or two and no
    value object; anything else goes through the table-driven codec.
    """
    if len(data) == _V3_EMPTY_METADATA.size:
        version, offset, epoch, mlen, stamp = _V3_EMPTY_METADATA.unpack_from(data, 0)
        if version == 3 and mlen == 0:
            return offset, epoch, "", stamp, -1
    if len(data) >= _V3_HEAD.size and data[0] == 0 and data[1] == 3:
        _version, offset, epoch, mlen = _V3_HEAD.unpack_from(data, 0)
        pos = _V3_HEAD.size
        if mlen >= 0 and pos + mlen + 8 == len(data):
            metadata = data[pos : pos + mlen].decode("utf-8") if mlen else ""
            return offset, epoch, metadata, _INT64.unpack_from(data, pos + mlen)[0], -1
    v = decode("OffsetCommitValue", data)[1]
    return v.offset, v.leader_epoch, v.metadata, v.commit_timestamp, v.expire_timestamp


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


_COMMIT_KEY_HEAD = struct.Struct(">hh")  # key version 1, group length
_COMMIT_VALUE_HEAD = struct.Struct(">hqih")  # value version 3, offset, epoch, metadata length
_STRING_MAX = 0x7FFF


def offset_commit_record(
    group: str, topic: str, partition: int, value: OffsetCommitValue | None
) -> tuple[bytes, bytes | None]:
    """The one writer of offset commit records (None: a tombstone). A commit
    without expiry (what every commit but a v1-4 one with a retention time
    writes: key v1, value v3) is written with three struct calls instead of
    the table codec's objects, the same bytes (tests/records/test_commit_record.py);
    other values, and values out of range, go the table way and fail as it does."""
    if value is not None and value.expire_timestamp < 0:
        g = group.encode()
        t = topic.encode()
        m = value.metadata.encode()
        if len(g) <= _STRING_MAX and len(t) <= _STRING_MAX and len(m) <= _STRING_MAX:
            try:
                key = _COMMIT_KEY_HEAD.pack(1, len(g)) + g + _INT16.pack(len(t)) + t
                head = _COMMIT_VALUE_HEAD.pack(3, value.offset, value.leader_epoch, len(m))
                stamp = _INT64.pack(value.commit_timestamp)
                return key + _INT32.pack(partition), head + m + stamp
            except struct.error:
                pass  # out of range: the table codec says so in its own words
    key = encode_key(OffsetCommitKey(group, topic, partition))
    return key, None if value is None else encode_offset_commit_value(value)


def group_metadata_record(
    group: str, value: GroupMetadataValue | None
) -> tuple[bytes, bytes | None]:
    key = encode_key(GroupMetadataKey(group))
    return key, None if value is None else encode_group_metadata_value(value)
