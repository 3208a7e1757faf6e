"""Rebalance events (what analytics read) and failed appends."""

from __future__ import annotations

import json

from muster.coordinator import errors as E
from muster.coordinator import events as ev
from muster.coordinator import requests as rq
from muster.coordinator.responses import (
    GROUP_AUTHORIZED_OPERATIONS,
    DeletedGroup,
    DeleteGroupsResponse,
)
from tests.core.harness import Harness


def test_event_stream_of_a_rebalance(h) -> None:
    a, b = h.form(2)
    h.events.clear()
    h.advance(9000)
    h.reply(h.heartbeat(a, 2))
    h.advance(1000)  # b expires
    h.advance(2000)
    ra = h.join(a, client="c0")
    h.reply(ra)
    h.advance(500)
    h.reply(h.sync(a, 3, {a: b"x"}))
    kinds = [type(e).__name__ for e in h.events]
    assert kinds == [
        "MemberRemoved",
        "RebalanceStarted",
        "GroupStateChanged",
        "JoinWaiting",  # a's JoinGroup, held: it is the last one, the join completes
        "GroupStateChanged",
        "JoinCompleted",
        "GroupStateChanged",
        "RebalanceCompleted",
    ]
    started = h.events[1]
    assert (started.cause, started.member_id, started.generation, started.from_state) == (
        ev.SESSION_EXPIRED,
        b,
        2,
        "Stable",
    )
    done = h.events[-1]
    assert done.causes == (ev.SESSION_EXPIRED,) and done.duration_ms == 2500
    assert done.join_completed_ms - done.started_ms == 2000
    assert done.waited_for == ev.ALL_MEMBERS_JOINED and done.member_count == 1
    body = json.loads(done.to_json())
    assert body["type"] == "RebalanceCompleted" and body["causes"] == ["session_expired"]
    for e in h.events:
        assert json.loads(e.to_json())["group_id"] == "g"


def test_join_waiting_tells_who_rejoined_and_the_deadline(h) -> None:
    """A rebalance of two members where only one rejoins: one JoinWaiting,
    for it, with the join phase's deadline (start + rebalance timeout); the
    other is dropped at that deadline."""
    a, b = h.form(2)
    h.events.clear()
    started_at = h.now
    ra = h.join(a, client="c0", rebalance=20_000)  # a changes nothing but is the leader
    waiting = [e for e in h.events if isinstance(e, ev.JoinWaiting)]
    assert [(e.member_id, e.client_id, e.joined, e.member_count) for e in waiting] == [
        (a, "c0", 1, 2)
    ]
    assert waiting[0].deadline_ms == started_at + 30_000  # b's rebalance timeout is the largest
    assert ev.from_json(waiting[0].to_json()) == waiting[0]
    assert not h.answered(ra)
    h.advance(30_000)
    removed = [e for e in h.events if isinstance(e, ev.MemberRemoved)]
    assert removed[0].member_id == b  # (a, joined but never syncing, goes later)
    # the story folds rebalances without it
    assert all(not isinstance(i, ev.JoinWaiting) for i in ev.fold(h.events))


def test_static_replacement_event(h) -> None:
    r = h.join(instance="i", client="s")
    m = h.reply(r).member_id
    h.reply(h.sync(m, 1, {m: b"a"}, instance="i"))
    h.reply(h.join(instance="i", client="s"))
    replaced = [e for e in h.events if isinstance(e, ev.StaticMemberReplaced)]
    assert replaced and replaced[0].old_member_id == m and replaced[0].rebalance is False


def test_failed_delete_is_undone_and_reported(h) -> None:
    h.reply(h.commit({("t", 0): 5}))
    h.auto_durable = False
    rid = h.send(rq.DeleteGroups(("g",)))
    assert h.shard.group("g") is None
    h.flush(error=E.NOT_LEADER_OR_FOLLOWER)
    h.auto_durable = True
    assert h.reply(rid) == DeleteGroupsResponse((DeletedGroup("g", E.NOT_COORDINATOR),))
    assert h.fetch({"t": (0,)}).topics[0].partitions[0].committed_offset == 5


def test_failed_offset_delete_is_undone_and_reported(h) -> None:
    h.reply(h.commit({("t", 0): 5, ("t", 1): 6}))
    h.auto_durable = False
    rid = h.send(rq.OffsetDelete("g", (rq.OffsetDeleteTopic("t", (0,)),)))
    h.flush(error=E.NOT_ENOUGH_REPLICAS)
    h.auto_durable = True
    resp = h.reply(rid)
    assert resp.topics[0].partitions[0].error_code == E.COORDINATOR_NOT_AVAILABLE
    assert h.fetch({"t": (0,)}).topics[0].partitions[0].committed_offset == 5


def test_failed_expiry_keeps_the_group_until_the_next_check(make) -> None:
    h = make(offsets_retention_ms=1000, offsets_retention_check_interval_ms=5000)
    h.reply(h.commit({("t", 0): 5}))
    h.auto_durable = False
    h.advance(5000)
    assert h.shard.group("g") is None
    h.flush(error=E.KAFKA_STORAGE_ERROR)
    assert h.shard.group("g") is not None
    h.auto_durable = True
    h.advance(5000)
    assert h.shard.group("g") is None


def test_describe_with_authorized_operations(h) -> None:
    h.form(1)
    g = h.reply(h.send(rq.DescribeGroups(("g",), True))).groups[0]
    assert g.authorized_operations == GROUP_AUTHORIZED_OPERATIONS == 328


def test_loaded_group_over_capacity_rebalances() -> None:
    h = Harness()
    h.form(3)
    h2 = Harness(now=h.now, log=h.log, group_max_size=2)
    g = h2.shard.group("g")
    assert g.state.value == "PreparingRebalance"
    started = [e for e in h2.events if isinstance(e, ev.RebalanceStarted)]
    assert started[0].cause == ev.GROUP_MAX_SIZE
    rids = [h2.join(m, client=g.members[m].client_id) for m in list(g.members)]
    answers = [h2.reply(r) for r in rids]
    assert [a.error_code for a in answers].count(E.GROUP_MAX_SIZE_REACHED) == 1
    h2.check_replay()


def test_every_event_type_round_trips_through_its_record_format(h) -> None:
    """What the broker writes to __muster_group_events decodes to the same typed
    event, for every type a real rebalance produces."""
    _, b = h.form(2)
    h.reply(h.leave(b))
    h.advance(60_000)
    kinds = {type(e) for e in h.events}
    assert {ev.RebalanceStarted, ev.JoinCompleted, ev.RebalanceCompleted, ev.MemberRemoved} <= kinds
    for event in h.events:
        assert ev.from_json(event.to_json()) == event


def test_older_and_newer_event_records_still_read() -> None:
    # a record from before a field existed reads with that field empty; fields
    # and types this version does not know are ignored
    old = b'{"type":"MemberRemoved","group_id":"g","member_id":"m","cause":"member_left","at_ms":5}'
    assert ev.from_json(old) == ev.MemberRemoved("g", "m", None, "member_left", None, 5)
    newer = (
        b'{"type":"JoinCompleted","group_id":"g","generation":2,"future":1,"removed_members":["x"]}'
    )
    joined = ev.from_json(newer)
    assert isinstance(joined, ev.JoinCompleted) and joined.removed_members == ("x",)
    assert ev.from_json(b'{"type":"SomethingNew","group_id":"g"}') is None
    assert ev.from_json(b'{"type":["x"]}') is None


def test_every_rebalance_cause_has_words() -> None:
    assert ev.CAUSES and len(set(ev.CAUSES)) == len(ev.CAUSES)
    for code in ev.CAUSES:
        cause = ev.cause(code)
        assert type(cause) is not ev.Cause and cause.code == code and cause.words, code
    unknown = ev.cause("brand_new_cause")
    assert unknown.text == "brand new cause" and unknown.name == "brand_new_cause"
