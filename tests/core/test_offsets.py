"""OffsetCommit / OffsetFetch / OffsetDelete / DeleteGroups and expiry."""

from __future__ import annotations

from muster.coordinator import errors as E
from muster.coordinator import requests as rq
from muster.coordinator.responses import (
    DeletedGroup,
    DeleteGroupsResponse,
    FetchedGroup,
    FetchedPartition,
    FetchedTopic,
    OffsetDeleteResponse,
    PartitionError,
    TopicErrors,
)
from muster.records.offsets_topic import (
    OffsetCommitKey,
    OffsetCommitValue,
    decode_key,
    decode_offset_commit_value,
)

DAY = 24 * 3600 * 1000
WEEK = 7 * DAY


def errors_of(resp) -> dict[tuple[str, int], int]:
    return {(t.name, p.partition_index): p.error_code for t in resp.topics for p in t.partitions}


def test_simple_consumer_commit_and_fetch(h) -> None:
    rid = h.commit({("t", 0): 10, ("t", 1): 11, ("u", 0): 5}, metadata="m")
    assert errors_of(h.reply(rid)) == {("t", 0): 0, ("t", 1): 0, ("u", 0): 0}
    assert [decode_key(k) for k, _, _ in h.log] == [
        OffsetCommitKey("g", "t", 0),
        OffsetCommitKey("g", "t", 1),
        OffsetCommitKey("g", "u", 0),
    ]
    assert decode_offset_commit_value(h.log[0][1]) == OffsetCommitValue(10, 3, "m", h.now, -1)
    assert h.fetch() == FetchedGroup(
        "g",
        (
            FetchedTopic("t", (FetchedPartition(0, 10, 3, "m"), FetchedPartition(1, 11, 3, "m"))),
            FetchedTopic("u", (FetchedPartition(0, 5, 3, "m"),)),
        ),
    )
    assert h.fetch({"t": (1, 7)}) == FetchedGroup(
        "g", (FetchedTopic("t", (FetchedPartition(1, 11, 3, "m"), FetchedPartition(7, -1))),)
    )
    assert h.fetch({"t": (0,)}, group="nobody") == FetchedGroup(
        "nobody", (FetchedTopic("t", (FetchedPartition(0, -1),)),)
    )
    assert h.fetch(group="nobody") == FetchedGroup("nobody", ())
    g = h.shard.group("g")
    assert g.state.value == "Empty" and g.protocol_type is None


def test_offsets_visible_only_once_durable_and_require_stable(h) -> None:
    h.commit({("t", 0): 1})
    h.auto_durable = False
    rid = h.commit({("t", 0): 2})
    assert not h.answered(rid)
    assert h.fetch({"t": (0,)}).topics[0].partitions[0].committed_offset == 1
    stable = h.fetch({"t": (0,)}, require_stable=True)
    assert stable.topics[0].partitions[0] == FetchedPartition(
        0, -1, -1, "", E.UNSTABLE_OFFSET_COMMIT
    )
    h.flush()
    assert errors_of(h.reply(rid)) == {("t", 0): 0}
    assert h.fetch({"t": (0,)}, require_stable=True).topics[0].partitions[0].committed_offset == 2
    h.auto_durable = True


def test_failed_commit_write_is_reported_and_not_applied(h) -> None:
    h.commit({("t", 0): 1})
    h.auto_durable = False
    rid = h.commit({("t", 0): 2})
    h.flush(error=E.MESSAGE_TOO_LARGE)
    h.auto_durable = True
    assert errors_of(h.reply(rid)) == {("t", 0): E.INVALID_COMMIT_OFFSET_SIZE}
    assert h.fetch({"t": (0,)}).topics[0].partitions[0].committed_offset == 1


def test_newer_commit_never_loses_to_older(h) -> None:
    h.auto_durable = False
    r1 = h.commit({("t", 0): 1})
    r2 = h.commit({("t", 0): 2})
    first, second = h.held
    h.held = [second, first]  # durability reported out of order
    h.flush()
    h.auto_durable = True
    h.reply(r1), h.reply(r2)
    assert h.fetch({"t": (0,)}).topics[0].partitions[0].committed_offset == 2


def test_metadata_too_large(h) -> None:
    rid = h.commit({("t", 0): 1}, metadata="x" * 4097)
    assert errors_of(h.reply(rid)) == {("t", 0): E.OFFSET_METADATA_TOO_LARGE}
    assert h.log == []


def test_member_commit_rules(h) -> None:
    a, b = h.form(2)
    assert errors_of(h.reply(h.commit({("t", 0): 1}, generation=2, member_id=a))) == {("t", 0): 0}
    # stale generation
    assert errors_of(h.reply(h.commit({("t", 0): 1}, generation=1, member_id=a))) == {
        ("t", 0): E.ILLEGAL_GENERATION
    }
    # unknown member
    assert errors_of(h.reply(h.commit({("t", 0): 1}, generation=2, member_id="x"))) == {
        ("t", 0): E.UNKNOWN_MEMBER_ID
    }
    # a simple-consumer commit to a live group
    assert errors_of(h.reply(h.commit({("t", 0): 1}))) == {("t", 0): E.UNKNOWN_MEMBER_ID}
    # unknown group with a generation
    assert errors_of(h.reply(h.commit({("t", 0): 1}, group="x", generation=3, member_id="m"))) == {
        ("t", 0): E.ILLEGAL_GENERATION
    }
    # during PreparingRebalance the current generation may still commit
    ra = h.join(a, client="c0")
    assert errors_of(h.reply(h.commit({("t", 0): 2}, generation=2, member_id=b))) == {("t", 0): 0}
    rb = h.join(b, client="c1")
    h.reply(ra), h.reply(rb)
    # CompletingRebalance: the client must finish the rebalance first
    assert errors_of(h.reply(h.commit({("t", 0): 3}, generation=3, member_id=b))) == {
        ("t", 0): E.REBALANCE_IN_PROGRESS
    }


def test_commit_counts_as_heartbeat(h) -> None:
    a, b = h.form(2)
    h.advance(9000)
    h.reply(h.heartbeat(a, 2))
    h.reply(h.commit({("t", 0): 1}, generation=2, member_id=b))
    h.advance(9000)
    assert b in h.shard.group("g").members


def test_empty_group_offsets_expire_from_the_empty_timestamp(make) -> None:
    h = make(offsets_retention_ms=WEEK, offsets_retention_check_interval_ms=DAY)
    (a,) = h.form(1)
    h.reply(h.commit({("t", 0): 5}, generation=1, member_id=a))
    h.advance(3 * DAY)  # a heartbeats? no: it expired after 10 s, group Empty since then
    g = h.shard.group("g")
    assert g.state.value == "Empty"
    empty_since = g.state_timestamp
    h.advance(WEEK - 3 * DAY)
    assert h.fetch({"t": (0,)}).topics[0].partitions[0].committed_offset == 5
    h.advance(DAY)  # next check after retention since the group became Empty
    assert h.shard.group("g") is None
    key, value, _ = h.log[-1]
    assert value is None and decode_key(key).group == "g"
    assert decode_key(h.log[-2][0]) == OffsetCommitKey("g", "t", 0) and h.log[-2][1] is None
    assert empty_since is not None


def test_stable_consumer_group_expires_only_unsubscribed_topics(make) -> None:
    h = make(
        offsets_retention_ms=WEEK,
        offsets_retention_check_interval_ms=DAY,
        group_max_session_timeout_ms=20 * DAY,
    )
    a = h.form(1, session=20 * DAY)[0]
    h.reply(h.commit({("t", 0): 1, ("old", 0): 2}, generation=1, member_id=a))
    h.advance(8 * DAY)
    h.reply(h.heartbeat(a, 1))
    fetched = h.fetch()
    assert [t.name for t in fetched.topics] == ["t"]
    assert h.shard.group("g").state.value == "Stable"


def test_standalone_group_expires_from_commit_time(make) -> None:
    h = make(offsets_retention_ms=WEEK, offsets_retention_check_interval_ms=DAY)
    h.reply(h.commit({("t", 0): 1}))
    h.advance(3 * DAY)
    h.reply(h.commit({("t", 1): 1}))
    h.advance(5 * DAY)  # t-0 is 8 days old; t-1 5 days
    assert [p.partition_index for p in h.fetch().topics[0].partitions] == [1]
    h.advance(3 * DAY)
    assert h.shard.group("g") is None


def test_explicit_expire_timestamp_wins(make) -> None:
    h = make(offsets_retention_ms=WEEK, offsets_retention_check_interval_ms=DAY)
    h.reply(h.commit({("t", 0): 1}, retention=DAY))
    value = decode_offset_commit_value(h.log[-1][1])
    assert value.expire_timestamp == h.now + DAY and value.leader_epoch == -1
    assert h.log[-1][1][:2] == b"\x00\x01"  # written as OffsetCommitValue v1
    h.advance(DAY)
    assert h.shard.group("g") is None


def test_delete_groups(h) -> None:
    _a, _b = h.form(2)
    h.reply(h.commit({("t", 0): 1}, group="simple"))
    rid = h.send(rq.DeleteGroups(("g", "simple", "missing")))
    assert h.reply(rid) == DeleteGroupsResponse(
        (
            DeletedGroup("g", E.NON_EMPTY_GROUP),
            DeletedGroup("simple", E.NONE),
            DeletedGroup("missing", E.GROUP_ID_NOT_FOUND),
        )
    )
    assert h.shard.group("simple") is None
    assert [decode_key(k).group for k, v, _ in h.log[-2:] if v is None] == ["simple", "simple"]
    assert h.fetch(group="simple") == FetchedGroup("simple", ())


def test_offset_delete(h) -> None:
    a, _b = h.form(2)  # subscribed to "t"
    h.reply(h.commit({("t", 0): 1, ("u", 0): 2}, generation=2, member_id=a))
    rid = h.send(
        rq.OffsetDelete("g", (rq.OffsetDeleteTopic("t", (0,)), rq.OffsetDeleteTopic("u", (0,))))
    )
    assert h.reply(rid) == OffsetDeleteResponse(
        E.NONE,
        (
            TopicErrors("t", (PartitionError(0, E.GROUP_SUBSCRIBED_TO_TOPIC),)),
            TopicErrors("u", (PartitionError(0, E.NONE),)),
        ),
    )
    assert [t.name for t in h.fetch().topics] == ["t"]
    rid = h.send(rq.OffsetDelete("nope", (rq.OffsetDeleteTopic("t", (0,)),)))
    assert h.reply(rid) == OffsetDeleteResponse(E.GROUP_ID_NOT_FOUND)
    # an Empty group may delete anything; the last offset takes the group with it
    h.reply(h.commit({("t", 0): 1}, group="s"))
    rid = h.send(rq.OffsetDelete("s", (rq.OffsetDeleteTopic("t", (0,)),)))
    assert h.reply(rid).topics[0].partitions[0].error_code == E.NONE
    assert h.shard.group("s") is None


def test_offset_delete_non_consumer_group_is_non_empty(h) -> None:
    h.form(1, protocol_type="connect")
    rid = h.send(rq.OffsetDelete("g", (rq.OffsetDeleteTopic("t", (0,)),)))
    assert h.reply(rid) == OffsetDeleteResponse(E.NON_EMPTY_GROUP)


def test_commit_racing_delete_is_not_resurrected_by_replay(h) -> None:
    h.reply(h.commit({("t", 0): 1}))
    h.auto_durable = False
    rid = h.commit({("t", 0): 2})
    h.auto_durable = True
    d = h.send(rq.DeleteGroups(("g",)))
    assert h.reply(d).results[0].error_code == E.NONE
    h.flush()
    h.reply(rid)
    # the log: commit(1), delete tombstones, then commit(2) lands after them
    assert h.shard.group("g") is None or not h.shard.offsets.committed("g")


def test_admin_commit_with_member_id_to_empty_group(h) -> None:
    (a,) = h.form(1)
    h.reply(h.leave(a))
    rid = h.commit({("t", 0): 9}, member_id="admin-tool")
    assert errors_of(h.reply(rid)) == {("t", 0): 0}


def test_deleted_partitions_drop_offsets(h) -> None:
    h.reply(h.commit({("t", 0): 1, ("u", 0): 2}))
    h.apply(h.shard.delete_partitions([("t", 0)], h.now))
    assert [t.name for t in h.fetch().topics] == ["u"]
    h.apply(h.shard.delete_partitions([("u", 0)], h.now))
    assert h.shard.group("g") is None


def test_a_large_expiry_pass_runs_in_bounded_steps(make) -> None:
    from muster.coordinator.offsets.manager import EXPIRY_STEP_OFFSETS

    h = make(offsets_retention_ms=WEEK, offsets_retention_check_interval_ms=DAY)
    groups = [f"old-{i}" for i in range(5)]
    per_group = EXPIRY_STEP_OFFSETS // 2
    for g in groups:  # standalone groups: offsets expire from their commit time
        h.reply(h.commit({("t", p): 1 for p in range(per_group)}, group=g))
    h.advance(WEEK - 1)  # just before the first check after the retention passed
    h.now += 1
    steps = []
    while h.timers["expire-offsets"] <= h.now:  # a continuation is due at once
        before = len(h.log)
        del h.timers["expire-offsets"]
        h.apply(h.shard.on_timer("expire-offsets", h.now))
        steps.append(len(h.log) - before)
    h.reply(h.commit({("t", 0): 9}, group="live"))
    assert len(steps) >= 2 and max(steps) <= EXPIRY_STEP_OFFSETS + per_group + len(groups)
    assert h.timers["expire-offsets"] == h.now + DAY  # the pass is over: next one in a day
    for g in groups:
        assert h.fetch({"t": (0,)}, group=g).topics[0].partitions[0].committed_offset == -1
    assert h.fetch({"t": (0,)}, group="live").topics[0].partitions[0].committed_offset == 9


def test_offset_delete_behind_a_deletion_in_flight_waits_for_its_own_tombstone(h) -> None:
    """Found by reliability/simulate.py: OffsetDelete of an offset hidden by
    a topic deletion's tombstone still in flight was answered NONE at once,
    without a record; when that earlier append failed, the offset came back
    although the client had been told it was deleted."""
    h.reply(h.commit({("u", 1): 7, ("t", 0): 3}))  # t-0 keeps the group
    h.auto_durable = False
    h.apply(h.shard.delete_partitions([("u", 1)], h.now))
    rid = h.send(rq.OffsetDelete("g", (rq.OffsetDeleteTopic("u", (1,)),)))
    assert not h.answered(rid)  # it wrote a tombstone of its own
    h.flush(E.NOT_ENOUGH_REPLICAS)  # both appends fail
    resp = h.reply(rid)
    assert resp.topics[0].partitions[0].error_code != E.NONE
    assert h.fetch({"u": (1,)}).topics[0].partitions[0].committed_offset == 7


def test_expiry_skips_a_partition_whose_transactional_offset_is_being_written(make) -> None:
    """Found by reliability/simulate.py: an expiry pass ran while a
    TxnOffsetCommit's append was in flight and tombstoned the partition's old
    plain offset after it; the tombstone then took the transaction's offset
    too, so the committed transaction lost it. Kafka's expiry skips partitions
    with pending transactional offsets (it applies them at write time)."""
    h = make(offsets_retention_ms=WEEK, offsets_retention_check_interval_ms=DAY)
    h.reply(h.commit({("t", 0): 1}))
    h.advance(6 * DAY)
    h.auto_durable = False
    rid = h.send(
        rq.TxnOffsetCommit("g", 4000, 0, (rq.CommitTopic("t", (rq.CommitPartition(0, 9),)),))
    )
    h.advance(2 * DAY)  # the plain offset is 8 days old now
    h.flush()
    h.auto_durable = True
    assert h.reply(rid).topics[0].partitions[0].error_code == E.NONE
    assert h.reply(h.send(rq.CompleteTxn(4000, 0, True))) == E.NONE
    assert h.fetch({"t": (0,)}).topics[0].partitions[0].committed_offset == 9


def test_a_failed_group_tombstone_does_not_mark_the_new_incarnations_store_durable(make) -> None:
    """Found by reliability/simulate.py: an Empty group expired (tombstone in
    flight), a new member formed and left a new incarnation that stored its
    own record (in flight too), and both appends failed. The tombstone's
    failure made the new incarnation continue the old one and counted its
    own failed store as durable, so live (generation 3) and log (generation
    2) differed with nothing owed: after a restart the generation went back."""
    h = make(offsets_retention_ms=60000, offsets_retention_check_interval_ms=20000)
    h.form(1)
    h.advance(10000)  # the member's session ends: Empty, stored
    h.auto_durable = False
    h.advance(31000)  # the expiry pass tombstones the Empty group
    assert h.shard.group("g") is None
    h.join()
    h.advance(11000)  # its member expires before the next pass: its Empty store is in flight
    h.flush(E.NOT_ENOUGH_REPLICAS)
    h.auto_durable = True
    group = h.shard.group("g")
    assert group is not None and group.persisted_seq != group.store_seq  # a store is owed


def test_a_failed_group_tombstone_answers_a_sync_waiting_on_the_new_incarnation(make) -> None:
    """Found by reliability/simulate.py: an Empty group expired (tombstone in
    flight), a new member joined the new incarnation and its SyncGroup waited
    on the leader's store (in flight too); both appends failed. The
    tombstone's failure moved the new incarnation to the old generation, so
    the store's failure no longer matched its generation and the SyncGroup
    was never answered (no timer left to answer it either)."""
    h = make(offsets_retention_ms=60000, offsets_retention_check_interval_ms=20000)
    h.form(1)
    h.advance(10000)  # the member's session ends: Empty, stored (generation 2)
    h.auto_durable = False
    h.advance(31000)  # the expiry pass tombstones the Empty group
    assert h.shard.group("g") is None
    joined = h.reply(h.join())
    assert joined.error_code == E.NONE and joined.generation_id == 1
    rid = h.sync(joined.member_id, 1, {joined.member_id: b"a"})
    assert not h.answered(rid)  # it waits for the leader's store
    h.flush(E.NOT_ENOUGH_REPLICAS)  # the tombstone and the store fail
    assert h.answered(rid)
    assert h.reply(rid).error_code == E.REBALANCE_IN_PROGRESS
