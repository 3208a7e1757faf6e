"""The consumer-protocol (KIP-848) member with a fake clock: ConsumerGroupHeartbeat
answers built from kio's schemas, no sockets, no asyncio."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from muster.client.core.consumer_member import ConsumerGroupMember
from muster.client.core.consumer_state import ConsumerState as S
from muster.client.core.messages import Event, Request
from muster.client.errors import CommitFailedError, KafkaConnectionError, UnsupportedError
from muster.protocol.codec import build, response_schema

A, B = uuid.UUID(int=1), uuid.UUID(int=2)
NAMES = {A: "a", B: "b"}


def resp(api_key: int, version: int, body: dict[str, Any]) -> Any:
    return build(response_schema(api_key, version), body)


def hb_answer(epoch: int, parts: dict[uuid.UUID, list[int]] | None, code: int = 0) -> Any:
    assignment = None
    if parts is not None:
        assignment = {
            "topic_partitions": [{"topic_id": t, "partitions": ps} for t, ps in parts.items()]
        }
    body = {
        "error_code": code,
        "member_id": None if code else "m-1",
        "member_epoch": epoch,
        "heartbeat_interval": 500,
        "assignment": assignment,
    }
    return resp(68, 1, body)


def commit_answer(parts: dict[tuple[str, int], int]) -> Any:
    topics: dict[str, list[dict[str, int]]] = {}
    for (t, p), code in parts.items():
        topics.setdefault(t, []).append({"partition_index": p, "error_code": code})
    return resp(8, 9, {"topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]})


def only(requests: list[Request], kind: str) -> Request:
    matching = [r for r in requests if r.kind == kind]
    assert len(matching) == 1, requests
    return matching[0]


def owned_body(request: Request) -> Any:
    parts = request.body["topic_partitions"]
    if parts is None:
        return None
    return {p["topic_id"]: list(p["partitions"]) for p in parts}


class Harness:
    """A member plus the driver's job: listener callbacks reported done."""

    def __init__(self, **kw: Any) -> None:
        options: dict[str, Any] = dict(
            max_poll_interval_ms=30_000,
            auto_commit_interval_ms=60_000,
            retry_backoff_ms=100,
            member_id="m-1",
            now_ms=1_000,
        )
        options.update(kw)
        self.now = 1_000
        self.m = ConsumerGroupMember("g", **options)

    def poll(self, advance: int = 0) -> list[Request]:
        self.now += advance
        return self.m.poll(self.now)[0]

    def answer(self, request: Request, response: Any) -> None:
        self.m.on_response(request, response, self.now)

    def events(self) -> list[Event]:
        out = [e for e in self.m.events if e.kind != "commit"]
        self.m.events.clear()
        return out

    def run_callbacks(self) -> list[tuple[str, frozenset[tuple[str, int]]]]:
        done = self.events()
        for event in done:
            self.m.listener_done(event, self.now)
        return [(e.kind, e.partitions) for e in done]

    def join(self, topics: tuple[str, ...] = ("a",)) -> Request:
        self.m.subscribe(topics, self.now)
        find = only(self.poll(), "find")
        self.answer(
            find,
            resp(10, 4, {"coordinators": [{"key": "g", "node_id": 1, "host": "h", "port": 1}]}),
        )
        return only(self.poll(), "heartbeat")

    def stable_with(self, parts: dict[uuid.UUID, list[int]], epoch: int = 5) -> None:
        """Joined and reconciled to `parts` (names already known)."""
        self.m.topic_names.update(NAMES)
        self.answer(self.join(tuple(sorted({NAMES[t] for t in parts}))), hb_answer(epoch, parts))
        self.poll()
        self.run_callbacks()
        self.answer(only(self.poll(), "heartbeat"), hb_answer(epoch, None))
        assert self.m.state is S.STABLE


def test_join_sends_epoch_zero_with_every_field_and_an_empty_owned_list() -> None:
    h = Harness(server_assignor="uniform", rack="r1")
    hb = h.join(("b", "a"))
    assert hb.api_key == 68 and hb.to == "coordinator"
    assert hb.body["member_epoch"] == 0 and hb.body["member_id"] == "m-1"
    assert hb.body["subscribed_topic_names"] == ("a", "b")
    assert hb.body["rebalance_timeout"] == 30_000
    assert hb.body["server_assignor"] == "uniform" and hb.body["rack_id"] == "r1"
    assert hb.body["topic_partitions"] == ()  # a broker rejects null or non-empty on a join
    assert h.m.state is S.JOINING
    assert h.poll(10_000) == []  # one heartbeat in flight at a time


def test_own_member_id_is_a_uuid_by_default() -> None:
    m = ConsumerGroupMember("g")
    assert uuid.UUID(m.member_id)


def test_heartbeats_at_the_interval_the_broker_returns_with_only_changed_fields() -> None:
    h = Harness()
    h.stable_with({A: [0]})
    assert h.poll(499) == []  # the broker said 500 ms
    hb = only(h.poll(1), "heartbeat")
    assert hb.body["member_epoch"] == 5
    assert hb.body["subscribed_topic_names"] is None  # unchanged since the last one
    assert hb.body["topic_partitions"] is None and hb.body["rebalance_timeout"] == -1
    h.answer(hb, hb_answer(5, None))
    h.m.subscribe(["a", "b"], h.now)  # a new subscription goes out at once
    hb = only(h.poll(), "heartbeat")
    assert hb.body["subscribed_topic_names"] == ("a", "b")


def test_an_assignment_is_named_through_metadata_then_acknowledged_after_callbacks() -> None:
    h = Harness()
    h.answer(h.join(), hb_answer(1, {A: [0, 1]}))
    assert h.m.state is S.RECONCILING and h.m.epoch == 1
    ids = only(h.poll(), "ids")
    assert ids.to == "metadata" and ids.body["topics"] == ["a"]
    assert h.events() == []  # no callback with unnamed partitions
    h.answer(ids, NAMES)
    assert h.poll() == []  # callbacks first: no acknowledgement yet
    assert h.run_callbacks() == [("assign", frozenset({("a", 0), ("a", 1)}))]
    assert h.m.state is S.ACKNOWLEDGING
    ack = only(h.poll(), "heartbeat")  # at once, not at the interval
    assert owned_body(ack) == {A: [0, 1]} and ack.body["member_epoch"] == 1
    assert h.m.state is S.STABLE
    assert h.m.assignment == {("a", 0), ("a", 1)}


def test_revocation_commits_then_revokes_then_assigns_and_only_then_acks() -> None:
    h = Harness(enable_auto_commit=True)
    h.stable_with({A: [0, 1]}, epoch=5)
    h.m.set_positions({("a", 0): 42, ("a", 1): 7})
    hb = only(h.poll(500), "heartbeat")
    h.answer(hb, hb_answer(6, {A: [1], B: [0]}))
    commit = only(h.poll(), "commit")  # before anything is revoked
    assert commit.versions == (9, 9)
    assert commit.body["generation_id_or_member_epoch"] == 6
    assert commit.body["member_id"] == "m-1"
    assert h.events() == []
    h.answer(commit, commit_answer({("a", 0): 0, ("a", 1): 0}))
    assert h.poll() == []  # the callbacks have not run: no ack
    assert h.run_callbacks() == [
        ("revoke", frozenset({("a", 0)})),
        ("assign", frozenset({("b", 0)})),
    ]
    ack = only(h.poll(), "heartbeat")
    assert owned_body(ack) == {A: [1], B: [0]}


def test_an_unchanged_assignment_in_a_full_answer_reaches_no_callback() -> None:
    h = Harness()
    h.stable_with({A: [0]})
    h.answer(only(h.poll(500), "heartbeat"), hb_answer(5, {A: [0]}))
    assert h.m.state is S.STABLE and h.events() == []


@pytest.mark.parametrize("code", [110, 25])  # FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID
def test_fenced_loses_the_partitions_then_rejoins_with_epoch_zero(code: int) -> None:
    h = Harness()
    h.stable_with({A: [0, 1]})
    h.answer(only(h.poll(500), "heartbeat"), hb_answer(-1, None, code=code))
    assert h.m.state is S.FENCED and h.m.assignment == frozenset()
    assert h.poll(1_000) == []  # the lost callback runs before the rejoin
    assert h.run_callbacks() == [("lost", frozenset({("a", 0), ("a", 1)}))]
    rejoin = only(h.poll(), "heartbeat")
    assert rejoin.body["member_epoch"] == 0 and rejoin.body["topic_partitions"] == ()
    assert rejoin.body["subscribed_topic_names"] == ("a",)


def test_an_answer_to_a_heartbeat_sent_before_fencing_is_ignored() -> None:
    h = Harness()
    h.stable_with({A: [0]})
    old = only(h.poll(500), "heartbeat")
    h.m.close(h.now)
    h.m.finish_close()
    h.answer(old, hb_answer(9, {A: [0, 1]}))
    assert h.m.state is S.UNSUBSCRIBED and h.m.epoch == 0


@pytest.mark.parametrize("code", [15, 16])  # COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
def test_coordinator_errors_find_the_coordinator_again_and_resend_everything(code: int) -> None:
    h = Harness()
    h.stable_with({A: [0]})
    h.answer(only(h.poll(500), "heartbeat"), hb_answer(-1, None, code=code))
    assert h.m.coordinator is None and h.m.state is S.STABLE
    find = only(h.poll(100), "find")
    h.answer(
        find, resp(10, 4, {"coordinators": [{"key": "g", "node_id": 2, "host": "h2", "port": 2}]})
    )
    hb = only(h.poll(), "heartbeat")
    assert hb.body["member_epoch"] == 5 and owned_body(hb) == {A: [0]}
    assert hb.body["subscribed_topic_names"] == ("a",)


def test_a_lost_connection_resends_every_field() -> None:
    h = Harness()
    h.stable_with({A: [0]})
    h.m.on_failure(only(h.poll(500), "heartbeat"), KafkaConnectionError("x"), h.now)
    only(h.poll(100), "find")
    assert h.m.coordinator is None


@pytest.mark.parametrize(("instance", "epoch"), [(None, -1), ("i-1", -2)])
def test_close_revokes_then_leaves_with_minus_one_or_minus_two(
    instance: str | None, epoch: int
) -> None:
    h = Harness(group_instance_id=instance)
    h.stable_with({A: [0]})
    leave = h.m.close(h.now)
    assert [(e.kind, e.partitions) for e in h.events()] == [("revoke", frozenset({("a", 0)}))]
    assert len(leave) == 1 and leave[0].body["member_epoch"] == epoch
    assert leave[0].body["instance_id"] == instance
    h.m.finish_close()
    assert h.m.state is S.UNSUBSCRIBED and h.poll(10_000) == []


def test_unsubscribing_before_joining_sends_no_leave() -> None:
    h = Harness()
    h.join()
    assert h.m.close(h.now) == []


@pytest.mark.parametrize(
    "code", [112, 81, 42]
)  # UNSUPPORTED_ASSIGNOR, GROUP_MAX_SIZE, INVALID_REQUEST
def test_unrecoverable_answers_are_fatal(code: int) -> None:
    h = Harness()
    h.answer(h.join(), hb_answer(-1, None, code=code))
    assert h.m.state is S.FATAL and h.m.fatal is not None and h.m.fatal.code == code
    assert h.poll(10_000) == []


def test_a_broker_without_the_api_is_fatal() -> None:
    h = Harness()
    h.m.on_failure(h.join(), UnsupportedError("no api 68"), h.now)
    assert h.m.state is S.FATAL


def test_stale_member_epoch_on_a_commit_is_retried_with_the_new_epoch() -> None:
    h = Harness()
    h.stable_with({A: [0]}, epoch=5)
    h.m.commit({("a", 0): 10}, tag=1)
    commit = only(h.poll(), "commit")
    assert commit.body["generation_id_or_member_epoch"] == 5
    h.answer(only(h.poll(500), "heartbeat"), hb_answer(6, None))
    h.answer(commit, commit_answer({("a", 0): 113}))
    retry = only(h.poll(100), "commit")
    assert retry.body["generation_id_or_member_epoch"] == 6
    h.answer(retry, commit_answer({("a", 0): 0}))
    assert [(e.kind, e.error) for e in h.m.events] == [("commit", None)]


def test_a_fenced_epoch_on_a_commit_fails_it() -> None:
    h = Harness()
    h.stable_with({A: [0]})
    h.m.commit({("a", 0): 10}, tag=1)
    h.answer(only(h.poll(), "commit"), commit_answer({("a", 0): 110}))
    (event,) = h.m.events
    assert isinstance(event.error, CommitFailedError) and event.error.code == 110


def test_offset_fetch_names_the_member_and_waits_for_an_epoch() -> None:
    h = Harness()
    hb = h.join()
    h.m.fetch_committed([("a", 0)], tag=7)
    assert h.poll() == []  # joining: no epoch to send yet
    h.m.topic_names.update(NAMES)
    h.answer(hb, hb_answer(3, {A: [0]}))
    fetch = only(h.poll(), "offset_fetch")
    assert fetch.versions == (9, 9)
    (group,) = fetch.body["groups"]
    assert group["member_id"] == "m-1" and group["member_epoch"] == 3
    answer = {
        "group_id": "g",
        "error_code": 0,
        "topics": [
            {
                "name": "a",
                "partitions": [{"partition_index": 0, "committed_offset": 11, "error_code": 0}],
            }
        ],
    }
    h.answer(fetch, resp(9, 9, {"groups": [answer]}))
    committed = [e for e in h.m.events if e.kind == "committed"]
    assert committed[0].offsets == {("a", 0): 11} and committed[0].tag == 7


def test_a_stuck_application_leaves_loses_its_partitions_and_rejoins_on_poll() -> None:
    h = Harness(max_poll_interval_ms=5_000)
    h.stable_with({A: [0]})
    h.now += 5_001
    reqs, _ = h.m.poll(h.now)
    leave = only(reqs, "leave")
    assert leave.body["member_epoch"] == -1
    assert h.m.state is S.STALE
    assert h.run_callbacks() == [("lost", frozenset({("a", 0)}))]
    assert h.poll(1_000) == []
    h.m.app_polled(h.now)
    assert only(h.poll(), "heartbeat").body["member_epoch"] == 0
