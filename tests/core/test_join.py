"""JoinGroup: handshake, pending members, bounds, protocols, admission."""

from __future__ import annotations

from muster.coordinator import errors as E
from muster.coordinator.context import heartbeat_key, join_key, pending_key
from muster.coordinator.responses import JoinGroupMember, JoinGroupResponse
from tests.core.harness import sub


def test_member_id_required_handshake(h) -> None:
    rid = h.join(require_known=True, client="cons")
    assert h.reply(rid) == JoinGroupResponse(E.MEMBER_ID_REQUIRED, member_id="cons-1")
    assert h.group_timers == {pending_key("g", "cons-1"): h.now + 10000}
    assert h.log == []
    rid = h.join("cons-1", require_known=True, client="cons")
    resp = h.reply(rid)
    assert resp == JoinGroupResponse(
        E.NONE,
        generation_id=1,
        protocol_type="consumer",
        protocol_name="range",
        leader="cons-1",
        member_id="cons-1",
        members=(JoinGroupMember("cons-1", None, sub("t")),),
    )
    assert pending_key("g", "cons-1") not in h.timers
    assert h.timers[heartbeat_key("g", "cons-1")] == h.now + 10000
    assert h.shard.group("g").state.value == "CompletingRebalance"


def test_pending_member_never_rejoins_expires_quietly(h) -> None:
    a = h.form(1)[0]
    rid = h.join(require_known=True, client="late")
    assert h.reply(rid).error_code == E.MEMBER_ID_REQUIRED
    g = h.shard.group("g")
    assert g.pending_members == {"late-2"}
    h.advance(9000)
    assert h.reply(h.heartbeat(a, 1)).error_code == 0
    h.advance(1000)  # the pending member's session passes
    assert g.pending_members == set()
    # no rebalance happened: the group is still Stable at generation 1
    assert g.state.value == "Stable" and g.generation == 1
    assert [e for e in h.events if type(e).__name__ == "MemberRemoved"][-1].cause == (
        "pending_member_expired"
    )
    # the expired id is now unknown
    rid = h.join("late-2", require_known=True, client="late")
    assert h.reply(rid).error_code == E.UNKNOWN_MEMBER_ID


def test_pending_member_blocks_early_join_completion(h) -> None:
    a, b = h.form(2)
    rid_pending = h.join(require_known=True, client="p")
    assert h.reply(rid_pending).error_code == E.MEMBER_ID_REQUIRED
    ra = h.join(a, client="c0")  # leader rejoin -> rebalance
    rb = h.join(b, client="c1")
    g = h.shard.group("g")
    assert g.state.value == "PreparingRebalance"
    assert not h.answered(ra) and not h.answered(rb)
    h.advance(10000)  # pending member expires -> join completes at once
    assert h.reply(ra).generation_id == 3 and h.reply(rb).generation_id == 3


def test_unknown_member_for_missing_group(h) -> None:
    assert h.reply(h.join("nobody")) == JoinGroupResponse(E.UNKNOWN_MEMBER_ID, member_id="nobody")
    assert h.shard.group("g") is None


def test_session_timeout_bounds(h) -> None:
    assert h.reply(h.join(session=5999)).error_code == E.INVALID_SESSION_TIMEOUT
    assert h.reply(h.join(session=1800001)).error_code == E.INVALID_SESSION_TIMEOUT
    assert h.reply(h.join(session=6000)).error_code == E.NONE
    assert h.shard.group("g").members["c-1"].session_timeout_ms == 6000


def test_invalid_group_id_and_not_coordinator(make) -> None:
    h = make(num_partitions=50)
    from muster.coordinator import requests as rq

    rid = h.send(rq.JoinGroup("", "", 10000, 10000, "consumer", (("r", b""),)))
    assert h.reply(rid).error_code == E.INVALID_GROUP_ID
    # "hello" lives on partition 22 of 50, not on this shard's partition 0
    rid = h.send(rq.JoinGroup("hello", "", 10000, 10000, "consumer", (("r", b""),)))
    assert h.reply(rid).error_code == E.NOT_COORDINATOR


def test_protocol_voting_picks_most_votes(h) -> None:
    # candidates {A, B}; preferences [B, A], [A, B, C], [D, B, A] -> votes B, A, B -> B
    prefs = [("B", "A"), ("A", "B", "C"), ("D", "B", "A")]
    rids = [
        h.join(client=f"c{i}", protocols=tuple((p, p.encode()) for p in ps))
        for i, ps in enumerate(prefs)
    ]
    # delay 0: the first join completed alone; rejoin member 1 to form the group of three
    first = h.reply(rids[0])
    assert first.protocol_name == "B"
    rid = h.join(first.member_id, client="c0", protocols=(("B", b"B"), ("A", b"A")))
    resps = [h.reply(r) for r in (rid, rids[1], rids[2])]
    assert {r.protocol_name for r in resps} == {"B"}
    leader = next(r for r in resps if r.members)
    assert {m.metadata for m in leader.members} == {b"B"}


def test_inconsistent_protocols_refused(h) -> None:
    h.form(1)
    rid = h.join(protocols=(("roundrobin", b""),), client="x")
    assert h.reply(rid).error_code == E.INCONSISTENT_GROUP_PROTOCOL
    rid = h.join(protocol_type="connect", client="x")
    assert h.reply(rid).error_code == E.INCONSISTENT_GROUP_PROTOCOL
    rid = h.join(protocols=(), client="x")
    assert h.reply(rid).error_code == E.INCONSISTENT_GROUP_PROTOCOL


def test_group_max_size(make) -> None:
    h = make(group_max_size=2)
    a, b = h.form(2)
    rid = h.join(client="third")
    assert h.reply(rid) == JoinGroupResponse(E.GROUP_MAX_SIZE_REACHED)
    g = h.shard.group("g")
    assert set(g.members) == {a, b} and g.state.value == "Stable"
    # existing members may still rejoin
    ra, rb = h.join(a, client="c0"), h.join(b, client="c1")
    assert h.reply(ra).error_code == 0 and h.reply(rb).error_code == 0


def test_group_max_size_counts_awaiting_join_while_preparing(make) -> None:
    h = make(group_max_size=1)
    a = h.form(1)[0]
    ra = h.join(a, client="c0")  # leader rejoin: PreparingRebalance, 1 awaiting
    rid = h.join(client="other")
    assert h.reply(rid).error_code == E.GROUP_MAX_SIZE_REACHED
    assert h.reply(ra).generation_id == 2
    assert h.shard.group("g").members[a].awaiting_join is None


def test_dead_group_tells_client_to_rediscover(h) -> None:
    h.commit({("t", 0): 1})
    g = h.shard.group("g")
    g.state = g.state.DEAD  # a group being removed (transient)
    assert h.reply(h.join()).error_code == E.COORDINATOR_NOT_AVAILABLE
    g.state = g.state.EMPTY


def test_new_member_join_timeout_removes_stuck_new_member(h) -> None:
    a, b = h.form(2)
    # b is slow to rejoin; a new member c waits in PreparingRebalance
    rc = h.join(client="new", rebalance=600000)
    assert h.shard.group("g").state.value == "PreparingRebalance"
    assert h.timers[heartbeat_key("g", "new-3")] == h.now + 300000
    assert h.timers[join_key("g")] == h.now + 600000
    for _ in range(35):  # a and b keep heartbeating but never rejoin
        h.advance(9000)
        h.reply(h.heartbeat(a, 2))
        h.reply(h.heartbeat(b, 2))
    assert h.reply(rc) == JoinGroupResponse(E.UNKNOWN_MEMBER_ID)
    g = h.shard.group("g")
    assert "new-3" not in g.members
    removed = [e for e in h.events if type(e).__name__ == "MemberRemoved"]
    assert removed[-1].cause == "new_member_join_timeout"
