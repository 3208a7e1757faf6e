"""Reading the topics out of a ConsumerProtocol subscription (the metadata a
"consumer" member sends with each assignment strategy):

  version int16; topics [string]; user_data nullable bytes;
  v1+: owned_partitions [(topic string, partitions [int32])];
  v2+: generation_id int32; v3+: rack_id nullable string.

Only the topics matter to the coordinator; later fields are not needed, and
versions newer than 3 keep this prefix (Kafka reads them the same way)."""

from __future__ import annotations

import struct


def subscribed_topics(metadata: bytes) -> frozenset[str] | None:
    """The subscription's topics, or None if the bytes are not a subscription."""
    try:
        (version,) = struct.unpack_from(">h", metadata, 0)
        if version < 0:
            return None
        (count,) = struct.unpack_from(">i", metadata, 2)
        if count < 0:
            return None
        pos = 6
        topics = set()
        for _ in range(count):
            (n,) = struct.unpack_from(">h", metadata, pos)
            pos += 2
            if n < 0 or pos + n > len(metadata):
                return None
            topics.add(metadata[pos : pos + n].decode("utf-8"))
            pos += n
        return frozenset(topics)
    except (struct.error, UnicodeDecodeError):
        return None


def encode_subscription(topics: list[str], user_data: bytes | None = None) -> bytes:
    """A v0 subscription (used by tests and tools)."""
    out = bytearray(struct.pack(">hi", 0, len(topics)))
    for t in topics:
        raw = t.encode()
        out += struct.pack(">h", len(raw)) + raw
    if user_data is None:
        out += struct.pack(">i", -1)
    else:
        out += struct.pack(">i", len(user_data)) + user_data
    return bytes(out)
