"""The client-side direction of the codec: encode a request (header + body,
size-prefixed), decode a response frame of a known API and version.

Bodies come from kio's generated schemas via `codec.build`, so a client
describes a request as a plain dict in Kafka's snake_cased field names and
gets it encoded for whatever version was negotiated. Header versions follow
the schema's `__header_schema__` (ApiVersions responses always use header v0,
KIP-511, which kio encodes in the schema too).
"""

from __future__ import annotations

import io
import struct
from collections.abc import Mapping
from typing import Any

from muster.protocol.codec import (
    DecodeError,
    build,
    request_schema,
    response_schema,
)
from muster.protocol.entities import schema_reader, schema_writer

_SIZE = struct.Struct(">i")


def encode_request_view(
    api_key: int,
    version: int,
    correlation_id: int,
    client_id: str | None,
    body: Mapping[str, Any] | Any,
) -> memoryview:
    """A whole request frame (int32 size, request header, body) as a view of the
    buffer it was written into: a Produce frame carries megabytes of batches."""
    schema = request_schema(api_key, version)
    header_schema = schema.__header_schema__
    header = build(
        header_schema,
        {
            "request_api_key": api_key,
            "request_api_version": version,
            "correlation_id": correlation_id,
            "client_id": client_id,
        },
    )
    buf = io.BytesIO()
    buf.write(b"\0\0\0\0")
    schema_writer(header_schema)(buf, header)
    schema_writer(schema)(buf, build(schema, body))
    out = buf.getbuffer()
    _SIZE.pack_into(out, 0, len(out) - 4)
    return out


def encode_request(
    api_key: int,
    version: int,
    correlation_id: int,
    client_id: str | None,
    body: Mapping[str, Any] | Any,
) -> bytes:
    """A whole request frame: int32 size, request header, body."""
    return bytes(encode_request_view(api_key, version, correlation_id, client_id, body))


def peek_correlation_id(frame: bytes | memoryview) -> int:
    """The correlation id that starts every response header."""
    if len(frame) < 4:
        raise DecodeError("response frame shorter than its header")
    return int(_SIZE.unpack_from(frame, 0)[0])


def decode_response(api_key: int, version: int, frame: bytes | memoryview) -> tuple[int, Any]:
    """(correlation_id, response entity) from a frame without its size prefix."""
    schema = response_schema(api_key, version)
    try:
        header, offset = schema_reader(schema.__header_schema__)(frame, 0)
        entity, _size = schema_reader(schema)(frame, offset)
    except Exception as exc:  # kio raises assorted errors on garbage
        raise DecodeError(f"response api {api_key} v{version}: {exc}") from exc
    return int(header.correlation_id), entity
