"""ConsumerProtocol metadata (protocol type "consumer"), as Kafka's clients
write it. Subscription (the metadata a member sends with each strategy):

  version int16; topics [string]; user_data nullable bytes;
  v1+: owned_partitions [(topic string, partitions [int32])];
  v2+: generation_id int32; v3+: rack_id nullable string.

Assignment (what the leader hands each member in SyncGroup):

  version int16; assigned_partitions [(topic string, partitions [int32])];
  user_data nullable bytes.

The coordinator only needs the subscribed topics, which every version keeps as
a prefix (Kafka reads them with the v0 layout, so newer versions work too).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

_H = struct.Struct(">h")
_I = struct.Struct(">i")


@dataclass(frozen=True)
class Subscription:
    version: int
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[tuple[str, tuple[int, ...]], ...] = ()
    generation_id: int = -1
    rack_id: str | None = None


@dataclass(frozen=True)
class Assignment:
    version: int
    partitions: tuple[tuple[str, tuple[int, ...]], ...] = field(default_factory=tuple)
    user_data: bytes | None = None


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def int16(self) -> int:
        v = _H.unpack_from(self.data, self.pos)[0]
        self.pos += 2
        return v

    def int32(self) -> int:
        v = _I.unpack_from(self.data, self.pos)[0]
        self.pos += 4
        return v

    def string(self, nullable: bool = False) -> str | None:
        n = self.int16()
        if n < 0:
            if nullable:
                return None
            raise ValueError("null string")
        if self.pos + n > len(self.data):
            raise ValueError("string runs past the end")
        v = self.data[self.pos : self.pos + n].decode("utf-8")
        self.pos += n
        return v

    def nullable_bytes(self) -> bytes | None:
        n = self.int32()
        if n < 0:
            return None
        if self.pos + n > len(self.data):
            raise ValueError("bytes run past the end")
        v = self.data[self.pos : self.pos + n]
        self.pos += n
        return bytes(v)

    def array_len(self) -> int:
        n = self.int32()
        if n < 0 or n > len(self.data):
            raise ValueError("bad array length")
        return n

    def topic_partitions(self) -> tuple[tuple[str, tuple[int, ...]], ...]:
        out = []
        for _ in range(self.array_len()):
            topic = self.string()
            assert topic is not None
            out.append((topic, tuple(self.int32() for _ in range(self.array_len()))))
        return tuple(out)

    @property
    def more(self) -> bool:
        return self.pos < len(self.data)


def decode_subscription(metadata: bytes) -> Subscription | None:
    """The full subscription, or None if the bytes are not one. Fields a
    version lacks keep their defaults; a truncated tail of a newer version is
    tolerated after the topics."""
    try:
        r = _Reader(metadata)
        version = r.int16()
        if version < 0:
            return None
        topics = []
        for _ in range(r.array_len()):
            topic = r.string()
            assert topic is not None
            topics.append(topic)
        sub = Subscription(version, tuple(topics))
        if not r.more:
            return sub
        user_data = r.nullable_bytes()
        owned: tuple[tuple[str, tuple[int, ...]], ...] = ()
        generation, rack = -1, None
        if version >= 1 and r.more:
            owned = r.topic_partitions()
        if version >= 2 and r.more:
            generation = r.int32()
        if version >= 3 and r.more:
            rack = r.string(nullable=True)
        return Subscription(version, tuple(topics), user_data, owned, generation, rack)
    except (struct.error, ValueError, UnicodeDecodeError):
        return None


def subscribed_topics(metadata: bytes) -> frozenset[str] | None:
    """The subscription's topics, or None if the bytes are not a subscription."""
    sub = decode_subscription(metadata)
    return None if sub is None else frozenset(sub.topics)


def decode_assignment(data: bytes) -> Assignment | None:
    """A member's assignment, or None if the bytes are not one (empty bytes
    mean "nothing assigned" and decode to an empty v0 assignment)."""
    if not data:
        return Assignment(0)
    try:
        r = _Reader(data)
        version = r.int16()
        partitions = r.topic_partitions()
        user_data = r.nullable_bytes() if r.more else None
        return Assignment(version, partitions, user_data)
    except (struct.error, ValueError, UnicodeDecodeError):
        return None


def _string(s: str | None) -> bytes:
    if s is None:
        return _H.pack(-1)
    raw = s.encode()
    return _H.pack(len(raw)) + raw


def _nullable_bytes(b: bytes | None) -> bytes:
    return _I.pack(-1) if b is None else _I.pack(len(b)) + b


def _topic_partitions(tps: tuple[tuple[str, tuple[int, ...]], ...]) -> bytes:
    out = bytearray(_I.pack(len(tps)))
    for topic, parts in tps:
        out += _string(topic) + _I.pack(len(parts))
        for p in parts:
            out += _I.pack(p)
    return bytes(out)


def encode_subscription(
    topics: list[str],
    user_data: bytes | None = None,
    *,
    version: int = 0,
    owned_partitions: tuple[tuple[str, tuple[int, ...]], ...] = (),
    generation_id: int = -1,
    rack_id: str | None = None,
) -> bytes:
    out = bytearray(_H.pack(version) + _I.pack(len(topics)))
    for t in topics:
        out += _string(t)
    out += _nullable_bytes(user_data)
    if version >= 1:
        out += _topic_partitions(owned_partitions)
    if version >= 2:
        out += _I.pack(generation_id)
    if version >= 3:
        out += _string(rack_id)
    return bytes(out)


def encode_assignment(
    partitions: tuple[tuple[str, tuple[int, ...]], ...],
    user_data: bytes | None = None,
    version: int = 0,
) -> bytes:
    return _H.pack(version) + _topic_partitions(partitions) + _nullable_bytes(user_data)
