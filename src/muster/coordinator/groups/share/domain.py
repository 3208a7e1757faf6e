"""Share groups as a domain of the shard's one write path
(`coordinator/tracker.py`): applied when written (`heartbeat.write`), so a
step's snapshot is the groups it changed as they were before it
(`Effects.share_undo`); a failed append puts them back."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from muster.coordinator.context import Effects
from muster.coordinator.groups.share.group import ShareGroup, apply
from muster.coordinator.groups.store import GroupStore
from muster.records.share_group_records import RECORD_TYPES, decode_share_group_record


class ShareDomain:
    record_types = frozenset(RECORD_TYPES)

    def __init__(self, store: GroupStore) -> None:
        self.store = store

    def apply(self, key: bytes, value: bytes | None, offset: int, producer_id: int | None) -> None:
        typed_key, typed_value = decode_share_group_record(key, value)
        apply(self.store.share, typed_key, typed_value)

    def snapshot(self, fx: Effects) -> Mapping[str, ShareGroup | None] | None:
        return fx.share_undo or None

    def restore(self, snapshots: list[Any], fx: Effects) -> None:
        # latest write first: the oldest snapshot is put back last and wins
        for undo in snapshots:
            for gid, before in undo.items():
                if before is None:
                    self.store.share.pop(gid, None)
                else:
                    self.store.share[gid] = before.copy()
