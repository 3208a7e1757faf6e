"""Malformed and truncated requests: what Kafka answers or whether it closes,
and muster doing the same. Each scenario sends its bytes on a fresh connection,
then a well-formed ApiVersions on another to show the broker still serves."""

from __future__ import annotations

import struct

from conformance.kafka_diff.registry import register
from conformance.kafka_diff.session import Session
from muster.protocol.client_codec import encode_request


def frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def header(
    api: int, version: int, corr: int = 7, client: bytes | None = b"kd", tags: bool = False
) -> bytes:
    cid = struct.pack(">h", -1) if client is None else struct.pack(">h", len(client)) + client
    return struct.pack(">hhi", api, version, corr) + cid + (b"\x00" if tags else b"")


API_VERSIONS_V3 = encode_request(
    18, 3, 9, "kd", {"client_software_name": "k", "client_software_version": "1"}
)
METADATA_V12 = encode_request(3, 12, 11, "kd", {"topics": [], "allow_auto_topic_creation": False})

CASES: dict[str, bytes] = {
    "frame_over_limit": struct.pack(">i", 2**30) + b"x" * 16,
    "negative_size": struct.pack(">i", -5) + b"x" * 16,
    "zero_size": struct.pack(">i", 0),
    "size_only_header": frame(b"\x00\x12"),
    "unknown_api_key": frame(header(250, 0) + b"\x00" * 8),
    "controller_only_api": frame(header(52, 0, tags=True) + b"\x00" * 8),  # Vote
    "removed_api": frame(header(4, 0) + b"\x00" * 8),  # LeaderAndIsr
    "unsupported_version": frame(header(3, 99, tags=True) + b"\x00" * 8),
    "negative_version": frame(header(3, -1) + b"\x00" * 8),
    "client_id_past_frame": frame(struct.pack(">hhih", 3, 12, 7, 200) + b"kd"),
    "missing_header_tags": frame(header(3, 12) + b"\x01\x00\x00"),
    "truncated_metadata": frame(header(3, 12, tags=True) + b"\x05"),
    "truncated_api_versions_v3": API_VERSIONS_V3[:-3],
    "huge_array_count": frame(header(15, 5, tags=True) + bytes.fromhex("ffffffff0f")),
    "negative_array_count": frame(header(15, 4) + struct.pack(">i", -7) + b"\x00"),
    "string_past_frame": frame(header(15, 4) + struct.pack(">ih", 1, 500) + b"abc"),
    "trailing_bytes": frame(API_VERSIONS_V3[4:] + b"\x00\x01\x02"),
    "api_versions_v0_empty": frame(header(18, 0)),
    "api_versions_v3_no_tags": frame(header(18, 3) + b"\x02k\x021\x00"),
    "null_client_id": frame(header(18, 0, client=None)),
    "api_versions_v99": frame(header(18, 99, tags=True)),
    "api_versions_v99_no_tags": frame(header(18, 99)),
    "api_versions_v99_body": frame(header(18, 99, tags=True) + b"\x02k\x021\x00"),
    "garbage": frame(b"\xff" * 24),
    "join_group_v0_truncated": frame(header(11, 0) + struct.pack(">h", 3) + b"gr"),
}


def _case(payload: bytes):
    def run(s: Session) -> None:
        s.raw(payload, "bytes", conn=1)
        s.raw(API_VERSIONS_V3, "api_versions_after", conn=2)

    return run


for _name, _payload in CASES.items():
    register("malformed", _name, _case(_payload))


def pipelined_then_garbage(s: Session) -> None:
    """A good request and garbage in one write: the good one is answered, then?"""
    s.raw(API_VERSIONS_V3 + frame(b"\xff" * 12), "good_then_garbage")
    s.raw(METADATA_V12, "after_on_same_connection", conn=0)


def correlation_ids_echoed(s: Session) -> None:
    for corr in (0, -1, 2**31 - 1):
        body = header(18, 0, corr=corr)
        s.raw(frame(body), f"corr_{corr}")


register("malformed", "pipelined_then_garbage", pipelined_then_garbage)
register("malformed", "correlation_ids_echoed", correlation_ids_echoed)
