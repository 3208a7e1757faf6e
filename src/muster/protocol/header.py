"""Request and response headers (request v0-v2, response v0-v1)."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import cache

from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2

from muster.protocol.bounds import check_request
from muster.protocol.codec import DecodeError, request_schema
from muster.protocol.entities import schema_reader

API_VERSIONS_KEY = 18
_PREFIX = struct.Struct(">hhi")


@dataclass(frozen=True, slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body_offset: int  # where the request body starts in the frame
    flexible: bool  # the body (and response header) use flexible versions


@cache
def is_flexible(api_key: int, version: int) -> bool:
    try:
        return bool(request_schema(api_key, version).__flexible__)
    except Exception:
        return False


def peek_prefix(frame: bytes | memoryview) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id): readable before we know the header version."""
    if len(frame) < _PREFIX.size:
        raise DecodeError("frame shorter than a request header")
    return _PREFIX.unpack_from(frame, 0)


def parse_request_header(frame: bytes | memoryview, flexible: bool) -> RequestHeader:
    api_key, version, correlation_id = peek_prefix(frame)
    schema = RequestHeaderV2 if flexible else RequestHeaderV1
    try:
        check_request(schema, frame, 0)  # BoundsError, before kio reserves a count
        header, size = schema_reader(schema)(frame, 0)
    except Exception as exc:
        raise DecodeError(f"bad request header: {exc}") from exc
    return RequestHeader(api_key, version, correlation_id, header.client_id, size, flexible)


def response_header(correlation_id: int, api_key: int, flexible: bool) -> bytes:
    # ApiVersions always answers with header v0 so a client can read it before
    # it knows which versions the broker speaks (KIP-511).
    if flexible and api_key != API_VERSIONS_KEY:
        return struct.pack(">ib", correlation_id, 0)
    return struct.pack(">i", correlation_id)
