"""Committed offsets as a domain of the shard's one write path
(`coordinator/tracker.py`): OffsetCommit records apply once durable; what a
write in flight hides or holds meanwhile (`GroupOffsets.pending` /
`.deleting`) is repaired by its step's own continuations, so there is no
snapshot to restore.

Its `apply` is the one reader of OffsetCommit records, at load (nearly all
of a large log) and live alike, so it reads them the fast way: the records'
own readers (`muster.records.offsets_topic`) give plain fields, without key
or value objects, and the (group, topic) of a key is read once per run of
keys that share it (`OffsetCommitKeyReader`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from muster.coordinator.context import Effects
from muster.coordinator.offsets.manager import OffsetManager
from muster.coordinator.offsets.state import CommittedOffset
from muster.records.offsets_topic import (
    OFFSET_COMMIT_KEY_VERSION,
    OffsetCommitKeyReader,
    offset_commit_value_fields,
)


class OffsetsDomain:
    record_types = frozenset(range(OFFSET_COMMIT_KEY_VERSION + 1))  # key v0 and v1

    def __init__(self, offsets: OffsetManager, loading: Callable[[], bool]) -> None:
        self.offsets = offsets
        self._loading = loading
        self._read_key = OffsetCommitKeyReader().read
        self._groups = offsets.store.groups

    def apply(self, key: bytes, value: bytes | None, offset: int, producer_id: int | None) -> None:
        group_id, topic, partition = self._read_key(key)
        committed = (
            None if value is None else CommittedOffset(*offset_commit_value_fields(value), offset)
        )
        self.offsets.replay_offset(group_id, (topic, partition), committed, offset, producer_id)
        # while loading, offsets alone make a (simple) group; the group's
        # presence is asked first, as nearly every record finds it
        if committed is not None and group_id not in self._groups and self._loading():
            self.offsets.store.get_or_create(group_id)

    def snapshot(self, fx: Effects) -> Any | None:
        return None

    def restore(self, snapshots: list[Any], fx: Effects) -> None:
        pass
