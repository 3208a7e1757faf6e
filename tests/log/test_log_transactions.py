"""Transactions on the partition log, against both the segment log and the
in-memory log: markers, the first unstable offset (LSO), the aborted
transaction index and its query, epoch fencing by markers, retention and
compaction; then the segment log's recovery of that state (clean reopen,
crash, lost or torn snapshots)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from muster.log.config import LogConfig
from muster.log.memory_log import MemoryLog
from muster.log.port import (
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    PartitionLog,
)
from muster.log.segment_log import SegmentLog
from muster.records.batch import BatchHeader, Record, build_batch, iter_batches, iter_records
from muster.records.control import ABORT, COMMIT, control_type, end_txn_marker
from tests.log.conftest import MakeLog


def txn(pid: int, seq: int, n: int = 1, *, epoch: int = 0, key: bytes = b"k") -> bytes:
    return build_batch(
        [Record(key + b"%d" % i, b"txn-%d" % pid, (), 1_000 + i) for i in range(n)],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        transactional=True,
    )


def plain(n: int = 1, key: bytes = b"p", value: bytes = b"plain") -> bytes:
    return build_batch([Record(key, value, (), 1_000 + i) for i in range(n)])


def batches(log: PartitionLog) -> list[tuple[BatchHeader, bytes]]:
    """Every stored batch with its bytes (a segment log reads one segment at a time)."""
    out = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 30)
        for h in iter_batches(data):
            out.append((h, data[h.position : h.end]))
            offset = h.next_offset
    return out


def state_from_data(log: PartitionLog) -> tuple[int | None, list[tuple[int, int]]]:
    """(first unstable offset, aborted (pid, first offset)) worked out from the
    stored batches alone, the way a read_committed reader sees them."""
    ongoing: dict[int, int] = {}
    aborted = []
    for h, raw in batches(log):
        if not h.is_transactional:
            continue
        if h.is_control:
            first = ongoing.pop(h.producer_id, None)
            if first is not None and control_type(raw) == ABORT:
                aborted.append((h.producer_id, first))
        else:
            ongoing.setdefault(h.producer_id, h.base_offset)
    return min(ongoing.values(), default=None), sorted(aborted, key=lambda a: a[1])


# ---------------------------------------------------------------- markers


def test_marker_is_a_control_batch_that_ends_the_transaction(make_log: MakeLog) -> None:
    log = make_log()
    log.append(plain(), 0)
    assert log.first_unstable_offset() is None
    assert log.append(txn(7, 0, 2), 0).base_offset == 1
    assert log.first_unstable_offset() == 1
    log.append(plain(), 0)  # other producers' data does not end it
    assert log.first_unstable_offset() == 1
    info = log.append_marker(7, 0, True, 3, 5_000)
    assert (info.base_offset, info.last_offset, info.duplicate) == (4, 4, False)
    assert log.log_end_offset == 5 and log.first_unstable_offset() is None
    assert log.aborted_transactions(0, 5) == []  # committed: nothing to skip
    h, raw = batches(log)[-1]
    assert h.is_control and h.is_transactional and h.base_sequence == -1
    assert (h.producer_id, h.producer_epoch, h.max_timestamp) == (7, 0, 5_000)
    [record] = list(iter_records(raw))
    assert record.key == b"\x00\x00\x00\x01"  # version 0, COMMIT
    assert record.value == b"\x00\x00\x00\x00\x00\x03"  # version 0, coordinator epoch 3
    assert control_type(raw) == COMMIT


def test_a_transaction_is_unstable_until_its_marker_is_below_the_high_watermark(
    make_log: MakeLog,
) -> None:
    log = make_log()
    log.append(txn(1, 0, 2), 0)  # 0-1
    log.append(plain(), 0)  # 2
    log.flush()
    log.append_marker(1, 0, True, 0, 0)  # 3, not yet durable
    assert log.first_unstable_offset() is None
    assert log.first_unstable_offset(3) == 0  # readers must not see the outcome yet
    assert log.first_unstable_offset(4) is None
    log.append(txn(2, 0), 0)  # 4
    log.append_marker(2, 0, False, 0, 0)  # 5
    assert log.first_unstable_offset(5) == 4
    log.flush()
    assert log.first_unstable_offset(log.flushed_offset) is None


def test_marker_without_a_transaction_is_written_but_aborts_nothing(make_log: MakeLog) -> None:
    log = make_log()
    assert log.append_marker(9, 0, False, 0, 0).base_offset == 0
    assert log.append_marker(9, 0, True, 0, 0).base_offset == 1
    assert log.first_unstable_offset() is None
    assert log.aborted_transactions(0, 10) == []


def test_clients_cannot_write_control_batches(make_log: MakeLog) -> None:
    log = make_log()
    with pytest.raises(InvalidRecordError):
        log.append(end_txn_marker(1, 0, True, 0, 0), 0)
    with pytest.raises(InvalidRecordError):  # not even behind a data batch
        log.append(plain() + end_txn_marker(1, 0, True, 0, 0), 0)
    assert log.log_end_offset == 0


def test_interleaved_producers_and_the_lso(make_log: MakeLog) -> None:
    log = make_log()
    log.append(txn(1, 0), 0)  # 0
    log.append(txn(2, 0), 0)  # 1
    log.append(txn(1, 1), 0)  # 2
    log.append(plain(), 0)  # 3
    assert log.first_unstable_offset() == 0
    log.append_marker(1, 0, True, 0, 0)  # 4
    assert log.first_unstable_offset() == 1
    log.append(txn(1, 2), 0)  # 5: producer 1's next transaction
    log.append_marker(2, 0, False, 0, 0)  # 6
    assert log.first_unstable_offset() == 5
    assert log.aborted_transactions(0, 7) == [(2, 1)]
    log.append_marker(1, 0, False, 0, 0)  # 7
    assert log.first_unstable_offset() is None
    assert log.aborted_transactions(0, 8) == [(2, 1), (1, 5)]
    assert state_from_data(log) == (None, [(2, 1), (1, 5)])


def test_aborted_transactions_query(make_log: MakeLog) -> None:
    log = make_log()
    log.append(txn(1, 0), 0)  # 0: producer 1 starts
    log.append(txn(2, 0, 2), 0)  # 1-2: producer 2 starts
    log.append_marker(2, 0, False, 0, 0)  # 3: aborts 1..3
    log.append(plain(), 0)  # 4
    log.append_marker(1, 0, False, 0, 0)  # 5: aborts 0..5
    log.append(txn(3, 0), 0)  # 6
    log.append_marker(3, 0, False, 0, 0)  # 7: aborts 6..7
    # last offset >= fetch offset, first offset < upper; by first offset
    assert log.aborted_transactions(0, 8) == [(1, 0), (2, 1), (3, 6)]
    assert log.aborted_transactions(0, 1) == [(1, 0)]
    assert log.aborted_transactions(1, 2) == [(1, 0), (2, 1)]
    assert log.aborted_transactions(4, 6) == [(1, 0)]
    assert log.aborted_transactions(4, 7) == [(1, 0), (3, 6)]
    assert log.aborted_transactions(6, 8) == [(3, 6)]
    assert log.aborted_transactions(8, 9) == []


@pytest.mark.parametrize("seed", range(4))
def test_lso_and_aborted_index_match_a_brute_force_model(make_log: MakeLog, seed: int) -> None:
    rng = random.Random(seed)
    log = make_log()
    seqs = dict.fromkeys(range(1, 6), 0)
    ongoing: dict[int, int] = {}
    aborted: list[tuple[int, int, int]] = []
    for _ in range(150):
        pid = rng.choice(list(seqs))
        roll = rng.random()
        if roll < 0.45:
            n = rng.randint(1, 3)
            info = log.append(txn(pid, seqs[pid], n), 0)
            seqs[pid] += n
            ongoing.setdefault(pid, info.base_offset)
        elif roll < 0.6:
            log.append(plain(rng.randint(1, 2)), 0)
        else:
            commit = rng.random() < 0.5
            offset = log.append_marker(pid, 0, commit, 0, 0).base_offset
            first = ongoing.pop(pid, None)
            if first is not None and not commit:
                aborted.append((pid, first, offset))
        assert log.first_unstable_offset() == min(ongoing.values(), default=None)
    end = log.log_end_offset
    for fetch in range(end + 1):
        for upper in range(fetch, end + 2):
            want = sorted(
                ((p, f) for p, f, last in aborted if last >= fetch and f < upper),
                key=lambda a: a[1],
            )
            assert log.aborted_transactions(fetch, upper) == want, (fetch, upper)
    assert state_from_data(log) == (
        min(ongoing.values(), default=None),
        sorted(((p, f) for p, f, _ in aborted), key=lambda a: a[1]),
    )


# ---------------------------------------------------------------- producer checks


def test_marker_epochs_fence(make_log: MakeLog) -> None:
    log = make_log()
    log.append(txn(4, 0, 2, epoch=1), 0)
    with pytest.raises(InvalidProducerEpochError):
        log.append_marker(4, 0, True, 0, 0)  # older than the producer's epoch
    assert log.log_end_offset == 2 and log.first_unstable_offset() == 0
    # a bumped epoch (the coordinator aborting a fenced producer's transaction)
    log.append_marker(4, 2, False, 0, 0)
    assert log.first_unstable_offset() is None and log.aborted_transactions(0, 3) == [(4, 0)]
    with pytest.raises(InvalidProducerEpochError):  # the old epoch is fenced
        log.append(txn(4, 2, epoch=1), 0)
    with pytest.raises(OutOfOrderSequenceError):  # the new epoch starts at sequence 0
        log.append(txn(4, 5, epoch=2), 0)
    assert log.append(txn(4, 0, epoch=2), 0).base_offset == 3


def test_same_epoch_marker_keeps_the_sequence(make_log: MakeLog) -> None:
    log = make_log()
    log.append(txn(4, 0, 2), 0)
    log.append_marker(4, 0, True, 0, 0)
    with pytest.raises(OutOfOrderSequenceError):
        log.append(txn(4, 0), 0)
    assert log.append(txn(4, 2), 0).base_offset == 3
    assert log.append(txn(4, 2), 0).duplicate  # a retry is still recognised


def test_plain_batch_inside_a_transaction_is_invalid_txn_state(make_log: MakeLog) -> None:
    log = make_log()
    log.append(txn(4, 0), 0)
    idempotent = build_batch([(b"k", b"v")], producer_id=4, producer_epoch=0, base_sequence=1)
    with pytest.raises(InvalidTxnStateError) as err:
        log.append(idempotent, 0)
    assert err.value.error_code == 48
    assert log.log_end_offset == 1
    log.append_marker(4, 0, True, 0, 0)
    assert log.append(idempotent, 0).base_offset == 2  # fine once it ended


# ---------------------------------------------------------------- retention, compaction


def test_retention_forgets_aborted_transactions_below_the_log_start(tmp_path: Path) -> None:
    mem = MemoryLog("t", 0)
    seg = SegmentLog(tmp_path / "t-0", "t", 0, LogConfig(retention_bytes=1))
    for log in (mem, seg):
        log.append(txn(1, 0), 0)  # 0
        log.append_marker(1, 0, False, 0, 0)  # 1
        if isinstance(log, SegmentLog):
            log.roll()
        log.append(txn(2, 0), 0)  # 2
        log.append(plain(3), 0)  # 3-5
        log.append_marker(2, 0, False, 0, 0)  # 6
        if isinstance(log, SegmentLog):
            log.roll()
        log.append(plain(3), 0)  # 7-9
    mem.truncate_prefix(2)
    assert [a.first_offset for a in mem.producers.aborted] == [2]
    seg.remove_segments(seg.segments[:1])  # what retention does
    assert seg.log_start_offset == 2
    assert seg.aborted_transactions(2, seg.log_end_offset) == [(2, 2)]
    seg.roll()  # the appending thread prunes (here: at a roll)
    assert [a.first_offset for a in seg.producers.aborted] == [2]
    seg.flush()
    crashed = SegmentLog(tmp_path / "t-0", "t", 0, LogConfig())
    assert [a.first_offset for a in crashed.producers.aborted] == [2]
    crashed.close()
    clean = SegmentLog(tmp_path / "t-0", "t", 0, LogConfig(), clean_shutdown=True)
    assert [a.first_offset for a in clean.producers.aborted] == [2]


def test_compaction_keeps_transactional_batches_and_markers(make_log: MakeLog) -> None:
    log = make_log(cleanup_policy="compact", segment_bytes=1 << 20)
    log.append(plain(key=b"K", value=b"v1"), 0)  # 0
    log.append(txn(1, 0, key=b"K"), 0)  # 1: K0 committed
    log.append_marker(1, 0, True, 0, 0)  # 2
    log.append(txn(2, 0, key=b"K"), 0)  # 3: K0 aborted
    log.append_marker(2, 0, False, 0, 0)  # 4
    log.append(plain(key=b"J", value=b"j1"), 0)  # 5
    log.append(plain(key=b"J", value=b"j2"), 0)  # 6
    log.append(plain(key=b"K0", value=b"later"), 0)  # 7
    before = {h.base_offset: raw for h, raw in batches(log)}
    if isinstance(log, SegmentLog):
        log.roll()
    stats = log.compact(10**12)  # type: ignore[attr-defined]
    assert stats.records_removed == 1  # only J=j1: plain records still compact
    after = {h.base_offset: raw for h, raw in batches(log)}
    assert sorted(after) == [0, 1, 2, 3, 4, 6, 7]
    # the transaction's batches and markers are kept byte for byte, and the
    # aborted K0 (offset 3) removed neither the committed K0 nor the plain K
    assert all(after[o] == before[o] for o in (0, 1, 2, 3, 4))
    assert log.aborted_transactions(0, 8) == [(2, 3)]


# ---------------------------------------------------------------- recovery (segment log)


SMALL = {"segment_bytes": 400, "index_interval_bytes": 100}


def open_log(path: Path, clean: bool = False) -> SegmentLog:
    return SegmentLog(path, "t", 0, LogConfig(**SMALL), clean_shutdown=clean)  # type: ignore[arg-type]


def build_history(log: SegmentLog) -> None:
    """Transactions spread over many segments: aborted ones early, one that
    stays open from an early segment to the end, epochs bumped by markers."""
    log.append(txn(1, 0), 0)
    log.append(txn(2, 0), 0)
    for i in range(6):
        log.append(plain(2), 0)
        log.append(txn(3, i), 0)
    log.append_marker(2, 0, False, 0, 0)  # aborted, early
    log.append_marker(3, 0, True, 0, 0)
    log.append(txn(4, 0), 0)
    for _ in range(6):
        log.append(plain(3), 0)
    log.append_marker(4, 1, False, 0, 0)  # aborted with a bumped epoch
    log.append(txn(5, 0), 0)
    log.append(plain(), 0)
    log.append_marker(5, 0, False, 0, 0)
    log.append(txn(2, 1), 0)  # producer 2's next transaction, still open
    # producer 1's transaction (offset 0) is still open too


def snapshot_of(log: SegmentLog) -> tuple[object, ...]:
    epochs = {pid: e.epoch for pid, e in log.producers.producers.items()}
    return (
        log.log_end_offset,
        log.first_unstable_offset(),
        log.aborted_transactions(0, log.log_end_offset),
        dict(log.producers.ongoing),
        epochs,
    )


@pytest.mark.parametrize("how", ["clean", "crash", "crash_no_snapshots", "crash_torn_snapshot"])
def test_transaction_state_survives_reopen(tmp_path: Path, how: str) -> None:
    d = tmp_path / "t-0"
    log = open_log(d)
    build_history(log)
    assert len(log.segments) > 5
    want = snapshot_of(log)
    assert want[1] == 0 and len(want[2]) == 3  # type: ignore[arg-type]
    assert (want[1], want[2]) == state_from_data(log)
    if how == "clean":
        log.close()
    else:
        log.flush()  # a crash: no close, no clean-shutdown snapshot
        snaps = sorted(d.glob("*.snapshot"))
        assert len(snaps) == 1  # only the newest durable one is kept
        if how == "crash_no_snapshots":
            snaps[0].unlink()
        elif how == "crash_torn_snapshot":
            snaps[0].write_text(snaps[0].read_text()[:20])
    log = open_log(d, clean=how == "clean")
    assert snapshot_of(log) == want
    with pytest.raises(InvalidProducerEpochError):  # the marker's epoch bump survived
        log.append(txn(4, 0, epoch=0), 0)
    log.append_marker(1, 0, True, 0, 0)
    log.append_marker(2, 0, False, 0, 0)
    assert log.first_unstable_offset() is None
    assert len(log.aborted_transactions(0, log.log_end_offset)) == 4


def test_snapshot_past_a_torn_tail_is_not_used(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = open_log(d)
    build_history(log)
    log.flush()
    # tear the second-to-last segment: recovery cuts it and drops the last
    # one, so the roll snapshot at the last segment's base is in the future
    seg = log.segments[-2]
    last_base = log.segments[-1].base_offset
    os_size = seg.log_path.stat().st_size
    with open(seg.log_path, "r+b") as f:
        f.truncate(os_size - 5)
    log = open_log(d)
    assert log.log_end_offset < last_base
    assert all(int(p.name.split(".")[0]) <= log.log_end_offset for p in d.glob("*.snapshot"))
    assert (log.first_unstable_offset(), log.aborted_transactions(0, 10**9)) == state_from_data(log)
