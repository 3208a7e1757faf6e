"""Static membership (group.instance.id): replace without rebalance, fencing."""

from __future__ import annotations

from muster.coordinator import errors as E
from muster.coordinator.context import heartbeat_key
from muster.coordinator.responses import JoinGroupResponse, SyncGroupResponse
from muster.records.offsets_topic import decode_group_metadata_value
from tests.core.harness import sub


def _static_group(h):
    ra = h.join(instance="i-a", client="a")
    a = h.reply(ra).member_id
    rb = h.join(instance="i-b", client="b")
    rja = h.join(a, instance="i-a", client="a")
    ja, jb = h.reply(rja), h.reply(rb)
    b = jb.member_id
    assert ja.generation_id == 2 and ja.leader == a
    sa = h.sync(a, 2, {a: b"A", b: b"B"}, instance="i-a")
    sb = h.sync(b, 2, instance="i-b")
    assert h.reply(sa).assignment == b"A" and h.reply(sb).assignment == b"B"
    return a, b


def test_static_follower_restart_keeps_assignment_without_rebalance(h) -> None:
    a, b = _static_group(h)
    records_before = len(h.log)
    rid = h.join(instance="i-b", client="b")  # b restarted: no member id
    resp = h.reply(rid)
    new_b = resp.member_id
    assert new_b != b
    assert resp == JoinGroupResponse(E.NONE, 2, "consumer", "range", a, False, new_b, ())
    g = h.shard.group("g")
    assert g.state.value == "Stable" and g.generation == 2
    assert g.static_members["i-b"] == new_b and b not in g.members
    assert heartbeat_key("g", b) not in h.timers and heartbeat_key("g", new_b) in h.timers
    # the new identity was stored
    assert len(h.log) == records_before + 1
    value = decode_group_metadata_value(h.log[-1][1])
    assert [m.member_id for m in value.members] == [a, new_b]
    assert value.members[1].assignment == b"B"
    # it inherits the assignment
    assert h.reply(h.sync(new_b, 2, instance="i-b")) == SyncGroupResponse(
        E.NONE, "consumer", "range", b"B"
    )
    # the old identity is fenced everywhere
    assert h.reply(h.heartbeat(b, 2, instance="i-b")).error_code == E.FENCED_INSTANCE_ID
    assert h.reply(h.sync(b, 2, instance="i-b")).error_code == E.FENCED_INSTANCE_ID
    assert h.reply(h.join(b, instance="i-b", client="b")).error_code == E.FENCED_INSTANCE_ID
    assert (
        h.reply(h.commit({("t", 0): 1}, generation=2, member_id=b, instance="i-b"))
        .topics[0]
        .partitions[0]
        .error_code
        == E.FENCED_INSTANCE_ID
    )
    assert not [e for e in h.events if type(e).__name__ == "RebalanceStarted" and e.generation == 2]


def test_static_leader_restart_v9_skips_assignment(h) -> None:
    _a, b = _static_group(h)
    rid = h.join(instance="i-a", client="a", skip=True)
    resp = h.reply(rid)
    assert resp.skip_assignment is True and resp.leader == resp.member_id
    assert {m.member_id for m in resp.members} == {resp.member_id, b}
    assert h.shard.group("g").state.value == "Stable"


def test_static_leader_restart_old_client_gets_old_leader_id(h) -> None:
    a, _b = _static_group(h)
    resp = h.reply(h.join(instance="i-a", client="a"))
    assert resp.leader == a and resp.member_id != a and resp.members == ()
    assert h.shard.group("g").leader_id == resp.member_id


def test_static_restart_store_failure_reverts(h) -> None:
    a, b = _static_group(h)
    h.auto_durable = False
    rid = h.join(instance="i-b", client="b")
    h.flush(error=E.NOT_LEADER_OR_FOLLOWER)
    h.auto_durable = True
    assert h.reply(rid) == JoinGroupResponse(
        E.NOT_COORDINATOR, 2, "consumer", "range", a, False, ""
    )
    g = h.shard.group("g")
    assert g.static_members["i-b"] == b and b in g.members


def test_static_rejoin_with_protocol_change_rebalances(h) -> None:
    _a, _b = _static_group(h)
    rid = h.join(
        instance="i-b", client="b", protocols=(("roundrobin", sub("t")), ("range", sub("t")))
    )
    # range is still the only common protocol: no change -> no rebalance
    assert h.reply(rid).error_code == E.NONE
    assert h.shard.group("g").state.value == "Stable"


def test_static_replace_during_completing_rebalances(h) -> None:
    a, b = _static_group(h)
    ra = h.join(a, instance="i-a", client="a")
    rb = h.join(b, instance="i-b", client="b")
    h.reply(ra), h.reply(rb)
    sb = h.sync(b, 3, instance="i-b")
    rid = h.join(instance="i-b", client="b")  # b restarted mid-sync
    assert h.reply(sb).error_code == E.FENCED_INSTANCE_ID
    assert not h.answered(rid)
    assert h.shard.group("g").state.value == "PreparingRebalance"


def test_static_member_removed_by_leave_with_instance_id(h) -> None:
    _a, b = _static_group(h)
    rid = h.leave(("", "i-b", "scale down"))
    assert h.reply(rid).members[0].error_code == E.NONE
    g = h.shard.group("g")
    assert b not in g.members and "i-b" not in g.static_members
    assert h.reply(h.leave(("", "i-zzz", None))).members[0].error_code == E.UNKNOWN_MEMBER_ID


def test_static_member_with_wrong_member_id_is_fenced_on_leave(h) -> None:
    a, _b = _static_group(h)
    assert h.reply(h.leave((a, "i-b", None))).members[0].error_code == E.FENCED_INSTANCE_ID


def test_static_members_not_removed_when_they_do_not_rejoin(h) -> None:
    a, b = _static_group(h)
    ra = h.join(a, instance="i-a", client="a", rebalance=30000)
    h.advance(9000)
    h.reply(h.heartbeat(b, 2, instance="i-b"))
    h.advance(9000)
    h.reply(h.heartbeat(b, 2, instance="i-b"))
    h.advance(9000)
    h.reply(h.heartbeat(b, 2, instance="i-b"))
    h.advance(3000)  # the rebalance timeout: b (static) stays a member
    resp = h.reply(ra)
    assert {m.member_id for m in resp.members} == {a, b}
    assert b in h.shard.group("g").members


def test_unknown_instance_id_is_unknown_member(h) -> None:
    _a, b = _static_group(h)
    assert h.reply(h.heartbeat(b, 2, instance="i-zz")).error_code == E.UNKNOWN_MEMBER_ID
    assert h.reply(h.sync(b, 2, instance="i-zz")).error_code == E.UNKNOWN_MEMBER_ID
    rid = h.leave((b, "i-zz", None))
    assert h.reply(rid).members[0].error_code == E.UNKNOWN_MEMBER_ID
    assert b in h.shard.group("g").members
