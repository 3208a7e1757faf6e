"""The sans-IO membership machine with a fake clock: no sockets, no asyncio."""

from __future__ import annotations

from typing import Any

import pytest

from muster.assignors.registry import subscription_for
from muster.client.core import GroupMembership, MemberState, Request
from muster.client.errors import CommitFailedError, KafkaConnectionError
from muster.protocol.codec import build, response_schema
from muster.protocol.consumer_protocol import (
    assignment_from_dict,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

VERSIONS = {10: 4, 11: 9, 12: 4, 13: 5, 14: 5, 8: 8, 9: 7}


def resp(api_key: int, body: dict[str, Any], version: int | None = None) -> Any:
    return build(response_schema(api_key, version or VERSIONS[api_key]), body)


def only(requests: list[Request], kind: str) -> Request:
    matching = [r for r in requests if r.kind == kind]
    assert len(matching) == 1, requests
    return matching[0]


def kinds(requests: list[Request]) -> list[str]:
    return [r.kind for r in requests]


def events(m: GroupMembership) -> list[tuple[str, frozenset[tuple[str, int]]]]:
    out = [(e.kind, e.partitions) for e in m.events]
    m.events.clear()
    return out


def assignment_bytes(parts: dict[str, list[int]]) -> bytes:
    return encode_assignment(assignment_from_dict(parts))


class Clock:
    def __init__(self) -> None:
        self.now = 1_000

    def advance(self, ms: int) -> int:
        self.now += ms
        return self.now


def member(**kw: Any) -> GroupMembership:
    options: dict[str, Any] = dict(
        session_timeout_ms=10_000,
        heartbeat_interval_ms=1_000,
        max_poll_interval_ms=30_000,
        auto_commit_interval_ms=5_000,
        retry_backoff_ms=100,
        now_ms=1_000,
    )
    options.update(kw)
    return GroupMembership("g", **options)


def find_coordinator(m: GroupMembership, now: int) -> None:
    reqs, _ = m.poll(now)
    find = only(reqs, "find")
    assert find.to == "any" and find.body["coordinator_keys"] == ["g"]
    m.on_response(
        find,
        resp(10, {"coordinators": [{"key": "g", "node_id": 1, "host": "h", "port": 9092}]}),
        now,
    )
    assert m.coordinator == (1, "h", 9092)


def join_as_follower(
    m: GroupMembership, now: int, parts: dict[str, list[int]], generation: int = 1
) -> None:
    """From UNJOINED (coordinator known) to STABLE with `parts`."""
    reqs, _ = m.poll(now)
    join = only(reqs, "join")
    assert m.state is MemberState.REBALANCING
    m.on_response(
        join,
        resp(
            11,
            {
                "generation_id": generation,
                "protocol_name": m.assignors[0].name,
                "leader": "leader-1",
                "member_id": m.member_id or "me-1",
                "members": [],
            },
        ),
        now,
    )
    assert m.state is MemberState.COMPLETING_REBALANCE
    reqs, _ = m.poll(now)
    sync = only(reqs, "sync")
    assert sync.body["assignments"] == []  # followers send an empty assignment
    m.on_response(sync, resp(14, {"assignment": assignment_bytes(parts)}), now)
    assert m.state is MemberState.STABLE


def stable_member(clock: Clock, parts: dict[str, list[int]] | None = None, **kw: Any):
    m = member(**kw)
    m.subscribe({"t"}, clock.now)
    m.update_metadata({"t": 4}, clock.now)
    find_coordinator(m, clock.now)
    join_as_follower(m, clock.now, parts if parts is not None else {"t": [0, 1]})
    events(m)
    return m


def test_join_retries_with_member_id_required_then_follows():
    clock = Clock()
    m = member()
    m.subscribe({"t"}, clock.now)
    assert m.state is MemberState.UNJOINED
    find_coordinator(m, clock.now)
    reqs, _ = m.poll(clock.now)
    join = only(reqs, "join")
    assert join.body["member_id"] == "" and join.to == "coordinator"
    sub = decode_subscription(join.body["protocols"][0]["metadata"])
    assert sub.topics == ("t",)
    m.on_response(join, resp(11, {"error_code": 79, "member_id": "me-1"}), clock.now)
    reqs, _ = m.poll(clock.now)
    join = only(reqs, "join")
    assert join.body["member_id"] == "me-1"
    m.on_response(
        join,
        resp(
            11,
            {
                "generation_id": 3,
                "protocol_name": "range",
                "leader": "other",
                "member_id": "me-1",
                "members": [],
            },
        ),
        clock.now,
    )
    reqs, _ = m.poll(clock.now)
    sync = only(reqs, "sync")
    assert sync.body["generation_id"] == 3 and sync.body["member_id"] == "me-1"
    m.on_response(sync, resp(14, {"assignment": assignment_bytes({"t": [2, 3]})}), clock.now)
    assert m.state is MemberState.STABLE and m.generation == 3
    assert events(m) == [("assign", frozenset({("t", 2), ("t", 3)}))]


def test_leader_asks_for_metadata_and_assigns_every_member():
    clock = Clock()
    m = member(assignors=("range",))
    m.subscribe({"t"}, clock.now)
    find_coordinator(m, clock.now)
    join = only(m.poll(clock.now)[0], "join")
    other = encode_subscription(subscription_for("range", ["t", "u"]))
    mine = join.body["protocols"][0]["metadata"]
    m.on_response(
        join,
        resp(
            11,
            {
                "generation_id": 1,
                "protocol_name": "range",
                "leader": "a",
                "member_id": "a",
                "members": [
                    {"member_id": "a", "metadata": mine},
                    {"member_id": "b", "metadata": other},
                ],
            },
        ),
        clock.now,
    )
    meta = only(m.poll(clock.now)[0], "metadata")
    assert meta.to == "metadata" and meta.body["topics"] == ["t", "u"]
    m.on_response(meta, {"t": 4, "u": 2}, clock.now)
    sync = only(m.poll(clock.now)[0], "sync")
    got = {a["member_id"]: a["assignment"] for a in sync.body["assignments"]}
    from muster.protocol.consumer_protocol import decode_assignment

    assert decode_assignment(got["a"]).as_dict() == {"t": [0, 1]}
    assert decode_assignment(got["b"]).as_dict() == {"t": [2, 3], "u": [0, 1]}
    m.on_response(sync, resp(14, {"assignment": got["a"]}), clock.now)
    assert m.state is MemberState.STABLE
    assert events(m) == [("assign", frozenset({("t", 0), ("t", 1)}))]


def test_heartbeats_on_interval_and_wake_at():
    clock = Clock()
    m = stable_member(clock)
    reqs, wake = m.poll(clock.now)
    assert reqs == [] and wake == clock.now + 1_000
    reqs, _ = m.poll(clock.advance(1_000))
    hb = only(reqs, "heartbeat")
    assert hb.body["generation_id"] == 1 and hb.body["member_id"] == "me-1"
    assert kinds(m.poll(clock.advance(1_500))[0]) == []  # one heartbeat in flight at a time
    m.on_response(hb, resp(12, {}), clock.now)
    assert kinds(m.poll(clock.now)[0]) == ["heartbeat"]


def test_rebalance_in_progress_commits_then_revokes_then_rejoins():
    clock = Clock()
    m = stable_member(clock)
    m.set_positions({("t", 0): 10, ("t", 1): 20})
    hb = only(m.poll(clock.advance(1_000))[0], "heartbeat")
    m.on_response(hb, resp(12, {"error_code": 27}), clock.now)
    assert m.rejoin_cause is not None and m.state is MemberState.STABLE
    # the background task does not join
    assert "join" not in kinds(m.poll(clock.now, join=False)[0])
    reqs, _ = m.poll(clock.now)
    commit = only(reqs, "commit")  # onJoinPrepare: commit first
    assert commit.body["generation_id"] == 1
    assert events(m) == []
    assert kinds(m.poll(clock.now)[0]) == []  # waits for the commit
    m.on_response(
        commit,
        resp(
            8,
            {
                "topics": [
                    {"name": "t", "partitions": [{"partition_index": 0}, {"partition_index": 1}]}
                ]
            },
        ),
        clock.now,
    )
    reqs, _ = m.poll(clock.now)
    assert kinds(reqs) == ["join"]
    assert [e for e, _ in events(m)] == ["commit", "revoke"]
    assert m.assignment == frozenset()
    assert reqs[0].body["member_id"] == "me-1"


@pytest.mark.parametrize(
    ("code", "member_after"),
    [(22, "me-1"), (25, "")],
    ids=["ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID"],
)
def test_stale_generation_loses_partitions_and_rejoins(code, member_after):
    clock = Clock()
    m = stable_member(clock)
    hb = only(m.poll(clock.advance(1_000))[0], "heartbeat")
    m.on_response(hb, resp(12, {"error_code": code}), clock.now)
    assert m.state is MemberState.UNJOINED and m.generation == -1
    assert events(m) == [("lost", frozenset({("t", 0), ("t", 1)}))]
    join = only(m.poll(clock.now)[0], "join")
    assert join.body["member_id"] == member_after


@pytest.mark.parametrize("code", [14, 15, 16])
def test_coordinator_errors_trigger_rediscovery(code):
    clock = Clock()
    m = stable_member(clock)
    hb = only(m.poll(clock.advance(1_000))[0], "heartbeat")
    m.on_response(hb, resp(12, {"error_code": code}), clock.now)
    assert m.coordinator is None and m.state is MemberState.STABLE
    find_coordinator(m, clock.now)
    assert kinds(m.poll(clock.advance(1_000))[0]) == ["heartbeat"]


def test_coordinator_moves_during_join():
    clock = Clock()
    m = member()
    m.subscribe({"t"}, clock.now)
    find_coordinator(m, clock.now)
    join = only(m.poll(clock.now)[0], "join")
    m.on_response(join, resp(11, {"error_code": 16}), clock.now)
    assert m.coordinator is None and m.state is MemberState.UNJOINED
    assert m.poll(clock.now)[0] == []  # backoff first
    find_coordinator(m, clock.advance(100))
    assert kinds(m.poll(clock.now)[0]) == ["join"]


def test_disconnect_on_join_rediscovers_and_rejoins():
    clock = Clock()
    m = member()
    m.subscribe({"t"}, clock.now)
    find_coordinator(m, clock.now)
    join = only(m.poll(clock.now)[0], "join")
    m.on_failure(join, KafkaConnectionError("lost"), clock.now)
    assert m.coordinator is None
    find_coordinator(m, clock.advance(200))
    assert kinds(m.poll(clock.now)[0]) == ["join"]


def test_sync_rebalance_in_progress_rejoins_keeping_the_member_id():
    clock = Clock()
    m = member()
    m.subscribe({"t"}, clock.now)
    find_coordinator(m, clock.now)
    join = only(m.poll(clock.now)[0], "join")
    m.on_response(
        join,
        resp(11, {"generation_id": 1, "protocol_name": "range", "leader": "x", "member_id": "me"}),
        clock.now,
    )
    sync = only(m.poll(clock.now)[0], "sync")
    m.on_response(sync, resp(14, {"error_code": 27}), clock.now)
    join = only(m.poll(clock.now)[0], "join")
    assert join.body["member_id"] == "me"


def test_session_timeout_without_answers_marks_coordinator_dead():
    clock = Clock()
    m = stable_member(clock)
    hb = only(m.poll(clock.advance(1_000))[0], "heartbeat")
    m.on_failure(hb, KafkaConnectionError("gone"), clock.now)
    assert m.coordinator is None
    assert kinds(m.poll(clock.advance(200))[0]) == ["find"]


def test_max_poll_interval_leaves_then_next_poll_rejoins():
    clock = Clock()
    m = stable_member(clock)
    # heartbeats keep flowing while the app is busy...
    for _ in range(29):
        reqs, _ = m.poll(clock.advance(1_000), join=False)
        for r in reqs:
            m.on_response(r, resp(12, {}), clock.now)
    # ...until max.poll.interval.ms passes without app poll
    reqs, _ = m.poll(clock.advance(1_500), join=False)
    leave = only(reqs, "leave")
    assert leave.body["members"][0]["member_id"] == "me-1"
    assert "reason" in leave.body["members"][0]
    assert m.state is MemberState.UNJOINED and m.member_id == ""
    assert m.poll(clock.advance(5_000))[0] == []  # no rejoin until the app polls
    m.commit({("t", 0): 1}, tag=9)  # not a member any more: fails at once
    m.poll(clock.now)
    (failed,) = list(m.events)
    assert isinstance(failed.error, CommitFailedError)
    m.events.clear()
    m.app_polled(clock.now)
    assert events(m) == [("lost", frozenset({("t", 0), ("t", 1)}))]
    assert kinds(m.poll(clock.now)[0]) == ["join"]


def test_static_member_does_not_leave():
    clock = Clock()
    m = stable_member(clock, group_instance_id="static-1")
    reqs, _ = m.poll(clock.advance(31_000), join=False)
    assert "leave" not in kinds(reqs)
    assert m.member_id == "me-1"  # kept: a static member rejoins as itself
    assert m.close(clock.now) == []


def test_close_revokes_and_leaves():
    clock = Clock()
    m = stable_member(clock)
    reqs = m.close(clock.now)
    assert kinds(reqs) == ["leave"]
    assert reqs[0].body["members"][0]["reason"] == "the consumer is being closed"
    assert events(m) == [("revoke", frozenset({("t", 0), ("t", 1)}))]
    # the revoke callback may still commit with the current generation
    m.commit({("t", 0): 1}, tag=1)
    commit = only(m.poll(clock.now)[0], "commit")
    assert commit.body["generation_id"] == 1
    m.finish_close()
    assert m.state is MemberState.UNJOINED and m.member_id == ""
    assert m.poll(clock.advance(10_000), join=True)[0] == []


def test_unsubscribe_revokes_and_leaves():
    clock = Clock()
    m = stable_member(clock)
    m.subscribe(set(), clock.now)
    assert events(m) == [("revoke", frozenset({("t", 0), ("t", 1)}))]
    assert kinds(m.poll(clock.now)[0]) == ["leave"]
    assert m.state is MemberState.UNJOINED


def test_partition_count_change_triggers_rejoin():
    clock = Clock()
    m = stable_member(clock)
    m.update_metadata({"t": 4}, clock.now)
    assert m.rejoin_cause is None
    m.update_metadata({"t": 6}, clock.now)
    assert m.rejoin_cause == "metadata changed"
    m.enable_auto_commit = False
    reqs, _ = m.poll(clock.now)
    assert kinds(reqs) == ["join"]


def test_subscription_change_triggers_rejoin_with_new_topics():
    clock = Clock()
    m = stable_member(clock, enable_auto_commit=False)
    m.subscribe({"t", "new"}, clock.now)
    join = only(m.poll(clock.now)[0], "join")
    sub = decode_subscription(join.body["protocols"][0]["metadata"])
    assert set(sub.topics) == {"t", "new"}


def test_cooperative_two_phase_revoke():
    clock = Clock()
    m = stable_member(
        clock, {"t": [0, 1]}, assignors=("cooperative-sticky",), enable_auto_commit=False
    )
    assert m.cooperative
    hb = only(m.poll(clock.advance(1_000))[0], "heartbeat")
    m.on_response(hb, resp(12, {"error_code": 27}), clock.now)
    join = only(m.poll(clock.now)[0], "join")
    assert events(m) == []  # cooperative: nothing revoked before the join
    sub = decode_subscription(join.body["protocols"][0]["metadata"])
    assert sub.owned() == {("t", 0), ("t", 1)} and sub.generation_id == 1
    m.on_response(
        join,
        resp(
            11,
            {
                "generation_id": 2,
                "protocol_name": "cooperative-sticky",
                "leader": "x",
                "member_id": "me-1",
            },
        ),
        clock.now,
    )
    sync = only(m.poll(clock.now)[0], "sync")
    m.on_response(sync, resp(14, {"assignment": assignment_bytes({"t": [0]})}), clock.now)
    # phase one: only the moved partition is revoked, then a rejoin follows
    assert events(m) == [("revoke", frozenset({("t", 1)})), ("assign", frozenset())]
    assert m.assignment == {("t", 0)} and m.rejoin_cause == "cooperative revocation"
    join = only(m.poll(clock.now)[0], "join")
    assert decode_subscription(join.body["protocols"][0]["metadata"]).owned() == {("t", 0)}


def test_commit_during_rebalance_fails_and_rejoins():
    clock = Clock()
    m = stable_member(clock, enable_auto_commit=False)
    m.commit({("t", 0): 5}, tag=7)
    commit = only(m.poll(clock.now)[0], "commit")
    assert commit.body["member_id"] == "me-1"
    m.on_response(
        commit,
        resp(
            8,
            {"topics": [{"name": "t", "partitions": [{"partition_index": 0, "error_code": 27}]}]},
        ),
        clock.now,
    )
    (event,) = list(m.events)
    assert event.kind == "commit" and event.tag == 7
    assert isinstance(event.error, CommitFailedError)
    assert m.rejoin_cause is not None


def test_assign_mode_commit_uses_no_generation_and_retries_after_disconnect():
    clock = Clock()
    m = member(enable_auto_commit=False)
    m.commit({("t", 0): 5}, tag=1)
    find_coordinator(m, clock.now)
    commit = only(m.poll(clock.now)[0], "commit")
    assert commit.body["generation_id"] == -1 and commit.body["member_id"] == ""
    m.on_failure(commit, KafkaConnectionError("lost"), clock.now)
    find_coordinator(m, clock.advance(100))
    commit = only(m.poll(clock.now)[0], "commit")
    m.on_response(
        commit,
        resp(8, {"topics": [{"name": "t", "partitions": [{"partition_index": 0}]}]}),
        clock.now,
    )
    (event,) = list(m.events)
    assert event.kind == "commit" and event.error is None and event.offsets == {("t", 0): 5}


def test_committed_offsets_and_not_coordinator_retry():
    clock = Clock()
    m = member()
    m.fetch_committed([("t", 0), ("t", 1)], tag="x")
    find_coordinator(m, clock.now)
    fetch = only(m.poll(clock.now)[0], "offset_fetch")
    m.on_response(fetch, resp(9, {"error_code": 16}), clock.now)
    assert m.coordinator is None
    find_coordinator(m, clock.advance(100))
    fetch = only(m.poll(clock.now)[0], "offset_fetch")
    m.on_response(
        fetch,
        resp(
            9,
            {
                "topics": [
                    {
                        "name": "t",
                        "partitions": [
                            {"partition_index": 0, "committed_offset": 42},
                            {"partition_index": 1, "committed_offset": -1},
                        ],
                    }
                ]
            },
        ),
        clock.now,
    )
    (event,) = list(m.events)
    assert event.kind == "committed" and event.offsets == {("t", 0): 42, ("t", 1): -1}


def test_auto_commit_every_interval_only_when_changed():
    clock = Clock()
    m = stable_member(clock)
    m.set_positions({("t", 0): 3})
    reqs, _ = m.poll(clock.advance(5_000))
    commit = only(reqs, "commit")
    assert commit.tag.tag == "auto"
    m.on_response(
        commit,
        resp(8, {"topics": [{"name": "t", "partitions": [{"partition_index": 0}]}]}),
        clock.now,
    )
    for r in reqs:
        if r.kind == "heartbeat":
            m.on_response(r, resp(12, {}), clock.now)
    reqs, _ = m.poll(clock.advance(5_000))
    assert "commit" not in kinds(reqs)  # nothing new consumed


def test_fatal_join_error_surfaces_once_and_stops():
    clock = Clock()
    m = member()
    m.subscribe({"t"}, clock.now)
    find_coordinator(m, clock.now)
    join = only(m.poll(clock.now)[0], "join")
    m.on_response(join, resp(11, {"error_code": 23}), clock.now)  # INCONSISTENT_GROUP_PROTOCOL
    (event,) = list(m.events)
    assert event.kind == "fatal" and event.error is not None and event.error.code == 23
    assert m.poll(clock.now) == ([], None)
    m.events.clear()
    m.commit({("t", 0): 1}, tag=5)  # answered at once with the fatal error
    (event,) = list(m.events)
    assert event.kind == "commit" and event.tag == 5 and event.error.code == 23


def test_old_find_coordinator_shape():
    clock = Clock()
    m = member()
    m.subscribe({"t"}, clock.now)
    find = only(m.poll(clock.now)[0], "find")
    m.on_response(find, resp(10, {"node_id": 3, "host": "x", "port": 1}, 3), clock.now)
    assert m.coordinator == (3, "x", 1)


def test_blank_topic_is_rejected():
    with pytest.raises(ValueError):
        member().subscribe({" "}, 0)


def test_assign_mode_auto_commit_without_generation():
    clock = Clock()
    m = member()
    m.set_positions({("t", 0): 4})
    assert m.poll(clock.now) == ([], 6_000)  # the first auto-commit is due
    reqs, _ = m.poll(clock.advance(5_000))
    find = only(reqs, "find")
    m.on_response(
        find,
        resp(10, {"coordinators": [{"key": "g", "node_id": 1, "host": "h", "port": 1}]}),
        clock.now,
    )
    commit = only(m.poll(clock.now)[0], "commit")
    assert commit.body["generation_id"] == -1 and commit.body["member_id"] == ""
    assert commit.body["topics"][0]["partitions"][0]["committed_offset"] == 4
