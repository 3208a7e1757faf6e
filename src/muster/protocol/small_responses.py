"""The hottest small answers written straight with struct: OffsetCommit (v0-9)
and Heartbeat (v0-4).

A synchronous commit loop or a group of heartbeating members sends these
thousands of times a second, and kio's generic path (an entity built per
topic and partition, then written field by field with its type checks) was
about a quarter of the broker's CPU per commit. The bytes are kio's (tested
against it for every version muster serves); a payload with a key a writer
does not know returns None and goes the generic way, so kio stays the one
schema and this is only a shortcut for the shapes handlers produce.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, NamedTuple

from muster.protocol.fetch_response import _count, _ms, _uvarint

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I32_I16 = struct.Struct(">ih")
_COMMIT_TOP = frozenset(("throttle_time", "topics"))
_COMMIT_TOPIC = frozenset(("name", "partitions"))
_COMMIT_PART = frozenset(("partition_index", "error_code"))
_HEARTBEAT = frozenset(("throttle_time", "error_code"))


def _string(out: bytearray, value: str, flexible: bool) -> None:
    raw = value.encode()
    if flexible:
        _uvarint(out, len(raw) + 1)
    else:
        out += _I16.pack(len(raw))
    out += raw


class CommitAnswer:
    """An OffsetCommit answer as the coordinator gave it: `topics`, each with
    `name` and `partitions` (each with `partition_index` and `error_code`).
    The handler of a commit with nothing refused at the edge returns this
    instead of building a dict per topic and partition for the writer."""

    __slots__ = ("topics",)

    def __init__(self, topics: Any) -> None:
        self.topics = topics

    def __repr__(self) -> str:
        return f"CommitAnswer({self.topics!r})"


class _Topic(NamedTuple):
    name: str
    partitions: list[_Partition]


class _Partition(NamedTuple):
    partition_index: int
    error_code: int


def _commit_answer(version: int, topics: Any, throttle_ms: int = 0) -> bytes:
    if not 0 <= version <= 9:
        raise ValueError(f"OffsetCommit v{version} is not served")
    flexible = version >= 8
    out = bytearray(_I32.pack(throttle_ms)) if version >= 3 else bytearray()
    _count(out, len(topics), flexible)
    for topic in topics:
        _string(out, topic.name, flexible)
        parts = topic.partitions
        _count(out, len(parts), flexible)
        for p in parts:
            out += _I32_I16.pack(p.partition_index, p.error_code)
            if flexible:
                out.append(0)  # partition: no tagged fields
        if flexible:
            out.append(0)  # topic: no tagged fields
    if flexible:
        out.append(0)  # answer: no tagged fields
    return bytes(out)


def offset_commit(version: int, payload: Any) -> bytes | None:
    if type(payload) is CommitAnswer:
        return _commit_answer(version, payload.topics)
    if not isinstance(payload, dict) or not payload.keys() <= _COMMIT_TOP or not 0 <= version <= 9:
        return None
    topics = []
    for topic in payload.get("topics") or ():
        if not topic.keys() <= _COMMIT_TOPIC:
            return None
        parts = []
        for p in topic.get("partitions") or ():
            if not p.keys() <= _COMMIT_PART:
                return None
            parts.append(_Partition(p.get("partition_index", 0), int(p.get("error_code", 0))))
        topics.append(_Topic(topic.get("name", ""), parts))
    return _commit_answer(version, topics, _ms(payload.get("throttle_time", 0)))


def heartbeat(version: int, payload: Any) -> bytes | None:
    if not isinstance(payload, dict) or not payload.keys() <= _HEARTBEAT or not 0 <= version <= 4:
        return None
    error = int(payload.get("error_code", 0))
    if version == 0:
        return _I16.pack(error)
    body = _I32_I16.pack(_ms(payload.get("throttle_time", 0)), error)
    return body + b"\x00" if version >= 4 else body


# api key -> writer; a writer answers None for a payload it does not know all of
WRITERS: dict[int, Callable[[int, Any], bytes | None]] = {8: offset_commit, 12: heartbeat}
