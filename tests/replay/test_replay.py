"""Loading a shard from its `__consumer_offsets` partition."""

from __future__ import annotations

from muster.coordinator import errors as E
from muster.coordinator import requests as rq
from muster.coordinator.context import heartbeat_key
from muster.coordinator.durable import durable_state
from muster.coordinator.shard import CoordinatorShard
from muster.records.offsets_topic import (
    GroupMetadataValue,
    MemberMetadataValue,
    OffsetCommitValue,
    encode,
    group_metadata_record,
    offset_commit_record,
)
from tests.core.harness import Harness, sub


def test_restart_restores_group_and_rearms_heartbeats() -> None:
    h = Harness()
    a, b = h.form(2)
    h.reply(h.commit({("t", 0): 42}, generation=2, member_id=a, metadata="x"))
    h.check_replay()
    # restart: a new harness loads the same log later
    h2 = Harness(now=h.now + 5000, log=h.log)
    g = h2.shard.group("g")
    assert g.state.value == "Stable" and g.generation == 2 and g.leader_id == a
    assert {m: x.assignment for m, x in g.members.items()} == {
        a: f"a-{a}".encode(),
        b: f"a-{b}".encode(),
    }
    assert h2.timers[heartbeat_key("g", a)] == h2.now + 10000
    assert h2.fetch({"t": (0,)}).topics[0].partitions[0].committed_offset == 42
    # members carry on without a rebalance
    assert h2.reply(h2.heartbeat(a, 2)).error_code == E.NONE
    assert h2.reply(h2.sync(b, 2)).assignment == f"a-{b}".encode()
    # a member that died with the old broker expires after its session
    h2.advance(9000)
    h2.reply(h2.heartbeat(a, 2))
    h2.advance(1000)
    assert b not in g.members and g.state.value == "PreparingRebalance"
    h2.check_replay()


def test_compacted_log_converges_and_unknown_tombstones_are_noops() -> None:
    h = Harness()
    h.reply(h.commit({("t", 0): 1}, group="x"))
    h.reply(h.commit({("t", 0): 2}, group="x"))
    h.reply(h.send(rq.DeleteGroups(("x",))))
    h.reply(h.commit({("t", 0): 7}, group="y"))
    full = h.replayed()
    # compaction keeps the last record per key (tombstones may go too)
    last: dict[bytes, tuple[bytes | None, int]] = {}
    for k, v, o in h.log:
        last[k] = (v, o)
    compacted = sorted(((k, v, o) for k, (v, o) in last.items()), key=lambda r: r[2])
    shard = CoordinatorShard(0, h.cfg)
    for k, v, o in compacted:
        shard.replay(k, v, o)
    shard.loaded(h.now)
    assert durable_state(shard) == durable_state(full) == durable_state(h.shard)
    no_tombstones = CoordinatorShard(0, h.cfg)
    for k, v, o in compacted:
        if v is not None:
            no_tombstones.replay(k, v, o)
    assert durable_state(no_tombstones) == durable_state(h.shard)
    assert set(durable_state(h.shard)) == {"y"}


def test_old_record_versions_load() -> None:
    member = MemberMetadataValue("m-1", None, "cid", "/h", 10000, 10000, sub("t"), b"asg")
    log = [
        (
            offset_commit_record("g", "t", 0, None)[0],
            encode("OffsetCommitValue", OffsetCommitValue(5, -1, "", 100, -1), 0),
            0,
        ),
        (
            group_metadata_record("g", None)[0],
            encode(
                "GroupMetadataValue",
                GroupMetadataValue("consumer", 4, "range", "m-1", -1, (member,)),
                0,
            ),
            1,
        ),
    ]
    h = Harness(log=log)
    g = h.shard.group("g")
    assert g.generation == 4 and g.state.value == "Stable" and g.state_timestamp is None
    assert g.subscribed_topics == frozenset({"t"})
    assert h.fetch().topics[0].partitions[0].committed_offset == 5
    assert h.reply(h.heartbeat("m-1", 4)).error_code == 0


def test_group_tombstone_keeps_offsets_written_before() -> None:
    h = Harness()
    (a,) = h.form(1)
    h.reply(h.commit({("t", 0): 1}, generation=1, member_id=a))
    shard = CoordinatorShard(0, h.cfg)
    for k, v, o in h.log:
        shard.replay(k, v, o)
    shard.replay(group_metadata_record("g", None)[0], None, len(h.log))
    shard.loaded(h.now)
    g = shard.group("g")
    assert g is not None and g.protocol_type is None and (("t", 0) in shard.offsets.committed("g"))


def test_loaded_then_serving_live_matches_replay() -> None:
    h = Harness()
    a, b = h.form(2)
    h2 = Harness(now=h.now, log=h.log)
    rb = h2.join(b, client="c1", protocols=(("range", sub("t", "u")),))
    h2.advance(9000)
    ra = h2.join(a, client="c0")
    j = h2.reply(ra)
    h2.reply(rb)
    s1 = h2.sync(a, j.generation_id, {a: b"1", b: b"2"})
    s2 = h2.sync(b, j.generation_id)
    assert h2.reply(s1).error_code == h2.reply(s2).error_code == 0
    h2.check_replay()
