"""Kafka's ConsumerProtocol: the bytes a consumer puts in JoinGroup protocol
metadata (a Subscription) and a leader puts in SyncGroup assignments (an
Assignment), for the "consumer" protocol type.

Non-flexible, big-endian, each message prefixed by its int16 version:

  Subscription v0: topics [string], user_data nullable bytes
               v1+: owned_partitions [(topic string, partitions [int32])]
               v2+: generation_id int32 (default -1)
               v3+: rack_id nullable string
  Assignment  v0-v3: assigned_partitions [(topic string, partitions [int32])],
                     user_data nullable bytes

The layout comes from kio's generated schemas (Kafka's own
ConsumerProtocolSubscription.json / ConsumerProtocolAssignment.json), as
every other message in muster does. Decoding follows Kafka's
ConsumerProtocol: a version newer than 3 is read as v3 (newer versions only
append fields), bytes after the known fields are ignored, a negative version
is an error. An empty assignment (zero bytes, what a coordinator hands a
member the leader gave nothing) decodes as an empty Assignment.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kio.schema.consumer_protocol_assignment.v0 import data as _a0
from kio.schema.consumer_protocol_assignment.v1 import data as _a1
from kio.schema.consumer_protocol_assignment.v2 import data as _a2
from kio.schema.consumer_protocol_assignment.v3 import data as _a3
from kio.schema.consumer_protocol_subscription.v0 import data as _s0
from kio.schema.consumer_protocol_subscription.v1 import data as _s1
from kio.schema.consumer_protocol_subscription.v2 import data as _s2
from kio.schema.consumer_protocol_subscription.v3 import data as _s3

from muster.protocol.entities import schema_reader, schema_writer

PROTOCOL_TYPE = "consumer"
LOWEST_VERSION = 0
HIGHEST_VERSION = 3

_SUBSCRIPTION_MODULES = (_s0, _s1, _s2, _s3)
_ASSIGNMENT_MODULES = (_a0, _a1, _a2, _a3)

TopicPartitions = tuple[tuple[str, tuple[int, ...]], ...]
"""Partitions grouped by topic, in wire order: ((topic, (p, ...)), ...)."""


class ConsumerProtocolError(ValueError):
    """Bytes that are not a ConsumerProtocol subscription/assignment."""


def topic_partitions(value: Any) -> TopicPartitions:
    """Normalize partitions given as a mapping topic -> partitions, as
    (topic, partitions) pairs, or as (topic, partition) pairs, into the wire
    form ((topic, (p, ...)), ...). Order is kept; (topic, partition) pairs of
    one topic are grouped where the topic first appears."""
    if value is None:
        return ()
    items = value.items() if isinstance(value, Mapping) else value
    grouped: list[tuple[str, list[int]]] = []
    index: dict[str, int] = {}
    kinds: set[bool] = set()
    for item in items:
        topic, parts = item
        kinds.add(isinstance(parts, int))
        if len(kinds) > 1:
            raise TypeError("mixed (topic, partition) and (topic, partitions) items")
        if isinstance(parts, int):  # a (topic, partition) pair
            if topic not in index:
                index[topic] = len(grouped)
                grouped.append((topic, []))
            grouped[index[topic]][1].append(parts)
        else:
            grouped.append((topic, [int(p) for p in parts]))
    return tuple((topic, tuple(parts)) for topic, parts in grouped)


@dataclass(frozen=True)
class Subscription:
    """A member's subscription. `owned_partitions` accepts a mapping
    topic -> partitions or pairs; it is stored in wire form."""

    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: TopicPartitions = ()
    generation_id: int = -1
    rack_id: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.topics, str):
            raise TypeError("topics must be a sequence of names, not a string")
        object.__setattr__(self, "topics", tuple(self.topics))
        object.__setattr__(self, "owned_partitions", topic_partitions(self.owned_partitions))
        if self.user_data is not None:
            object.__setattr__(self, "user_data", bytes(self.user_data))

    def owned(self) -> frozenset[tuple[str, int]]:
        """The owned partitions as a set of (topic, partition)."""
        return frozenset((t, p) for t, parts in self.owned_partitions for p in parts)


@dataclass(frozen=True)
class Assignment:
    """A member's assignment. `partitions` accepts a mapping
    topic -> partitions or pairs; it is stored in wire form."""

    partitions: TopicPartitions = field(default=())
    user_data: bytes | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "partitions", topic_partitions(self.partitions))
        if self.user_data is not None:
            object.__setattr__(self, "user_data", bytes(self.user_data))

    def as_dict(self) -> dict[str, list[int]]:
        """topic -> partitions (a topic listed twice on the wire is merged)."""
        out: dict[str, list[int]] = {}
        for topic, parts in self.partitions:
            out.setdefault(topic, []).extend(parts)
        return out

    def partition_set(self) -> frozenset[tuple[str, int]]:
        return frozenset((t, p) for t, parts in self.partitions for p in parts)


def _check_encode_version(version: int) -> int:
    if not LOWEST_VERSION <= version <= HIGHEST_VERSION:
        raise ValueError(f"consumer protocol version {version} not in 0..{HIGHEST_VERSION}")
    return version


def _write(version: int, schema: type, entity: Any) -> bytes:
    buf = io.BytesIO()
    buf.write(struct.pack(">h", version))
    schema_writer(schema)(buf, entity)
    return buf.getvalue()


def _read_version(data: bytes | memoryview, what: str) -> int:
    if len(data) < 2:
        raise ConsumerProtocolError(f"{what}: {len(data)} bytes, too short for a version")
    (version,) = struct.unpack_from(">h", data, 0)
    if version < LOWEST_VERSION:
        raise ConsumerProtocolError(f"{what}: unsupported version {version}")
    return version


def _read(data: bytes | memoryview, schema: type, what: str, version: int) -> Any:
    try:
        entity, _size = schema_reader(schema)(data, 2)
    except Exception as exc:  # kio raises assorted errors on truncated or garbage input
        raise ConsumerProtocolError(f"{what} v{version}: {exc}") from exc
    return entity


def encode_subscription(sub: Subscription, version: int = HIGHEST_VERSION) -> bytes:
    """The version-prefixed bytes of `sub`; fields the version lacks are dropped."""
    version = _check_encode_version(version)
    mod = _SUBSCRIPTION_MODULES[version]
    kwargs: dict[str, Any] = {"topics": tuple(sub.topics), "user_data": sub.user_data}
    if version >= 1:
        kwargs["owned_partitions"] = tuple(
            mod.TopicPartition(topic=t, partitions=parts) for t, parts in sub.owned_partitions
        )
    if version >= 2:
        kwargs["generation_id"] = sub.generation_id
    if version >= 3:
        kwargs["rack_id"] = sub.rack_id
    schema = mod.ConsumerProtocolSubscription
    return _write(version, schema, schema(**kwargs))


def subscription_version(data: bytes | memoryview) -> int:
    """The version a subscription was written with (may exceed 3)."""
    return _read_version(data, "subscription")


def assignment_version(data: bytes | memoryview) -> int:
    """The version an assignment was written with (may exceed 3)."""
    return _read_version(data, "assignment")


def decode_subscription(data: bytes | memoryview) -> Subscription:
    version = _read_version(data, "subscription")
    read_as = min(version, HIGHEST_VERSION)
    schema = _SUBSCRIPTION_MODULES[read_as].ConsumerProtocolSubscription
    e = _read(data, schema, "subscription", version)
    return Subscription(
        topics=tuple(e.topics),
        user_data=None if e.user_data is None else bytes(e.user_data),
        owned_partitions=tuple(
            (tp.topic, tuple(tp.partitions)) for tp in getattr(e, "owned_partitions", ())
        ),
        generation_id=getattr(e, "generation_id", -1),
        rack_id=getattr(e, "rack_id", None),
    )


_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


def subscription_topics(data: bytes | memoryview) -> tuple[str, ...] | None:
    """The subscribed topics in wire order, or None when the bytes are not a
    subscription.

    What a group coordinator needs, read as Kafka's classic coordinator does:
    only the prefix every version shares (version, topics), so it is fast
    and tolerates what follows (newer versions, clients that send no user
    data at all)."""
    try:
        (version,) = _INT16.unpack_from(data, 0)
        (count,) = _INT32.unpack_from(data, 2)
        if version < LOWEST_VERSION or count < 0 or count > len(data):
            return None
        pos = 6
        topics = []
        for _ in range(count):
            (n,) = _INT16.unpack_from(data, pos)
            pos += 2
            if n < 0 or pos + n > len(data):
                return None
            topics.append(bytes(data[pos : pos + n]).decode("utf-8"))
            pos += n
        return tuple(topics)
    except (struct.error, UnicodeDecodeError):
        return None


def encode_assignment(a: Assignment, version: int = HIGHEST_VERSION) -> bytes:
    """The version-prefixed bytes of `a` (v0-v3 share one layout; Kafka's
    Java client writes v3, its highest)."""
    version = _check_encode_version(version)
    mod = _ASSIGNMENT_MODULES[version]
    schema = mod.ConsumerProtocolAssignment
    entity = schema(
        assigned_partitions=tuple(
            mod.TopicPartition(topic=t, partitions=parts) for t, parts in a.partitions
        ),
        user_data=a.user_data,
    )
    return _write(version, schema, entity)


def decode_assignment(data: bytes | memoryview) -> Assignment:
    """Decode an assignment; zero bytes is the empty assignment."""
    if len(data) == 0:
        return Assignment()
    version = _read_version(data, "assignment")
    read_as = min(version, HIGHEST_VERSION)
    schema = _ASSIGNMENT_MODULES[read_as].ConsumerProtocolAssignment
    e = _read(data, schema, "assignment", version)
    return Assignment(
        partitions=tuple((tp.topic, tuple(tp.partitions)) for tp in e.assigned_partitions),
        user_data=None if e.user_data is None else bytes(e.user_data),
    )


def assignment_from_dict(
    partitions: Mapping[str, Iterable[int]], user_data: bytes | None = None
) -> Assignment:
    """An Assignment with topics in sorted order and partitions sorted."""
    return Assignment(
        partitions=tuple((t, tuple(sorted(partitions[t]))) for t in sorted(partitions)),
        user_data=user_data,
    )
