"""The subscription user data Kafka's sticky assignors exchange, declared as
schemas (kio-style entities, read and written by kio's serializer) rather
than packed by hand.

StickyAssignor ("sticky", eager) — no version prefix; Java writes v1 and
reads v1, then v0, else ignores the data:
  v0: previous_assignment [(topic string, partitions [int32])]
  v1: v0 + generation int32
An eager member has revoked everything before it joins, so its
owned_partitions are empty: the previous assignment travels only here.

CooperativeStickyAssignor ("cooperative-sticky") — generation int32 only;
read only when the subscription has no generation_id (v0/v1 subscriptions).
"""

# No `from __future__ import annotations`: kio reads the field types of the
# schema dataclasses below at runtime.
import io
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from kio.static.constants import EntityType
from kio.static.primitive import i16, i32

from muster.assignors.model import DEFAULT_GENERATION, TopicPartition, tp_key
from muster.protocol.entities import schema_reader, schema_writer


@dataclass(frozen=True, slots=True, kw_only=True)
class _TopicAssignment:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = False
    topic: str = field(metadata={"kafka_type": "string"})
    partitions: tuple[i32, ...] = field(metadata={"kafka_type": "int32"}, default=())


@dataclass(frozen=True, slots=True, kw_only=True)
class StickyAssignorUserDataV0:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = False
    previous_assignment: tuple[_TopicAssignment, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class StickyAssignorUserDataV1:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = False
    previous_assignment: tuple[_TopicAssignment, ...]
    generation: i32 = field(metadata={"kafka_type": "int32"}, default=i32(DEFAULT_GENERATION))


@dataclass(frozen=True, slots=True, kw_only=True)
class CooperativeStickyAssignorUserDataV0:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = False
    generation: i32 = field(metadata={"kafka_type": "int32"}, default=i32(DEFAULT_GENERATION))


def _write(schema: type, entity: Any) -> bytes:
    buf = io.BytesIO()
    schema_writer(schema)(buf, entity)
    return buf.getvalue()


def encode_sticky_user_data(partitions: Iterable[TopicPartition], generation: int) -> bytes:
    """StickyAssignor user data v1: the previous assignment (grouped by
    topic, sorted) and its generation."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions, key=tp_key):
        by_topic.setdefault(topic, []).append(partition)
    entity = StickyAssignorUserDataV1(
        previous_assignment=tuple(
            _TopicAssignment(topic=t, partitions=tuple(i32(p) for p in ps))
            for t, ps in by_topic.items()
        ),
        generation=i32(generation),
    )
    return _write(StickyAssignorUserDataV1, entity)


def decode_sticky_user_data(
    data: bytes | None,
) -> tuple[frozenset[TopicPartition], int | None] | None:
    """(previous assignment, generation or None for v0 data), or None when
    there is no user data. Unparseable data counts as an empty previous
    assignment at the default generation, as in Kafka."""
    if not data:
        return None
    for schema in (StickyAssignorUserDataV1, StickyAssignorUserDataV0):
        try:
            entity, _size = schema_reader(schema)(data, 0)
        except Exception:  # kio raises assorted errors on truncated or garbage input
            continue
        owned = frozenset(
            (ta.topic, int(p)) for ta in entity.previous_assignment for p in ta.partitions
        )
        generation = getattr(entity, "generation", None)
        return owned, None if generation is None else int(generation)
    return frozenset(), DEFAULT_GENERATION


def encode_cooperative_user_data(generation: int) -> bytes:
    entity = CooperativeStickyAssignorUserDataV0(generation=i32(generation))
    return _write(CooperativeStickyAssignorUserDataV0, entity)


def decode_cooperative_user_data(data: bytes | None) -> int | None:
    """The generation in cooperative-sticky user data; None without data,
    the default generation when it does not parse (as Kafka)."""
    if data is None:
        return None
    try:
        entity, _size = schema_reader(CooperativeStickyAssignorUserDataV0)(data, 0)
    except Exception:  # kio raises assorted errors on truncated or garbage input
        return DEFAULT_GENERATION
    return int(entity.generation)
