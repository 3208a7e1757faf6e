"""JoinGroup / SyncGroup / Heartbeat / LeaveGroup / DescribeGroups: every version,
the group states, the spec's error paths, static members."""

from __future__ import annotations

from conformance.kafka_diff.helpers import (
    DESCRIBE_GROUPS,
    HEARTBEAT,
    JOIN,
    LEAVE,
    SYNC,
    assignment,
    create_topic,
    describe,
    heartbeat,
    join,
    join_body,
    leave,
    stable_member,
    subscription,
    sync,
)
from conformance.kafka_diff.registry import register
from conformance.kafka_diff.session import Session


def _join(v: int):
    def run(s: Session) -> None:
        if not s.supports(JOIN, v):
            return
        g = s.name()
        a = join(s, v, g)
        describe(s, g, label="after_join")  # CompletingRebalance
        sync(s, 5, g, a["member_id"], a["generation_id"], {a["member_id"]: assignment({"t": [0]})})
        join(s, v, g, label="rejoin_stable", member_id=a["member_id"])  # leader rejoins
        describe(s, g, label="after_rejoin")

    return run


def _sync(v: int):
    def run(s: Session) -> None:
        if not s.supports(SYNC, v):
            return
        g = s.name()
        a = join(s, 9, g)
        m, gen = a["member_id"], a["generation_id"]
        sync(s, v, g, m, gen, {m: assignment({"t": [0, 1]})})
        sync(s, v, g, m, gen, {}, label="sync_again_stable")
        sync(s, v, g, m, gen + 1, {}, label="sync_bad_generation")
        sync(s, v, g, m + "x", gen, {}, label="sync_unknown_member")
        sync(s, v, g + "-none", m, gen, {}, label="sync_unknown_group")
        sync(s, v, g, m, gen, {}, protocol_name="roundrobin", label="sync_other_protocol")
        describe(s, g)

    return run


def _heartbeat(v: int):
    def run(s: Session) -> None:
        if not s.supports(HEARTBEAT, v):
            return
        g = s.name()
        a = join(s, 9, g)
        m, gen = a["member_id"], a["generation_id"]
        heartbeat(s, v, g, m, gen, label="hb_completing")
        sync(s, 5, g, m, gen, {m: assignment({"t": [0]})})
        heartbeat(s, v, g, m, gen, label="hb_stable")
        heartbeat(s, v, g, m, gen + 1, label="hb_bad_generation")
        heartbeat(s, v, g, m + "x", gen, label="hb_unknown_member")
        heartbeat(s, v, g + "-none", m, gen, label="hb_unknown_group")
        heartbeat(s, v, "", m, gen, label="hb_empty_group")

    return run


def _leave(v: int):
    def run(s: Session) -> None:
        if not s.supports(LEAVE, v):
            return
        g = s.name()
        m, _gen = stable_member(s, g)
        leave(s, v, g, m + "x", label="leave_unknown_member")
        leave(s, v, g + "-none", m, label="leave_unknown_group")
        leave(s, v, g, m)
        describe(s, g, label="after_leave")  # Empty
        leave(s, v, g, m, label="leave_again")

    return run


def _describe(v: int):
    def run(s: Session) -> None:
        if not s.supports(DESCRIBE_GROUPS, v):
            return
        g = s.name()
        describe(s, g, v, "unknown_group")  # Dead
        stable_member(s, g)
        describe(s, g, v, "stable")
        describe(s, "", v, "empty_id")

    return run


for _v in range(10):
    register("classic", f"join_v{_v}", _join(_v))
for _v in range(6):
    register("classic", f"sync_v{_v}", _sync(_v))
for _v in range(5):
    register("classic", f"heartbeat_v{_v}", _heartbeat(_v))
for _v in range(6):
    register("classic", f"leave_v{_v}", _leave(_v))
for _v in range(7):
    register("classic", f"describe_v{_v}", _describe(_v))


def join_errors(s: Session) -> None:
    g = s.name()
    for v in (0, 4, 5, 9):
        s.call(JOIN, v, join_body(""), f"empty_group_v{v}")
        s.call(JOIN, v, join_body(g, session_timeout=10), f"session_too_small_v{v}")
        s.call(JOIN, v, join_body(g, session_timeout=10**9), f"session_too_large_v{v}")
        s.call(JOIN, v, join_body(g + "-none", member_id="kdiff-nope"), f"unknown_member_v{v}")


def join_protocol_mismatch(s: Session) -> None:
    g = s.name()
    _m, _gen = stable_member(s, g)
    body = join_body(g, protocol_type="connect")
    s.call(JOIN, 9, body, "other_protocol_type", conn=1)
    body = join_body(g, protocols=[("sticky", subscription("t"))])
    s.call(JOIN, 9, body, "no_common_protocol", conn=1)
    body = join_body(g, protocols=[])
    s.call(JOIN, 9, body, "no_protocols", conn=1)
    describe(s, g)


def two_members(s: Session) -> None:
    """A Stable group, a second member joins: the first learns of the rebalance
    by heartbeat, both rejoin, the leader assigns, both sync."""
    g = s.name()
    a, gen = stable_member(s, g)
    first = s.call(JOIN, 9, join_body(g), "b_join", conn=1)  # MEMBER_ID_REQUIRED
    b = first["member_id"]
    pending_b = s.later(JOIN, 9, join_body(g, member_id=b), conn=1)
    s.wait(lambda: heartbeat(s, 4, g, a, gen, record=False) if False else _in_rebalance(s, g), 10)
    heartbeat(s, 4, g, a, gen, label="a_heartbeat_rebalancing")
    describe(s, g, label="preparing")
    ja = join(s, 9, g, label="a_rejoin", member_id=a)
    jb = pending_b.wait()
    s.record("b_join_answer", jb)
    gen2 = ja["generation_id"]
    leader = ja["leader"]
    follower = b if leader == a else a
    pend = s.later(
        14,
        5,
        {
            "group_id": g,
            "generation_id": gen2,
            "member_id": follower,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignments": [],
        },
        conn=1 if follower == b else 0,
    )
    sync(
        s,
        5,
        g,
        leader,
        gen2,
        {a: assignment({"t": [0]}), b: assignment({"t": [1]})},
        label="leader_sync",
        conn=0 if leader == a else 1,
    )
    s.record("follower_sync", pend.wait())
    describe(s, g, label="stable2")
    leave(s, 5, g, b, conn=1)
    heartbeat(s, 4, g, a, gen2, label="a_after_b_left")


def _in_rebalance(s: Session, g: str) -> bool:
    d = (
        describe(s, g, label="", record=False)
        if False
        else s.call(15, 5, {"groups": [g]}, record=False)
    )
    return isinstance(d, dict) and d["groups"][0]["group_state"] == "PreparingRebalance"


def static_member(s: Session) -> None:
    g = s.name()
    inst = "instance-1"
    a = join(s, 9, g, instance=inst)  # no MEMBER_ID_REQUIRED for static members
    m1, gen = a["member_id"], a["generation_id"]
    sync(s, 5, g, m1, gen, {m1: assignment({"t": [0]})}, instance=inst)
    b = join(s, 9, g, label="restart_same_instance", instance=inst, conn=1)
    m2 = b["member_id"]
    heartbeat(s, 4, g, m1, gen, label="old_id_fenced", instance=inst)
    heartbeat(s, 4, g, m2, b["generation_id"], label="new_id", instance=inst, conn=1)
    sync(s, 5, g, m2, b["generation_id"], {}, label="new_id_sync", instance=inst, conn=1)
    sync(s, 5, g, m1, gen, {}, label="old_id_sync_fenced", instance=inst)
    describe(s, g)
    leave(s, 5, g, "", label="leave_by_instance", instance=inst)
    describe(s, g, label="after_leave")


def static_member_versions(s: Session) -> None:
    for v in (5, 7, 9):
        g = s.name(f"v{v}")
        a = join(s, v, g, label=f"join_v{v}", instance=f"i{v}", conn=v)
        s.record(f"gen_v{v}", a.get("generation_id") if isinstance(a, dict) else a)


def static_leave_unknown_instance(s: Session) -> None:
    g = s.name()
    m, _gen = stable_member(s, g, instance="i1")
    leave(s, 5, g, "", label="leave_unknown_instance", instance="i2")
    leave(s, 5, g, m + "x", label="leave_wrong_member_for_instance", instance="i1")
    describe(s, g)


def heartbeat_static_wrong_instance(s: Session) -> None:
    g = s.name()
    m, gen = stable_member(s, g, instance="i1")
    heartbeat(s, 4, g, m, gen, label="hb_other_instance", instance="i2")
    s.call(
        HEARTBEAT,
        4,
        {"group_id": g, "generation_id": gen, "member_id": "", "group_instance_id": "i1"},
        "hb_empty_member",
    )


register("classic", "join_errors", join_errors)
register("classic", "join_protocol_mismatch", join_protocol_mismatch)
register("classic", "two_members", two_members)
register("classic", "static_member", static_member)
register("classic", "static_member_versions", static_member_versions)
register("classic", "static_leave_unknown_instance", static_leave_unknown_instance)
register("classic", "heartbeat_static_wrong_instance", heartbeat_static_wrong_instance)


def sync_while_rebalancing(s: Session) -> None:
    """The leader's SyncGroup while a new member's join put the group in
    PreparingRebalance: REBALANCE_IN_PROGRESS (spec §5)."""
    g = s.name()
    a = join(s, 9, g)
    m, gen = a["member_id"], a["generation_id"]
    first = s.call(JOIN, 9, join_body(g), "b_join", conn=1)
    pending = s.later(JOIN, 9, join_body(g, member_id=first["member_id"]), conn=1)
    s.wait(lambda: _in_rebalance(s, g), 10)
    sync(s, 5, g, m, gen, {m: assignment({"t": [0]})}, label="sync_rebalancing")
    heartbeat(s, 4, g, m, gen, label="hb_rebalancing")
    join(s, 9, g, label="a_rejoin", member_id=m)
    s.record("b_answer", pending.wait())


def session_expiry(s: Session) -> None:
    """A member that stops heartbeating is removed after its session timeout
    (6 s, both brokers' group.min.session.timeout.ms) and the group is Empty."""
    g = s.name()
    m, gen = stable_member(s, g, session_timeout=6000)
    s.wait(lambda: _state(s, g) == "Empty", 20)
    describe(s, g, label="after_expiry")
    heartbeat(s, 4, g, m, gen, label="hb_expired")


def _state(s: Session, g: str) -> str:
    d = s.call(15, 5, {"groups": [g]}, record=False)
    return d["groups"][0]["group_state"] if isinstance(d, dict) else ""


def batch_leave(s: Session) -> None:
    """LeaveGroup v3+ with several members, one unknown: per-member errors."""
    g = s.name()
    m, _gen = stable_member(s, g, instance="i1")
    body = {
        "group_id": g,
        "members": [
            {"member_id": m, "group_instance_id": "i1", "reason": "kdiff"},
            {"member_id": "", "group_instance_id": "i-unknown", "reason": None},
            {"member_id": "kdiff-nope", "group_instance_id": None, "reason": None},
        ],
    }
    for v in (3, 5):
        s.call(LEAVE, v, {**body, "group_id": g if v == 3 else g + "-none"}, f"batch_v{v}")
    describe(s, g)


register("classic", "sync_while_rebalancing", sync_while_rebalancing)
register("classic", "session_expiry", session_expiry)
register("classic", "batch_leave", batch_leave)


def states_walk(s: Session) -> None:
    """JoinGroup and OffsetCommit in each state: CompletingRebalance (a rejoin with
    unchanged protocols gets the same answer), Stable, Empty, Dead."""
    g, topic = s.name(), s.name("t")
    create_topic(s, topic, 1)
    a = join(s, 9, g)
    m, gen = a["member_id"], a["generation_id"]
    join(s, 9, g, label="rejoin_completing", member_id=m)
    commit = {
        "group_id": g,
        "generation_id_or_member_epoch": gen,
        "member_id": m,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {"partition_index": 0, "committed_offset": 1, "committed_metadata": ""}
                ],
            }
        ],
    }
    s.call(8, 8, commit, "commit_completing")
    changed = [("range", subscription("t", "u"))]
    join(s, 9, g, label="rejoin_completing_new_protocols", member_id=m, protocols=changed)
    d = describe(s, g, label="after_protocol_change")
    if isinstance(d, dict):
        m2 = d["groups"][0]["members"][0]["member_id"] if d["groups"][0]["members"] else m
        leave(s, 5, g, m2)
    describe(s, g, label="empty")
    join(s, 9, g, label="known_member_empty_group", member_id=m)
    s.call(42, 2, {"groups_names": [g]}, "delete")
    describe(s, g, label="dead")
    join(s, 9, g, label="known_member_dead_group", member_id=m)
    s.call(
        8,
        8,
        {**commit, "generation_id_or_member_epoch": -1, "member_id": ""},
        "simple_commit_recreates",
    )
    describe(s, g, label="recreated")


register("classic", "states_walk", states_walk)
