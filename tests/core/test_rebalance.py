"""Join/sync edge cases, the initial delay, rebalance and sync timeouts."""

from __future__ import annotations

from muster.coordinator import errors as E
from muster.coordinator.context import heartbeat_key, join_key, sync_key
from muster.coordinator.responses import SyncGroupResponse
from muster.records.offsets_topic import decode_group_metadata_value
from tests.core.harness import sub


def _two_member_join(h):
    """a and b in CompletingRebalance at generation 2; returns (leader, follower)."""
    a, b = h.form(2)
    ra, rb = h.join(a, client="c0"), h.join(b, client="c1")
    h.reply(ra), h.reply(rb)
    return a, b


def test_follower_sync_before_leader_is_parked_until_durable(h) -> None:
    a, b = _two_member_join(h)
    g = h.shard.group("g")
    assert g.state.value == "CompletingRebalance" and g.generation == 3
    rb = h.sync(b, 3)
    assert not h.answered(rb)
    h.auto_durable = False
    ra = h.sync(a, 3, {a: b"A", b: b"B"})
    assert not h.answered(ra) and not h.answered(rb)
    assert len(h.held) == 1 and len(h.held[0][0].records) == 1
    assert g.state.value == "CompletingRebalance"  # not before the record is durable
    h.flush()
    assert h.reply(ra) == SyncGroupResponse(E.NONE, "consumer", "range", b"A")
    assert h.reply(rb) == SyncGroupResponse(E.NONE, "consumer", "range", b"B")
    assert g.state.value == "Stable"
    value = decode_group_metadata_value(h.log[-1][1])
    assert value.generation == 3 and value.leader == a and value.protocol == "range"
    assert [(m.member_id, m.assignment, m.subscription) for m in value.members] == [
        (a, b"A", sub("t")),
        (b, b"B", sub("t")),
    ]
    done = [e for e in h.events if type(e).__name__ == "RebalanceCompleted"][-1]
    assert done.generation == 3 and done.member_count == 2 and done.causes == ("leader_rejoined",)


def test_leader_fills_missing_assignments_with_empty(h) -> None:
    a, b = _two_member_join(h)
    rb = h.sync(b, 3)
    ra = h.sync(a, 3, {a: b"A"})
    assert h.reply(rb).assignment == b"" and h.reply(ra).assignment == b"A"


def test_store_failure_restarts_rebalance_with_clear_error(h) -> None:
    a, b = _two_member_join(h)
    rb = h.sync(b, 3)
    h.auto_durable = False
    ra = h.sync(a, 3, {a: b"A", b: b"B"})
    h.flush(error=E.NOT_ENOUGH_REPLICAS)
    assert h.reply(ra) == SyncGroupResponse(E.COORDINATOR_NOT_AVAILABLE)
    assert h.reply(rb) == SyncGroupResponse(E.COORDINATOR_NOT_AVAILABLE)
    g = h.shard.group("g")
    assert g.state.value == "PreparingRebalance"
    failed = [e for e in h.events if type(e).__name__ == "GroupStoreFailed"]
    assert failed and failed[0].error_code == E.NOT_ENOUGH_REPLICAS
    started = [e for e in h.events if type(e).__name__ == "RebalanceStarted"][-1]
    assert started.cause == "group_store_failed" and started.generation == 3
    h.auto_durable = True


def test_leader_dies_between_join_and_sync(h) -> None:
    a, b = _two_member_join(h)
    rb = h.sync(b, 3)
    h.advance(10000)  # a neither syncs nor heartbeats; b is parked (alive)
    g = h.shard.group("g")
    assert a not in g.members
    # b's parked sync is answered: the group rebalances
    assert h.reply(rb) == SyncGroupResponse(E.REBALANCE_IN_PROGRESS)
    assert g.state.value == "PreparingRebalance"
    assert g.leader_id == b
    rb = h.join(b, client="c1")
    resp = h.reply(rb)
    assert resp.generation_id == 4 and resp.leader == b and len(resp.members) == 1


def test_sync_never_arrives_removes_laggards(h) -> None:
    a, b = _two_member_join(h)
    assert h.timers[sync_key("g")] == h.now + 30000
    ra = h.sync(a, 3, {a: b"A", b: b"B"})  # leader syncs; the group is stored and Stable
    assert h.reply(ra).error_code == 0
    g = h.shard.group("g")
    assert g.state.value == "Stable" and g.pending_sync_members == {b}
    for _ in range(3):
        h.advance(9000)
        h.reply(h.heartbeat(a, 3))
        h.reply(h.heartbeat(b, 3))
    h.advance(3000)  # 30 s after the join: b never sent SyncGroup
    assert b not in g.members and g.state.value in ("PreparingRebalance", "CompletingRebalance")
    started = [e for e in h.events if type(e).__name__ == "RebalanceStarted"][-1]
    assert started.cause == "sync_timeout"


def test_unchanged_follower_rejoin_does_not_rebalance(h) -> None:
    a, b = h.form(2)
    rid = h.join(b, client="c1")
    resp = h.reply(rid)
    assert resp.error_code == 0 and resp.generation_id == 2 and resp.members == ()
    assert resp.leader == a
    assert h.shard.group("g").state.value == "Stable"
    rid = h.sync(b, 2)
    assert h.reply(rid).assignment == f"a-{b}".encode()


def test_changed_follower_rejoin_rebalances(h) -> None:
    _a, b = h.form(2)
    rid = h.join(b, client="c1", protocols=(("range", sub("t", "u")),))
    assert not h.answered(rid)
    g = h.shard.group("g")
    assert g.state.value == "PreparingRebalance"
    assert [e.cause for e in h.events if type(e).__name__ == "RebalanceStarted"][-1] == (
        "member_metadata_changed"
    )


def test_leader_rejoin_rebalances(h) -> None:
    a, b = h.form(2)
    ra = h.join(a, client="c0")
    assert not h.answered(ra)
    assert h.shard.group("g").state.value == "PreparingRebalance"
    hb = h.heartbeat(b, 2)
    assert h.reply(hb).error_code == E.REBALANCE_IN_PROGRESS
    rb = h.join(b, client="c1")
    ja, jb = h.reply(ra), h.reply(rb)
    assert ja.generation_id == jb.generation_id == 3
    assert len(ja.members) == 2 and jb.members == ()
    started = [e for e in h.events if type(e).__name__ == "RebalanceStarted"][-1]
    assert started.cause == "leader_rejoined" and started.member_id == a
    completed = [e for e in h.events if type(e).__name__ == "JoinCompleted"][-1]
    assert completed.waited_for == "all_members_joined" and completed.join_duration_ms == 0


def test_rejoin_during_completing_with_same_metadata_resends_answer(h) -> None:
    a, b = _two_member_join(h)
    rb = h.join(b, client="c1")
    resp = h.reply(rb)
    assert resp.generation_id == 3 and resp.members == ()
    ra = h.join(a, client="c0")
    assert len(h.reply(ra).members) == 2
    assert h.shard.group("g").state.value == "CompletingRebalance"


def test_rebalance_timeout_removes_laggards(h) -> None:
    a, b, c = h.form(3)
    ra = h.join(a, client="c0")  # rebalance; b and c are stuck processing
    rb = h.join(b, client="c1")
    h.advance(9000)
    h.reply(h.heartbeat(c, 2))  # still heartbeating (from its background thread)
    h.advance(9000)
    h.reply(h.heartbeat(c, 2))
    h.advance(9000)
    h.reply(h.heartbeat(c, 2))
    assert not h.answered(ra)
    h.advance(3000)  # 30 s rebalance timeout
    ja, _jb = h.reply(ra), h.reply(rb)
    assert ja.generation_id == 3 and {m.member_id for m in ja.members} == {a, b}
    g = h.shard.group("g")
    assert c not in g.members and heartbeat_key("g", c) not in h.timers
    done = [e for e in h.events if type(e).__name__ == "JoinCompleted"][-1]
    assert done.waited_for == "rebalance_timeout_expired" and done.removed_members == (c,)
    assert done.join_duration_ms == 30000


def test_initial_delay_rearms_while_members_arrive_and_is_capped(make) -> None:
    h = make(group_initial_rebalance_delay_ms=3000)
    r1 = h.join(client="c0", rebalance=10000)
    assert h.timers[join_key("g")] == h.now + 3000
    h.advance(2000)
    r2 = h.join(client="c1", rebalance=10000)
    h.advance(1000)  # first delay elapses; a member arrived: re-arm by 3000
    assert not h.answered(r1)
    assert h.timers[join_key("g")] == h.now + 3000
    r3 = h.join(client="c2", rebalance=10000)
    h.advance(3000)  # t=6000: another arrived; remaining 7000-3000=4000 -> re-arm 3000
    r4 = h.join(client="c3", rebalance=10000)
    h.advance(3000)  # t=9000: remaining 1000 -> re-arm min(3000, 1000)
    assert h.timers[join_key("g")] == h.now + 1000
    r5 = h.join(client="c4", rebalance=10000)
    h.advance(1000)  # t=10000 = the rebalance timeout: complete now whatever happens
    resps = [h.reply(r) for r in (r1, r2, r3, r4, r5)]
    assert {r.generation_id for r in resps} == {1}
    assert sum(1 for r in resps if r.members) == 1
    done = [e for e in h.events if type(e).__name__ == "JoinCompleted"][-1]
    assert done.waited_for == "initial_delay_elapsed" and done.join_duration_ms == 10000


def test_initial_delay_does_not_complete_early(make) -> None:
    h = make(group_initial_rebalance_delay_ms=3000)
    r1 = h.join(client="c0")
    h.advance(2999)
    assert not h.answered(r1)
    h.advance(1)
    assert h.reply(r1).generation_id == 1


def test_sync_errors(h) -> None:
    a, b = h.form(2)
    assert h.reply(h.sync(a, 1)).error_code == E.ILLEGAL_GENERATION
    assert h.reply(h.sync("ghost", 2)).error_code == E.UNKNOWN_MEMBER_ID
    assert h.reply(h.sync(a, 2, group="nogroup")).error_code == E.UNKNOWN_MEMBER_ID
    from muster.coordinator import requests as rq

    rid = h.send(rq.SyncGroup("g", 2, a, (), None, "consumer", "roundrobin"))
    assert h.reply(rid).error_code == E.INCONSISTENT_GROUP_PROTOCOL
    rid = h.send(rq.SyncGroup("g", 2, a, (), None, "connect", None))
    assert h.reply(rid).error_code == E.INCONSISTENT_GROUP_PROTOCOL
    h.join(a, client="c0")  # now PreparingRebalance
    assert h.reply(h.sync(b, 2)).error_code == E.REBALANCE_IN_PROGRESS


def test_duplicate_sync_from_a_member_answers_the_older_one(h) -> None:
    a, b = _two_member_join(h)
    r1 = h.sync(b, 3)
    r2 = h.sync(b, 3)
    assert h.reply(r1).error_code == E.REBALANCE_IN_PROGRESS
    ra = h.sync(a, 3, {a: b"A", b: b"B"})
    assert h.reply(r2).assignment == b"B" and h.reply(ra).assignment == b"A"
