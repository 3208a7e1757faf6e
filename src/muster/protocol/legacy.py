"""Old API versions that kio 0.6 (Kafka 4.x's schemas) no longer ships.

Clients still in the field send them: Burrow's sarama asks ListOffsets v0,
older kafka-python and sarama use OffsetCommit v0-1 and OffsetFetch v0. They
are declared here once, in the same shape as kio's generated entities, so
kio's own reader and writer encode them and the handlers see the same field
names as in newer versions.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from kio.schema.request_header.v1.header import RequestHeader
from kio.schema.response_header.v0.header import ResponseHeader
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32, i64

# A field is (name, kafka type) or (name, [nested fields]) for an array of structs.
# Kafka types: int16 int32 int64 string string? (nullable) int32[] int64[]
Field = tuple[str, Any]

_PARTITION_ERROR: list[Field] = [("partition_index", "int32"), ("error_code", "int16")]

# (api key, version, "request" | "response") -> (class name, fields)
SCHEMAS: dict[tuple[int, int, str], tuple[str, list[Field]]] = {
    (2, 0, "request"): (
        "ListOffsetsRequest",
        [
            ("replica_id", "int32"),
            (
                "topics",
                [
                    ("name", "string"),
                    (
                        "partitions",
                        [
                            ("partition_index", "int32"),
                            ("timestamp", "int64"),
                            ("max_num_offsets", "int32"),
                        ],
                    ),
                ],
            ),
        ],
    ),
    (2, 0, "response"): (
        "ListOffsetsResponse",
        [
            (
                "topics",
                [
                    ("name", "string"),
                    (
                        "partitions",
                        [
                            ("partition_index", "int32"),
                            ("error_code", "int16"),
                            ("old_style_offsets", "int64[]"),
                        ],
                    ),
                ],
            ),
        ],
    ),
    (8, 0, "request"): (
        "OffsetCommitRequest",
        [
            ("group_id", "string"),
            (
                "topics",
                [
                    ("name", "string"),
                    (
                        "partitions",
                        [
                            ("partition_index", "int32"),
                            ("committed_offset", "int64"),
                            ("committed_metadata", "string?"),
                        ],
                    ),
                ],
            ),
        ],
    ),
    (8, 1, "request"): (
        "OffsetCommitRequest",
        [
            ("group_id", "string"),
            ("generation_id_or_member_epoch", "int32"),
            ("member_id", "string"),
            (
                "topics",
                [
                    ("name", "string"),
                    (
                        "partitions",
                        [
                            ("partition_index", "int32"),
                            ("committed_offset", "int64"),
                            ("commit_timestamp", "int64"),
                            ("committed_metadata", "string?"),
                        ],
                    ),
                ],
            ),
        ],
    ),
    (8, 0, "response"): (
        "OffsetCommitResponse",
        [
            ("topics", [("name", "string"), ("partitions", _PARTITION_ERROR)]),
        ],
    ),
    (8, 1, "response"): (
        "OffsetCommitResponse",
        [
            ("topics", [("name", "string"), ("partitions", _PARTITION_ERROR)]),
        ],
    ),
    (9, 0, "request"): (
        "OffsetFetchRequest",
        [
            ("group_id", "string"),
            ("topics", [("name", "string"), ("partition_indexes", "int32[]")]),
        ],
    ),
    (9, 0, "response"): (
        "OffsetFetchResponse",
        [
            (
                "topics",
                [
                    ("name", "string"),
                    (
                        "partitions",
                        [
                            ("partition_index", "int32"),
                            ("committed_offset", "int64"),
                            ("metadata", "string?"),
                            ("error_code", "int16"),
                        ],
                    ),
                ],
            ),
        ],
    ),
}

_PRIMITIVES: dict[str, tuple[Any, str]] = {
    "int16": (i16, "int16"),
    "int32": (i32, "int32"),
    "int64": (i64, "int64"),
    "string": (str, "string"),
    "string?": (str | None, "string"),
    "int32[]": (tuple[i32, ...], "int32"),
    "int64[]": (tuple[i64, ...], "int64"),
}


def _entity(name: str, fields: list[Field], api_key: int, version: int, kind: Any) -> type:
    spec: list[tuple[str, Any, Any]] = []
    for field_name, ftype in fields:
        if isinstance(ftype, list):
            nested = _entity(
                f"{name}{field_name.title().replace('_', '')}",
                ftype,
                api_key,
                version,
                EntityType.nested,
            )
            spec.append((field_name, tuple[nested, ...], dataclasses.field()))
        else:
            pytype, kafka_type = _PRIMITIVES[ftype]
            if ftype == "int16" and field_name == "error_code":
                kafka_type = "error_code"
            spec.append(
                (field_name, pytype, dataclasses.field(metadata={"kafka_type": kafka_type}))
            )
    cls = dataclasses.make_dataclass(
        name,
        spec,
        frozen=True,
        slots=True,
        kw_only=True,
        namespace={
            "__type__": kind,
            "__version__": i16(version),
            "__flexible__": False,
            "__api_key__": i16(api_key),
            # (the client codec reads a response's header with it: v0 before flexible)
            "__header_schema__": RequestHeader if kind == EntityType.request else ResponseHeader,
            "__annotations__": {},
        },
    )
    for attr in ("__type__", "__version__", "__flexible__", "__api_key__", "__header_schema__"):
        cls.__annotations__.setdefault(attr, ClassVar)
    return cls


# Built on first use: the entity classes take tens of ms to declare, and a
# broker's start should not pay for versions few clients send (issue #15).
_ENTITIES: dict[tuple[int, int, str], type] = {}


def legacy_schema(api_key: int, version: int, kind: str) -> type | None:
    key = (api_key, version, kind)
    entity = _ENTITIES.get(key)
    if entity is None:
        spec = SCHEMAS.get(key)
        if spec is None:
            return None
        name, fields = spec
        entity_type = EntityType.request if kind == "request" else EntityType.response
        entity = _ENTITIES[key] = _entity(name, fields, api_key, version, entity_type)
    return entity
