"""Modern (KIP-848) groups as a domain of the shard's one write path
(`coordinator/tracker.py`). Their records are applied when a handler writes
them (`writes.write`, as Kafka does), so a step's snapshot is the groups it
changed as they were before it (`Effects.modern_undo`); a failed append restores
them and their members' timers follow (`shard_api.retime`). Records of a
write whose snapshot was restored are applied once durable, like any other."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from muster.coordinator.context import Effects, TimerKey
from muster.coordinator.groups.modern import shard_api
from muster.coordinator.groups.modern.writes import revert
from muster.coordinator.groups.store import GroupStore
from muster.records.modern_group_records import RECORD_TYPES


class ModernDomain:
    record_types = frozenset(RECORD_TYPES)

    def __init__(self, store: GroupStore, armed: Callable[[], list[TimerKey]]) -> None:
        self.store = store
        self._armed = armed  # the shard's timers now armed

    def apply(self, key: bytes, value: bytes | None, offset: int, producer_id: int | None) -> None:
        shard_api.replay(self.store, key, value)

    def snapshot(self, fx: Effects) -> Mapping[str, Any] | None:
        return fx.modern_undo or None

    def restore(self, snapshots: list[Any], fx: Effects) -> None:
        touched: set[str] = set()
        for undo in snapshots:
            revert(self.store, undo)
            touched.update(undo)
        shard_api.retime(self.store, fx, touched, self._armed())
