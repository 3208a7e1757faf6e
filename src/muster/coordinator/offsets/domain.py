"""Committed offsets as a domain of the shard's one write path
(`coordinator/tracker.py`): OffsetCommit records apply once durable; what a
write in flight hides or holds meanwhile (`GroupOffsets.pending` /
`.deleting`) is repaired by its step's own continuations, so there is no
snapshot to restore."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from muster.coordinator.context import Effects
from muster.coordinator.offsets.manager import OffsetManager
from muster.coordinator.offsets.state import CommittedOffset
from muster.records.offsets_topic import (
    OFFSET_COMMIT_KEY_VERSION,
    offset_commit_key_fields,
    offset_commit_value_fields,
)


class OffsetsDomain:
    record_types = frozenset(range(OFFSET_COMMIT_KEY_VERSION + 1))  # key v0 and v1

    def __init__(self, offsets: OffsetManager, loading: Callable[[], bool]) -> None:
        self.offsets = offsets
        self._loading = loading

    def apply(self, key: bytes, value: bytes | None, offset: int, producer_id: int | None) -> None:
        fields = offset_commit_key_fields(key)
        assert fields is not None  # a v0/v1 key is read, or its reader raises
        group_id, topic, partition = fields
        committed = (
            None if value is None else CommittedOffset(*offset_commit_value_fields(value), offset)
        )
        self.offsets.replay_offset(group_id, (topic, partition), committed, offset, producer_id)
        if committed is not None and self._loading():
            self.offsets.store.get_or_create(group_id)  # offsets alone make a (simple) group

    def snapshot(self, fx: Effects) -> Any | None:
        return None

    def restore(self, snapshots: list[Any], fx: Effects) -> None:
        pass
