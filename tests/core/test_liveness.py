"""Heartbeats per state, session expiry by timer in each state, LeaveGroup."""

from __future__ import annotations

from muster.coordinator import errors as E
from muster.coordinator import requests as rq
from muster.coordinator.context import heartbeat_key, join_key, pending_key
from muster.coordinator.responses import (
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupMemberResponse,
    LeaveGroupResponse,
)
from muster.records.offsets_topic import decode_group_metadata_value


def test_heartbeat_per_state(h) -> None:
    a, b = h.form(2)
    assert h.reply(h.heartbeat(a, 2)) == HeartbeatResponse(E.NONE)
    assert h.timers[heartbeat_key("g", a)] == h.now + 10000
    assert h.reply(h.heartbeat(a, 1)).error_code == E.ILLEGAL_GENERATION
    assert h.reply(h.heartbeat("ghost", 2)).error_code == E.UNKNOWN_MEMBER_ID
    assert h.reply(h.heartbeat(a, 2, group="other")).error_code == E.UNKNOWN_MEMBER_ID
    ra = h.join(a, client="c0")
    assert h.reply(h.heartbeat(b, 2)).error_code == E.REBALANCE_IN_PROGRESS
    rb = h.join(b, client="c1")
    h.reply(ra), h.reply(rb)
    # CompletingRebalance: members of the new generation heartbeat fine
    assert h.reply(h.heartbeat(b, 3)).error_code == E.NONE
    assert h.reply(h.heartbeat(b, 2)).error_code == E.ILLEGAL_GENERATION


def test_session_expiry_in_stable(h) -> None:
    a, b = h.form(2)
    h.advance(9000)
    h.reply(h.heartbeat(a, 2))
    h.advance(1000)  # b's deadline passes: removed by the timer, not lazily
    g = h.shard.group("g")
    assert b not in g.members and g.state.value == "PreparingRebalance"
    started = [e for e in h.events if type(e).__name__ == "RebalanceStarted"][-1]
    assert started.cause == "session_expired" and started.member_id == b
    assert h.reply(h.heartbeat(a, 2)).error_code == E.REBALANCE_IN_PROGRESS
    ra = h.join(a, client="c0")
    resp = h.reply(ra)
    assert resp.generation_id == 3 and [m.member_id for m in resp.members] == [a]


def test_session_expiry_in_preparing_completes_join(h) -> None:
    a, b = h.form(2)
    ra = h.join(a, client="c0")
    h.advance(10000)  # b never rejoins nor heartbeats
    resp = h.reply(ra)
    assert resp.generation_id == 3 and len(resp.members) == 1
    removed = [e for e in h.events if type(e).__name__ == "MemberRemoved"]
    assert removed[-1].member_id == b and removed[-1].cause == "session_expired"


def test_session_expiry_in_completing(h) -> None:
    a, b = h.form(2)
    ra, rb = h.join(a, client="c0"), h.join(b, client="c1")
    h.reply(ra), h.reply(rb)
    rs = h.sync(b, 3)  # b is parked; a (leader) never syncs and dies
    h.advance(10000)
    g = h.shard.group("g")
    assert a not in g.members and h.reply(rs).error_code == E.REBALANCE_IN_PROGRESS


def test_last_member_expiry_empties_group_and_stores_it(h) -> None:
    (a,) = h.form(1)
    h.advance(10000)
    g = h.shard.group("g")
    assert g.state.value == "Empty" and g.generation == 2 and not g.members
    value = decode_group_metadata_value(h.log[-1][1])
    assert value.generation == 2 and value.protocol is None and value.leader is None
    assert value.members == () and value.protocol_type == "consumer"
    assert value.current_state_timestamp == h.now
    assert h.reply(h.heartbeat(a, 2)).error_code == E.UNKNOWN_MEMBER_ID
    assert h.reply(h.join(a)).error_code == E.UNKNOWN_MEMBER_ID


def test_leave_group_batch_with_reasons(h) -> None:
    a, b, c = h.form(3)
    rid = h.leave((b, None, "shutting down"), (c, None, None), ("ghost", None, None))
    assert h.reply(rid) == LeaveGroupResponse(
        E.NONE,
        (
            LeaveGroupMemberResponse(b, None, E.NONE),
            LeaveGroupMemberResponse(c, None, E.NONE),
            LeaveGroupMemberResponse("ghost", None, E.UNKNOWN_MEMBER_ID),
        ),
    )
    started = [e for e in h.events if type(e).__name__ == "RebalanceStarted"]
    assert started[-1].cause == "member_left" and started[-1].reason == "shutting down"
    assert heartbeat_key("g", b) not in h.timers
    ra = h.join(a, client="c0")
    assert [m.member_id for m in h.reply(ra).members] == [a]


def test_leave_of_unknown_group_and_last_member(h) -> None:
    rid = h.leave("x", group="nope")
    assert h.reply(rid) == LeaveGroupResponse(
        E.NONE, (LeaveGroupMemberResponse("x", None, E.UNKNOWN_MEMBER_ID),)
    )
    (a,) = h.form(1)
    assert h.reply(h.leave(a)).members[0].error_code == E.NONE
    assert h.shard.group("g").state.value == "Empty"


def test_leave_answers_parked_join_of_leaving_member(h) -> None:
    a, b = h.form(2)
    ra = h.join(a, client="c0")
    h.reply(h.leave(a))
    assert h.reply(ra) == JoinGroupResponse(E.UNKNOWN_MEMBER_ID)
    rb = h.join(b, client="c1")
    assert h.reply(rb).leader == b


def test_pending_member_can_leave(h) -> None:
    rid = h.join(require_known=True, client="p")
    mid = h.reply(rid).member_id
    assert h.reply(h.leave(mid)).members[0].error_code == E.NONE
    assert h.shard.group("g").pending_members == set()


def test_member_waiting_in_join_is_not_expired_by_its_session(h) -> None:
    a, b = h.form(2)
    ra = h.join(a, client="c0")  # a waits in PreparingRebalance for b (30 s rebalance timeout)
    for _ in range(3):
        h.advance(9000)
        h.reply(h.heartbeat(b, 2))
    assert a in h.shard.group("g").members  # 27 s: a's 10 s session passed, it stays
    rb = h.join(b, client="c1")
    assert h.reply(ra).generation_id == 3 and h.reply(rb).generation_id == 3


def test_stale_or_early_timer_calls_are_harmless(h) -> None:
    _a, b = h.form(2)
    key = heartbeat_key("g", b)
    deadline = h.timers[key]
    early = h.shard.on_timer(key, deadline - 1)
    assert early.records == [] and early.replies == []
    assert [(t.key, t.deadline_ms) for t in early.timers] == [(key, deadline)]
    assert h.shard.on_timer(heartbeat_key("g", "nobody"), h.now).empty
    assert b in h.shard.group("g").members


def test_timer_keys_of_different_groups_and_members_never_collide() -> None:
    # ids may contain '-': a shared key would let one member's heartbeat timer
    # replace (or cancel) another's in another group
    assert heartbeat_key("a-b", "c") != heartbeat_key("a", "b-c")
    assert pending_key("a-b", "c") != pending_key("a", "b-c")
    assert join_key("a-b") != join_key("a")
    assert len({heartbeat_key("a-b", "c"), heartbeat_key("a", "b-c")}) == 2


def test_a_pending_member_that_leaves_takes_its_timer_along(h) -> None:
    """Found by reliability/simulate.py: LeaveGroup from a member admitted
    with MEMBER_ID_REQUIRED dropped it but left its pending-member timer."""
    resp = h.reply(h.join(require_known=True))
    assert resp.error_code == E.MEMBER_ID_REQUIRED
    assert any(k.startswith("pending-") for k in h.group_timers)
    h.reply(h.leave(resp.member_id))
    assert not any(k.startswith("pending-") for k in h.group_timers)
    assert resp.member_id not in h.shard.group("g").pending_members


def test_deleting_a_group_drops_its_pending_members_and_their_timers(h) -> None:
    """Found by reliability/simulate.py: DeleteGroups of an Empty group with a
    member waiting to rejoin (MEMBER_ID_REQUIRED) left that member's timer."""
    resp = h.reply(h.join(require_known=True))
    assert resp.error_code == E.MEMBER_ID_REQUIRED
    deleted = h.reply(h.send(rq.DeleteGroups(("g",))))
    assert deleted.results[0].error_code == E.NONE
    assert h.shard.group("g") is None
    assert h.group_timers == {}
