"""ApiVersions: every request version, and one scenario per API key holding
both brokers' version range for it (each difference is decided in
DIFFERENCES.md: served, or why not)."""

from __future__ import annotations

import struct

from conformance.kafka_diff.registry import register
from conformance.kafka_diff.session import Session

API_VERSIONS = 18
BODY = {"client_software_name": "kdiff", "client_software_version": "1.0"}


def _version(v: int):
    def run(s: Session) -> None:
        answer = s.call(API_VERSIONS, v, BODY, record=False)
        if isinstance(answer, dict):
            answer = {k: val for k, val in answer.items() if k != "api_keys"}
        s.record(f"api_versions_v{v}", answer)

    return run


for _v in range(6):
    register("api_versions", f"request_v{_v}", _version(_v))

# Every API key either broker lists (Kafka 4.4's list; muster's is a subset).
KEYS = [*range(0, 52), 55, 56, 57, 58, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 71, 72]
KEYS += [74, 75, 76, 77, 78, 79, 80, 81, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94]


def _key(key: int):
    def run(s: Session) -> None:
        answer = s.call(API_VERSIONS, 3, BODY, record=False)
        entry = None
        if isinstance(answer, dict):
            for a in answer["api_keys"]:
                if a["api_key"] == key:
                    entry = [a["min_version"], a["max_version"]]
        s.record(f"key{key}", entry)

    return run


for _k in KEYS:
    register("api_versions", f"key_{_k:02d}", _key(_k))


def unknown_version_answer(s: Session) -> None:
    """ApiVersions at a version neither serves: KIP-511's v0 answer with
    UNSUPPORTED_VERSION, listing ApiVersions' own range."""
    body = struct.pack(">hhih", API_VERSIONS, 99, 42, 5) + b"kdiff" + b"\x00"
    s.conn().send_bytes(struct.pack(">i", len(body)) + body)
    answer = s.conn().read_frame()
    if answer is None:
        s.record("v99", "<closed>")
        return
    corr, err, count = struct.unpack_from(">ihi", answer)
    keys = [struct.unpack_from(">hhh", answer, 10 + 6 * i) for i in range(count)]
    s.record("v99", {"correlation": corr, "error_code": err, "api_keys": keys})


register("api_versions", "unknown_version", unknown_version_answer)
