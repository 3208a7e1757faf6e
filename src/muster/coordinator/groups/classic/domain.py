"""Classic groups as a domain of the shard's one write path
(`coordinator/tracker.py`). Durable is each group's last GroupMetadata
record, applied once durable; membership itself is soft state that handlers
change live, and a failed append's continuations repair it, so there is no
snapshot to restore. While loading, the soft group is rebuilt from its
record (Kafka's replay of classic-group records); once serving, handlers
own it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from muster.coordinator.context import Effects
from muster.coordinator.groups.classic.group import ClassicGroup
from muster.coordinator.groups.store import GroupStore
from muster.coordinator.offsets.manager import OffsetManager
from muster.records.offsets_topic import (
    GROUP_METADATA_KEY_VERSION,
    GroupMetadataValue,
    decode_group_metadata_value,
    decode_key,
)


class ClassicDomain:
    record_types = frozenset({GROUP_METADATA_KEY_VERSION})

    def __init__(
        self, store: GroupStore, offsets: OffsetManager, loading: Callable[[], bool]
    ) -> None:
        self.store = store
        self.offsets = offsets
        self._loading = loading

    def apply(self, key: bytes, value: bytes | None, offset: int, producer_id: int | None) -> None:
        group_id: str = decode_key(key).group  # type: ignore[union-attr]
        decoded = None if value is None else decode_group_metadata_value(value)
        self.store.replay_metadata(group_id, decoded, offset)
        if self._loading():
            self._load_group(group_id, decoded)

    def snapshot(self, fx: Effects) -> Any | None:
        return None

    def restore(self, snapshots: list[Any], fx: Effects) -> None:
        pass

    def _load_group(self, group_id: str, v: GroupMetadataValue | None) -> None:
        """While loading: the group's transient state is what its record says."""
        if v is not None:
            self.store.groups[group_id] = ClassicGroup.from_record(group_id, v)
            return
        if self.store.get(group_id) is not None:
            if self.offsets.committed(group_id):
                self.store.groups[group_id] = ClassicGroup(group_id)
            else:
                self.store.remove(group_id)
        self.offsets.forget_if_idle(group_id)
