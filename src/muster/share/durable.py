"""The durable state of share partitions (Kafka's share coordinator), pure:
what `__share_group_state` holds, the records a change writes, and the one
replay that applies them.

A share partition's durable state is its state epoch, its start offset (the
SPSO) and state batches: offset ranges with a delivery state (AVAILABLE,
ACKNOWLEDGED, ARCHIVED) and a delivery count. A change is written as a
ShareUpdate carrying only the batches it changed; every
`share.coordinator.snapshot.update.records.per.snapshot` updates (Kafka: 500)
the merged state is written whole as a ShareSnapshot, which replaces
everything before it. Records are computed here (`write`, `initialize`,
`delete`) and applied only by `replay`, both right after an append and at
load, so state = fold(replay, log). `prunable` says where the log may start:
below the oldest snapshot any live share partition still needs, nothing is
read again (Kafka's share coordinator deletes records the same way).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from muster.records.share_state_records import (
    SNAPSHOT,
    UPDATE,
    ShareSnapshotValue,
    ShareStateKey,
    ShareUpdateValue,
    StateBatch,
)

# a record as appended: (record type, key, value or None for a tombstone)
Record = tuple[int, ShareStateKey, ShareSnapshotValue | ShareUpdateValue | None]


@dataclass(frozen=True, slots=True)
class DurableState:
    snapshot_epoch: int
    state_epoch: int
    start_offset: int
    batches: tuple[StateBatch, ...]
    updates: int  # ShareUpdates applied since the snapshot
    snapshot_offset: int  # where the snapshot is in the log (pruning)
    create_timestamp: int


def merge(
    old: Iterable[StateBatch], new: Iterable[StateBatch], start: int
) -> tuple[StateBatch, ...]:
    """`old` overwritten by `new` where they overlap, cut at `start`, and
    neighbours with one state and count joined."""
    batches = sorted(old, key=lambda b: b.first_offset)
    for b in sorted(new, key=lambda b: b.first_offset):
        kept: list[StateBatch] = []
        for o in batches:
            if o.last_offset < b.first_offset or o.first_offset > b.last_offset:
                kept.append(o)
                continue
            if o.first_offset < b.first_offset:
                kept.append(_cut(o, o.first_offset, b.first_offset - 1))
            if o.last_offset > b.last_offset:
                kept.append(_cut(o, b.last_offset + 1, o.last_offset))
        kept.append(b)
        batches = sorted(kept, key=lambda x: x.first_offset)
    out: list[StateBatch] = []
    for b in batches:
        if b.last_offset < start:
            continue
        if b.first_offset < start:
            b = _cut(b, start, b.last_offset)
        prev = out[-1] if out else None
        if (
            prev is not None
            and prev.last_offset + 1 == b.first_offset
            and (prev.delivery_state, prev.delivery_count) == (b.delivery_state, b.delivery_count)
        ):
            out[-1] = _cut(prev, prev.first_offset, b.last_offset)
        else:
            out.append(b)
    return tuple(out)


def _cut(b: StateBatch, first: int, last: int) -> StateBatch:
    return StateBatch(first, last, b.delivery_state, b.delivery_count)


class ShareStateStore:
    """Every share partition's durable state, keyed like the records."""

    def __init__(self, per_snapshot: int = 500) -> None:
        self.per_snapshot = max(1, per_snapshot)
        self.states: dict[ShareStateKey, DurableState] = {}

    # ---- compute: the records a change writes (nothing changes here) ------

    def initialize(self, key: ShareStateKey, start: int, now: int) -> Record:
        """A share partition starts at `start` with nothing in flight: a
        snapshot with the next state epoch (first use, or offsets reset)."""
        current = self.states.get(key)
        state_epoch = 0 if current is None else current.state_epoch + 1
        return self._snapshot(key, current, state_epoch, start, (), now)

    def write(
        self, key: ShareStateKey, start: int, batches: tuple[StateBatch, ...], now: int
    ) -> Record:
        """The record for a change: the SPSO now and the batches that changed.
        An update, or the whole merged state as a snapshot when the updates
        since the last one reach the cadence (or there is no state yet)."""
        current = self.states.get(key)
        if current is None:
            return self._snapshot(key, None, 0, start, merge((), batches, start), now)
        if current.updates + 1 >= self.per_snapshot:
            merged = merge(current.batches, batches, start)
            return self._snapshot(key, current, current.state_epoch, start, merged, now)
        # delivery_complete_count counts the whole partition's finished
        # records: an update knows only its own batches, so it leaves it out
        value = ShareUpdateValue(current.snapshot_epoch, 0, start, batches)
        return UPDATE, key, value

    def delete(self, key: ShareStateKey) -> list[Record]:
        """Tombstones for both record types of the share partition."""
        return [(SNAPSHOT, key, None), (UPDATE, key, None)]

    def _snapshot(
        self,
        key: ShareStateKey,
        current: DurableState | None,
        state_epoch: int,
        start: int,
        batches: tuple[StateBatch, ...],
        now: int,
    ) -> Record:
        epoch = 0 if current is None else current.snapshot_epoch + 1
        created = now if current is None else current.create_timestamp
        value = ShareSnapshotValue(
            epoch, state_epoch, 0, start, created, now, batches, _complete(batches, start)
        )
        return SNAPSHOT, key, value

    # ---- replay: the only place the state changes ---------------------------

    def replay(self, record: Record, offset: int) -> None:
        _, key, value = record
        if value is None:
            self.states.pop(key, None)  # a tombstone for an unknown key is a no-op
            return
        current = self.states.get(key)
        if isinstance(value, ShareSnapshotValue):
            self.states[key] = DurableState(
                value.snapshot_epoch,
                value.state_epoch,
                value.start_offset,
                merge((), value.state_batches, value.start_offset),
                0,
                offset,
                value.create_timestamp,
            )
            return
        # an update belongs to the snapshot it names; one for an older
        # snapshot (or with none loaded) is stale (Kafka ignores it too)
        if current is None or value.snapshot_epoch != current.snapshot_epoch:
            return
        start = max(current.start_offset, value.start_offset)
        self.states[key] = DurableState(
            current.snapshot_epoch,
            current.state_epoch,
            start,
            merge(current.batches, value.state_batches, start),
            current.updates + 1,
            current.snapshot_offset,
            current.create_timestamp,
        )

    # ---- reading -------------------------------------------------------------

    def get(self, key: ShareStateKey) -> DurableState | None:
        return self.states.get(key)

    def prunable(self, keys_here: Iterable[ShareStateKey], log_end: int) -> int:
        """The offset below which one log partition's records are not needed:
        the oldest snapshot a live share partition there still starts from."""
        offsets = [self.states[k].snapshot_offset for k in keys_here if k in self.states]
        return min(offsets, default=log_end)


def _complete(batches: Iterable[StateBatch], start: int) -> int:
    """Records finished (acknowledged or archived) in the batches from `start`."""
    return sum(
        b.last_offset - max(b.first_offset, start) + 1
        for b in batches
        if b.delivery_state in (2, 4) and b.last_offset >= start
    )
