"""The durable state of share partitions (`muster.share.durable`, Kafka's
share coordinator): the records a change writes (updates with the changed
batches, a snapshot every N), the one replay, state rebuilt from the
records equal to the state live, stale updates and tombstones, where the
log may be pruned; and a share partition rebuilt from what was written
(`SharePartition.take_changes` / `from_state`)."""

from __future__ import annotations

import uuid

from muster.records.share_state_records import (
    SNAPSHOT,
    UPDATE,
    ShareStateKey,
    ShareUpdateValue,
    StateBatch,
    decode_share_state_record,
    share_state_record,
)
from muster.share.durable import Record, ShareStateStore, merge
from muster.share.partition import AckType, Batch, RecordState, SharePartition

KEY = ShareStateKey("g", uuid.UUID(int=7), 0)
AVAILABLE, ACKED, ARCHIVED = 0, 2, 4


class Log:
    """A store written through, and every record kept to replay."""

    def __init__(self, per_snapshot: int = 500) -> None:
        self.store = ShareStateStore(per_snapshot)
        self.records: list[Record] = []

    def append(self, record: Record) -> Record:
        # through the bytes, as the broker writes and loads them
        key, value = share_state_record(record[1], record[2], record[0])
        self.store.replay(decode_share_state_record(key, value), len(self.records))
        self.records.append(record)
        return record

    def rebuilt(self, start: int = 0, per_snapshot: int = 500) -> ShareStateStore:
        again = ShareStateStore(per_snapshot)
        for offset, record in enumerate(self.records[start:], start):
            again.replay(record, offset)
        return again


def test_merge_overwrites_cuts_and_joins() -> None:
    old = [StateBatch(0, 9, AVAILABLE, 1)]
    new = [StateBatch(3, 4, ACKED, 1), StateBatch(5, 5, AVAILABLE, 1)]
    assert merge(old, new, 2) == (
        StateBatch(2, 2, AVAILABLE, 1),
        StateBatch(3, 4, ACKED, 1),
        StateBatch(5, 9, AVAILABLE, 1),  # 5 rejoins its neighbours: same state and count
    )
    assert merge(old, [StateBatch(8, 12, ARCHIVED, 5)], 9) == (StateBatch(9, 12, ARCHIVED, 5),)


def test_updates_between_snapshots_and_replay_equals_live() -> None:
    log = Log(per_snapshot=3)
    log.append(log.store.initialize(KEY, 10, now=1))
    kinds = []
    for i in range(7):
        change = (StateBatch(10 + i, 10 + i, ACKED, 1),)
        kinds.append(log.append(log.store.write(KEY, 10, change, now=2 + i))[0])
    # a snapshot every third write: the update that would be the third is one
    assert kinds == [UPDATE, UPDATE, SNAPSHOT, UPDATE, UPDATE, SNAPSHOT, UPDATE]
    state = log.store.get(KEY)
    assert state is not None
    assert state.batches == (StateBatch(10, 16, ACKED, 1),)
    assert state.state_epoch == 0 and state.snapshot_epoch == 2
    assert log.rebuilt().states == log.store.states
    # a snapshot counts the finished records it holds; an update leaves it out (-1)
    assert [getattr(r[2], "delivery_complete_count", None) for r in log.records[5:8]] == [-1, 6, -1]
    # from the last snapshot on is enough: what comes before may go
    assert log.store.prunable([KEY], len(log.records)) == 6
    assert log.rebuilt(start=6).states == log.store.states


def test_a_reset_is_a_snapshot_with_the_next_state_epoch_and_drops_the_batches() -> None:
    log = Log()
    log.append(log.store.initialize(KEY, 0, now=1))
    log.append(log.store.write(KEY, 0, (StateBatch(0, 4, ARCHIVED, 5),), now=2))
    kind, _, _ = log.append(log.store.initialize(KEY, 100, now=3))
    assert kind == SNAPSHOT
    state = log.store.get(KEY)
    assert state is not None and (state.state_epoch, state.start_offset) == (1, 100)
    assert state.batches == () and state.create_timestamp == 1


def test_an_update_for_another_snapshot_is_stale() -> None:
    store = ShareStateStore()
    store.replay(store.initialize(KEY, 0, now=1), 0)
    store.replay((UPDATE, KEY, ShareUpdateValue(5, 0, 3, ())), 1)
    state = store.get(KEY)
    assert state is not None and state.start_offset == 0
    # with no snapshot at all (pruned or never written) an update is no state
    other = ShareStateKey("g", uuid.UUID(int=8), 0)
    store.replay((UPDATE, other, ShareUpdateValue(0, 0, 3, ())), 2)
    assert store.get(other) is None


def test_tombstones_forget_the_partition() -> None:
    log = Log()
    log.append(log.store.initialize(KEY, 0, now=1))
    for record in log.store.delete(KEY):
        log.append(record)
    assert log.store.get(KEY) is None and log.rebuilt().states == {}
    assert log.store.prunable([KEY], 3) == 3  # nothing live: all of it may go


def test_a_share_partition_rebuilt_from_what_was_written() -> None:
    """Accepted and rejected records stay done; released ones keep their
    count; records locked when the broker stopped are available again."""
    sp = SharePartition(0, 0)
    assert sp.acquire("a", [Batch(0, 9)], 0, 10, now=0) == [(0, 9, 1)]
    sp.acknowledge("a", 0, 1, (AckType.ACCEPT,), now=1)
    sp.acknowledge("a", 3, 3, (AckType.REJECT,), now=1)
    sp.acknowledge("a", 4, 4, (AckType.RELEASE,), now=1)
    changes = sp.take_changes()
    assert sp.spso == 2
    assert changes == [(3, 3, ARCHIVED, 1), (4, 4, AVAILABLE, 1)]  # 0-1: below the SPSO
    assert not sp.needs_write()
    store = ShareStateStore()
    store.replay(store.initialize(KEY, 0, now=1), 0)
    store.replay(store.write(KEY, sp.spso, tuple(StateBatch(*c) for c in changes), now=2), 1)
    state = store.get(KEY)
    assert state is not None
    batches = [
        (b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in state.batches
    ]
    again = SharePartition.from_state(state.start_offset, batches)
    assert again.spso == 2 and again.speo == 5
    assert again.records[3].state is RecordState.ARCHIVED
    # 2 was locked and never written: available, not yet delivered; 4 released once
    got = again.acquire("b", [Batch(0, 9)], 2, 10, now=5)
    assert got == [(2, 2, 1), (4, 4, 2), (5, 9, 1)]


def test_lock_expiry_and_a_closed_session_are_changes_to_write() -> None:
    sp = SharePartition(0, 0, lock_ms=10)
    sp.acquire("a", [Batch(0, 1)], 0, 1, now=0)
    sp.take_changes()
    sp.expire(now=20)
    assert sp.take_changes() == [(0, 0, AVAILABLE, 1)]
    sp.acquire("b", [Batch(0, 1)], 0, 2, now=30)
    sp.release_member("b")
    assert sp.take_changes() == [(0, 0, AVAILABLE, 2), (1, 1, AVAILABLE, 1)]
    # a renewed lock changes nothing durable
    sp.acquire("c", [Batch(0, 1)], 0, 1, now=40)
    sp.acknowledge("c", 0, 0, (AckType.RENEW,), now=41)
    assert not sp.needs_write()
