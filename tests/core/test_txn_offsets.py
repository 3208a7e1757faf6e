"""TxnOffsetCommit and transaction completion in the group coordinator: a
transactional producer's offsets stay invisible until its marker commits
them, and are dropped by an abort (Kafka's pending transactional offsets)."""

from __future__ import annotations

from muster.coordinator import errors as E
from muster.coordinator import requests as rq
from muster.coordinator.shard import CoordinatorShard
from muster.records.batch import build_batch
from muster.records.latest import Latest, TxnReplay, collect_latest
from muster.records.offsets_topic import OffsetCommitValue, offset_commit_record
from tests.core.harness import Harness

PID, EPOCH = 4000, 2


def txn_commit(h, offsets, *, pid=PID, group="g", generation=-1, member_id="") -> int:
    topics: dict[str, list[rq.CommitPartition]] = {}
    for (t, p), off in offsets.items():
        topics.setdefault(t, []).append(rq.CommitPartition(p, off, 1, "txn"))
    return h.send(
        rq.TxnOffsetCommit(
            group,
            pid,
            EPOCH,
            tuple(rq.CommitTopic(t, tuple(ps)) for t, ps in topics.items()),
            generation,
            member_id,
        )
    )


def committed(h, tp=("t", 0), *, stable=False):
    part = h.fetch({tp[0]: (tp[1],)}, require_stable=stable).topics[0].partitions[0]
    return part.error_code if part.error_code else part.committed_offset


def test_txn_offsets_are_pending_until_the_commit_marker() -> None:
    h = Harness()
    h.commit({("t", 0): 5})
    rid = txn_commit(h, {("t", 0): 9, ("t", 1): 3})
    resp = h.reply(rid)
    assert {p.error_code for t in resp.topics for p in t.partitions} == {E.NONE}
    assert committed(h) == 5  # read_uncommitted view: the last committed value
    assert committed(h, stable=True) == E.UNSTABLE_OFFSET_COMMIT
    done = h.send(rq.CompleteTxn(PID, EPOCH, True))
    assert h.reply(done) == E.NONE
    assert committed(h) == 9 and committed(h, ("t", 1)) == 3
    assert committed(h, stable=True) == 9


def test_abort_marker_drops_txn_offsets() -> None:
    h = Harness()
    h.commit({("t", 0): 5})
    h.reply(txn_commit(h, {("t", 0): 9}))
    assert h.reply(h.send(rq.CompleteTxn(PID, EPOCH, False))) == E.NONE
    assert committed(h) == 5 and committed(h, stable=True) == 5


def test_a_later_plain_commit_wins_over_an_earlier_txn_commit() -> None:
    h = Harness()
    h.reply(txn_commit(h, {("t", 0): 9}))
    h.commit({("t", 0): 12})
    h.reply(h.send(rq.CompleteTxn(PID, EPOCH, True)))
    assert committed(h) == 12


def test_markers_only_touch_their_own_producer() -> None:
    h = Harness()
    h.reply(txn_commit(h, {("t", 0): 9}, pid=PID))
    h.reply(txn_commit(h, {("t", 1): 4}, pid=PID + 1))
    h.reply(h.send(rq.CompleteTxn(PID + 1, EPOCH, True)))
    assert committed(h, ("t", 1)) == 4
    assert committed(h) == -1
    assert committed(h, stable=True) == E.UNSTABLE_OFFSET_COMMIT


def test_txn_commit_from_a_member_checks_generation_and_member() -> None:
    h = Harness(group_initial_rebalance_delay_ms=0)
    leader, *_ = h.form(1)
    gen = h.shard.group("g").generation
    ok = h.reply(txn_commit(h, {("t", 0): 1}, generation=gen, member_id=leader))
    assert ok.topics[0].partitions[0].error_code == E.NONE
    stale = h.reply(txn_commit(h, {("t", 0): 1}, generation=gen + 1, member_id=leader))
    assert stale.topics[0].partitions[0].error_code == E.ILLEGAL_GENERATION
    unknown = h.reply(txn_commit(h, {("t", 0): 1}, generation=gen, member_id="nobody"))
    assert unknown.topics[0].partitions[0].error_code == E.UNKNOWN_MEMBER_ID
    fresh = h.reply(txn_commit(h, {("t", 0): 1}, group="other", generation=3, member_id="x"))
    assert fresh.topics[0].partitions[0].error_code == E.ILLEGAL_GENERATION


def test_txn_offsets_replayed_through_the_loader_keep_their_fate() -> None:
    """Load path: commit markers apply a producer's offsets, abort markers
    drop them, an unended transaction's offsets come back pending."""
    latest: Latest = {}
    txns = TxnReplay()
    log = b"".join(
        (
            build_batch([offset_commit_record("g", "t", 0, OffsetCommitValue(5))], base_offset=0),
            txn_batch(PID, [offset_commit_record("g", "t", 0, OffsetCommitValue(9))], 1),
            txn_batch(PID + 1, [offset_commit_record("g", "t", 1, OffsetCommitValue(4))], 2),
            marker(PID, commit=True, offset=3),
            marker(PID + 1, commit=False, offset=4),
            txn_batch(PID + 2, [offset_commit_record("g", "t", 2, OffsetCommitValue(8))], 5),
        )
    )
    assert collect_latest(log, 0, latest, txns) == 6
    shard = CoordinatorShard(0, {"offsets.topic.num.partitions": 1})
    shard.replay_latest(latest)
    for pid, pending in txns.open.items():
        shard.replay_txn_offsets(pid, pending)
    shard.loaded(0)
    group = shard.group("g")
    assert group is not None
    assert {tp: c.offset for tp, c in shard.offsets.committed("g").items()} == {("t", 0): 9}
    assert {pid: set(p) for pid, p in shard.offsets.of("g").txn.items()} == {PID + 2: {("t", 2)}}


def txn_batch(pid: int, records, offset: int) -> bytes:
    return build_batch(
        records, base_offset=offset, producer_id=pid, producer_epoch=EPOCH, transactional=True
    )


def marker(pid: int, *, commit: bool, offset: int) -> bytes:
    key = b"\x00\x00\x00" + (b"\x01" if commit else b"\x00")
    return build_batch(
        [(key, b"\x00\x00\x00\x00\x00\x00")],
        base_offset=offset,
        producer_id=pid,
        producer_epoch=EPOCH,
        transactional=True,
        control=True,
    )


def test_txn_records_are_written_as_one_transactional_batch() -> None:
    shard = CoordinatorShard(0, {"offsets.topic.num.partitions": 1})
    shard.loaded(0)
    req = rq.TxnOffsetCommit(
        "g",
        PID,
        EPOCH,
        (rq.CommitTopic("t", (rq.CommitPartition(0, 7), rq.CommitPartition(1, 8))),),
    )
    result = shard.handle(1, req, 10)
    assert result.producer == (PID, EPOCH) and len(result.records) == 2
    assert not result.replies  # answered once the batch is durable
    marker = shard.handle(2, rq.CompleteTxn(PID, EPOCH, True), 11)
    assert marker.marker == (PID, EPOCH, True) and not marker.records



def test_a_tombstone_after_txn_offsets_takes_them_live_as_at_load() -> None:
    """Found by reliability/simulate.py: a tombstone for a partition (topic
    deleted, OffsetDelete) written after a transaction's offset and before its
    commit marker. The loader let the later tombstone win; live replay
    applied the transaction's offset at the marker, so a restart changed the
    committed offsets. Kafka's replay removes pending transactional offsets
    of the partition with the tombstone: now both do."""
    records = lambda off: [offset_commit_record("g", "t", 0, OffsetCommitValue(off))]  # noqa: E731
    tombstone = offset_commit_record("g", "t", 0, None)
    log = b"".join(
        (
            build_batch(records(5), base_offset=0),
            txn_batch(PID, records(9), 1),
            build_batch([tombstone], base_offset=2),
            marker(PID, commit=True, offset=3),
        )
    )
    latest: Latest = {}
    txns = TxnReplay()
    collect_latest(log, 0, latest, txns)
    loaded = CoordinatorShard(0, {"offsets.topic.num.partitions": 1})
    loaded.replay_latest(latest)
    live = CoordinatorShard(0, {"offsets.topic.num.partitions": 1})
    live.replay(*records(5)[0], 0)
    live.replay(*records(9)[0], 1, PID)
    live.replay(tombstone[0], None, 2)
    live.offsets.replay_marker(PID, True)
    for shard in (loaded, live):
        assert shard.offsets.committed("g") == {}


def test_delete_groups_tombstones_offsets_held_by_open_transactions() -> None:
    """Found by reliability/simulate.py: DeleteGroups of a group whose only
    offsets were a transaction's deleted the group, and the commit marker
    then brought the offsets back. Kafka tombstones pending transactional
    offsets with the group."""
    h = Harness()
    h.reply(txn_commit(h, {("t", 0): 9}))
    deleted = h.reply(h.send(rq.DeleteGroups(("g",))))
    assert deleted.results[0].error_code == E.NONE
    assert h.reply(h.send(rq.CompleteTxn(PID, EPOCH, True))) == E.NONE
    assert h.shard.offsets.committed("g") == {}
    restarted = Harness(now=h.now, log=h.log)  # the group must not come back
    assert restarted.shard.group("g") is None and committed(restarted) == -1


def test_an_open_transactions_offset_deleted_by_a_later_tombstone_stays_deleted_on_load() -> None:
    """Found by reliability/simulate.py: a transaction's offset, then a
    tombstone for its partition (topic deleted), then a restart before the
    marker. Live replay had dropped the pending offset with the tombstone;
    the loader brought it back pending and the marker then committed it."""
    log = b"".join(
        (
            txn_batch(PID, [offset_commit_record("g", "t", 0, OffsetCommitValue(9))], 0),
            build_batch([offset_commit_record("g", "t", 0, None)], base_offset=1),
        )
    )
    latest: Latest = {}
    txns = TxnReplay()
    collect_latest(log, 0, latest, txns)
    assert txns.still_open(latest) == {PID: {}}
    shard = CoordinatorShard(0, {"offsets.topic.num.partitions": 1})
    shard.replay_latest(latest)
    for pid, pending in txns.still_open(latest).items():
        shard.replay_txn_offsets(pid, pending)
    shard.offsets.replay_marker(PID, True)
    assert shard.offsets.committed("g") == {}
