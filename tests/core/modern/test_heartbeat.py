"""ConsumerGroupHeartbeat through the shard with the fake clock: joins,
reconciliation with revocation, leaves, fencing, static members, metadata
changes, timers, offsets with member epochs. After every test the harness
replays the log into a fresh shard and compares (consumer groups included)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from muster.coordinator import errors as E
from muster.coordinator import requests as rq
from muster.coordinator.groups.modern.api import (
    ConsumerGroupDescribe,
    ConsumerGroupHeartbeat,
)
from muster.coordinator.groups.modern.target import SubscribedTopic
from tests.core.harness import Harness

T1 = uuid.UUID(int=1)
T2 = uuid.UUID(int=2)
TOPICS = {"t1": SubscribedTopic(T1, 6), "t2": SubscribedTopic(T2, 3)}
G = "g"


class Member:
    """A well-behaved consumer: owns what the broker last gave it, drops
    revoked partitions at once."""

    def __init__(
        self,
        h: Harness,
        member_id: str,
        topics: tuple[str, ...] = ("t1",),
        instance_id: str | None = None,
        image: dict[str, SubscribedTopic] | None = None,
    ) -> None:
        self.h, self.member_id, self.topics, self.instance_id = h, member_id, topics, instance_id
        self.image = TOPICS if image is None else image
        self.epoch = 0
        self.owned: dict[uuid.UUID, tuple[int, ...]] = {}

    def beat(self, epoch: int | None = None, **kw: Any) -> Any:
        epoch = self.epoch if epoch is None else epoch
        joining = epoch == 0
        req = ConsumerGroupHeartbeat(
            G,
            self.member_id,
            epoch,
            instance_id=self.instance_id,
            rebalance_timeout_ms=kw.pop("rebalance_timeout_ms", 30000 if joining else -1),
            subscribed_topic_names=kw.pop("names", self.topics if joining else None),
            owned=kw.pop("owned", () if joining else tuple(sorted(self.owned.items()))),
            topics=kw.pop("image", self.image),
            **kw,
        )
        resp = self.h.reply(self.h.send(req))
        if resp.error_code == E.NONE:
            self.epoch = resp.member_epoch
            if resp.assignment is not None:
                self.owned = {t: ps for t, ps in resp.assignment}
        return resp

    def partitions(self) -> set[tuple[uuid.UUID, int]]:
        return {(t, p) for t, ps in self.owned.items() for p in ps}


def settle(members: list[Member], rounds: int = 6) -> None:
    for _ in range(rounds):
        for m in members:
            assert m.beat().error_code == E.NONE


def group(h: Harness) -> Any:
    return h.shard.store.modern[G]


def test_three_members_form_and_cover_every_partition_exactly_once(h: Harness) -> None:
    ms = [Member(h, f"m{i}", ("t1", "t2")) for i in range(3)]
    first = ms[0].beat()
    assert first.member_epoch == 1 and first.heartbeat_interval_ms == 5000
    settle(ms)
    owned = [m.partitions() for m in ms]
    assert all(len(o) == 3 for o in owned)
    union = set().union(*owned)
    assert len(union) == 9 and sum(map(len, owned)) == 9
    assert group(h).state == "Stable"
    assert {m.epoch for m in ms} == {group(h).epoch} == {3}


def test_a_partition_moves_only_after_its_owner_revoked_it(h: Harness) -> None:
    a, b = Member(h, "a"), Member(h, "b")
    a.beat()
    assert len(a.partitions()) == 6
    b.beat()  # joins: epoch 2, but every partition is still a's
    assert b.partitions() == set()
    # a is told to give up three; until it does, b gets none of them
    resp = a.beat(owned=tuple(sorted(a.owned.items())))
    assert resp.member_epoch == 1 and len(a.partitions()) == 3
    pending = group(h).members["a"].pending_revocation
    assert sum(len(p) for p in pending.values()) == 3
    assert b.beat().error_code == 0 and b.partitions() == set()
    # a's next heartbeat reports them gone: it moves to epoch 2; b gets them
    assert a.beat().member_epoch == 2
    b.beat()
    assert len(b.partitions()) == 3 and not (a.partitions() & b.partitions())


def test_leave_moves_the_partitions_to_the_rest(h: Harness) -> None:
    ms = [Member(h, f"m{i}") for i in range(3)]
    settle(ms)
    resp = ms[2].beat(epoch=-1, names=None, owned=None, rebalance_timeout_ms=-1)
    assert (resp.error_code, resp.member_epoch) == (0, -1)
    settle(ms[:2])
    assert len(ms[0].partitions() | ms[1].partitions()) == 6
    assert "m2" not in group(h).members


def test_fencing_errors_as_kafka_sends_them(make: Callable[..., Harness]) -> None:
    h = make(consumer_max_size=2)
    a, b = Member(h, "a"), Member(h, "b")
    settle([a, b])
    assert a.beat(epoch=a.epoch + 1).error_code == E.FENCED_MEMBER_EPOCH
    assert Member(h, "c").beat().error_code == E.GROUP_MAX_SIZE_REACHED
    roomy = make()
    settle([Member(roomy, "a")])
    assert Member(roomy, "ghost").beat(epoch=3).error_code == E.UNKNOWN_MEMBER_ID
    assert a.beat(server_assignor="sticky").error_code == E.UNSUPPORTED_ASSIGNOR
    bad = Member(h, "d").beat(rebalance_timeout_ms=-1)
    assert bad.error_code == E.INVALID_REQUEST
    assert Member(h, "").beat().error_code == E.INVALID_REQUEST  # v1: the client picks ids
    assert Member(h, "e").beat(epoch=-3).error_code == E.INVALID_REQUEST
    assert Member(h, "x").beat(names=None, subscribed_topic_regex="(").error_code == (
        E.INVALID_REGULAR_EXPRESSION
    )


def test_a_fenced_member_rejoins_under_its_id_with_epoch_zero(h: Harness) -> None:
    a = Member(h, "a")
    settle([a])
    a.owned = {}
    resp = a.beat(epoch=0)
    assert resp.error_code == 0 and len(a.partitions()) == 6


def test_static_member_leaves_and_its_replacement_keeps_the_partitions(h: Harness) -> None:
    a, s = Member(h, "a"), Member(h, "s1", instance_id="i")
    settle([a, s])
    kept = s.partitions()
    assert kept
    resp = s.beat(epoch=-2, names=None, owned=None, rebalance_timeout_ms=-1)
    assert resp.member_epoch == -2
    epoch = group(h).epoch
    s2 = Member(h, "s2", instance_id="i")
    assert s2.beat().error_code == E.NONE
    assert group(h).epoch == epoch  # no rebalance
    assert s2.partitions() == kept
    assert "s1" not in group(h).members
    # a live static member's instance id cannot be taken
    assert Member(h, "s3", instance_id="i").beat().error_code == E.UNRELEASED_INSTANCE_ID


def test_new_partitions_get_a_new_target_without_any_rejoin(h: Harness) -> None:
    a, b = Member(h, "a"), Member(h, "b")
    settle([a, b])
    grown = {**TOPICS, "t1": SubscribedTopic(T1, 10)}
    a.image = b.image = grown
    settle([a, b])
    assert len(a.partitions() | b.partitions()) == 10
    gone = {"t2": TOPICS["t2"]}  # t1 deleted
    a.image = b.image = gone
    settle([a, b])
    assert a.partitions() == b.partitions() == set()


def test_session_timeout_fences_a_silent_member(h: Harness) -> None:
    a, b = Member(h, "a"), Member(h, "b")
    settle([a, b])
    for _ in range(10):  # a keeps heartbeating, b is silent
        h.advance(5000)
        a.beat()
    assert "b" not in group(h).members
    assert len(a.partitions()) == 6
    causes = [getattr(e, "cause", "") for e in h.events]
    assert "consumer_session_expired" in causes


def test_revocation_timeout_fences_a_member_that_keeps_its_partitions(h: Harness) -> None:
    a, b = Member(h, "a"), Member(h, "b")
    a.beat()
    b.beat()
    a.beat()  # told to revoke; it never reports them gone
    h.advance(30001)
    assert "a" not in group(h).members


def test_offsets_check_member_epochs(h: Harness) -> None:
    a = Member(h, "a")
    settle([a])
    topic = (rq.CommitTopic("t1", (rq.CommitPartition(0, 42),)),)
    stale = h.reply(h.send(rq.OffsetCommit(G, topic, a.epoch - 1, "a")))
    assert stale.topics[0].partitions[0].error_code == E.STALE_MEMBER_EPOCH
    unknown = h.reply(h.send(rq.OffsetCommit(G, topic, a.epoch, "zz")))
    assert unknown.topics[0].partitions[0].error_code == E.UNKNOWN_MEMBER_ID
    old = h.reply(h.send(rq.OffsetCommit(G, topic, a.epoch, "a", api_version=8)))
    assert old.topics[0].partitions[0].error_code == E.UNSUPPORTED_VERSION
    ok = h.reply(h.send(rq.OffsetCommit(G, topic, a.epoch, "a")))
    assert ok.topics[0].partitions[0].error_code == E.NONE
    fetch = rq.FetchGroup(G, (rq.FetchTopic("t1", (0,)),), "a", a.epoch - 1)
    got = h.reply(h.send(rq.OffsetFetch((fetch,))))
    assert got.groups[0].error_code == E.STALE_MEMBER_EPOCH
    got = h.reply(h.send(rq.OffsetFetch((rq.FetchGroup(G, None),))))
    assert got.groups[0].topics[0].partitions[0].committed_offset == 42


def test_list_and_describe_show_the_consumer_group(h: Harness) -> None:
    ms = [Member(h, "a"), Member(h, "b")]
    settle(ms)
    listed = h.reply(h.send(rq.ListGroups(types_filter=("consumer",)))).groups
    assert [(g.group_id, g.group_type, g.group_state) for g in listed] == [
        (G, "consumer", "Stable")
    ]
    assert h.reply(h.send(rq.ListGroups(types_filter=("classic",)))).groups == ()
    d = h.reply(h.send(ConsumerGroupDescribe((G, "nope")))).groups
    assert d[0]["group_epoch"] == 2 and d[0]["assignor_name"] == "uniform"
    assert {m["member_id"] for m in d[0]["members"]} == {"a", "b"}
    assert d[0]["members"][0]["assignment"]["topic_partitions"][0]["topic_name"] == "t1"
    assert d[1]["error_code"] == E.GROUP_ID_NOT_FOUND and d[1]["group_state"] == ""
    classic = h.reply(h.send(rq.DescribeGroups((G,)))).groups[0]
    assert classic.group_state == "Dead"


def test_a_failed_append_reverts_the_group(h: Harness) -> None:
    a = Member(h, "a")
    settle([a])
    before = group(h).copy()
    h.auto_durable = False
    rid = h.send(
        ConsumerGroupHeartbeat(
            G,
            "b",
            0,
            rebalance_timeout_ms=1000,
            subscribed_topic_names=("t1",),
            owned=(),
            topics=TOPICS,
        )
    )
    assert "b" in group(h).members  # applied at write time
    h.flush(error=E.KAFKA_STORAGE_ERROR)
    h.auto_durable = True
    assert h.reply(rid).error_code != E.NONE
    assert group(h) == before


@pytest.mark.parametrize("assignor", ["uniform", "range"])
def test_replay_after_restart_keeps_every_assignment(
    make: Callable[..., Harness], assignor: str
) -> None:
    h = make()
    ms = [Member(h, f"m{i}", ("t1", "t2")) for i in range(3)]
    for m in ms:
        m.beat(server_assignor=assignor)
    settle(ms)
    fresh = h.replayed()
    live = h.shard.store.modern[G]
    assert fresh.store.modern[G] == live
    assert fresh.store.modern[G].members["m0"].assigned == live.members["m0"].assigned


def test_delete_groups_and_offset_delete_follow_kafkas_rules(h: Harness) -> None:
    a = Member(h, "a")
    settle([a])
    commit = (
        rq.CommitTopic("t1", (rq.CommitPartition(0, 5),)),
        rq.CommitTopic("other", (rq.CommitPartition(0, 7),)),
    )
    assert (
        h.reply(h.send(rq.OffsetCommit(G, commit, a.epoch, "a"))).topics[0].partitions[0].error_code
        == 0
    )
    deleted = h.reply(h.send(rq.DeleteGroups((G,)))).results[0]
    assert deleted.error_code == E.NON_EMPTY_GROUP
    resp = h.reply(
        h.send(
            rq.OffsetDelete(
                G, (rq.OffsetDeleteTopic("t1", (0,)), rq.OffsetDeleteTopic("other", (0,)))
            )
        )
    )
    assert [t.partitions[0].error_code for t in resp.topics] == [E.GROUP_SUBSCRIBED_TO_TOPIC, 0]
    join = rq.JoinGroup(G, "", 10000, 10000, "consumer", (("range", b""),))
    assert h.reply(h.send(join)).error_code == E.INCONSISTENT_GROUP_PROTOCOL
    a.beat(epoch=-1, names=None, owned=None, rebalance_timeout_ms=-1)
    assert h.reply(h.send(rq.DeleteGroups((G,)))).results[0].error_code == E.NONE
    assert G not in h.shard.store.modern
    fetched = h.reply(h.send(rq.OffsetFetch((rq.FetchGroup(G, None),)))).groups[0]
    assert fetched.topics == ()


def test_an_empty_consumer_group_turns_classic_when_a_classic_member_joins(h: Harness) -> None:
    a = Member(h, "a")
    settle([a])
    topic = (rq.CommitTopic("t1", (rq.CommitPartition(0, 9),)),)
    h.reply(h.send(rq.OffsetCommit(G, topic, a.epoch, "a")))
    a.beat(epoch=-1, names=None, owned=None, rebalance_timeout_ms=-1)
    join = rq.JoinGroup(G, "", 10000, 10000, "consumer", (("range", b""),))
    assert h.reply(h.send(join)).error_code == E.NONE
    assert G not in h.shard.store.modern and h.shard.group(G) is not None
    got = h.reply(h.send(rq.OffsetFetch((rq.FetchGroup(G, None),)))).groups[0]
    assert got.topics[0].partitions[0].committed_offset == 9  # offsets stay


def test_explain_tells_each_step_of_a_consumer_group(h: Harness) -> None:
    from muster.coordinator.events import from_json
    from muster.explain import explain

    a, b = Member(h, "a"), Member(h, "b")
    a.beat()
    b.beat()
    a.beat()  # told to give three partitions up
    events = [from_json(e.to_json()) for e in h.events]  # as stored in the events topic
    text = "\n".join(line for block in explain(events) for line in block).lower()  # type: ignore[arg-type]
    assert "the group epoch moved to 2: a member joined the consumer group (member b)" in text
    assert "member a must give up 3 partition(s) before it moves past epoch 1" in text
    assert "the uniform assignor computed the target of epoch 2 for 2 member(s)" in text


def test_regex_topics_come_on_a_later_heartbeat_and_new_topics_are_picked_up(
    h: Harness,
) -> None:
    a = Member(h, "a", topics=("t2",))
    first = a.beat(names=("t2",), subscribed_topic_regex="t[0-9]")
    # the literal topic now; the regex is resolved after this heartbeat's target
    assert {t for t, _ in first.assignment} == {T2}
    assert group(h).regexes["t[0-9]"][0] == {"t1", "t2"}
    a.beat()
    a.beat()
    assert {t for t, _ in a.partitions()} == {T1, T2}
    t3 = uuid.UUID(int=3)
    a.image = {**TOPICS, "t3": SubscribedTopic(t3, 2), "__consumer_offsets": SubscribedTopic(T1, 5)}
    a.beat()
    assert "t3" not in group(h).regexes["t[0-9]"][0]  # resolved less than 10 s ago
    h.advance(10_000)
    for _ in range(3):
        a.beat()
    assert {t for t, _ in a.partitions()} == {T1, T2, t3}
    # unsubscribing from the regex drops its resolution
    a.beat(names=("t2",), subscribed_topic_regex="")
    assert group(h).regexes == {}


def test_a_regex_matches_internal_topics_as_kafka_does(h: Harness) -> None:
    # Kafka 4.4 assigns __consumer_offsets to a broker-side `^__.*` subscriber
    # (asked of it with confluent-kafka, group.protocol=consumer)
    a = Member(h, "a", topics=())
    a.image = {**TOPICS, "__consumer_offsets": SubscribedTopic(uuid.UUID(int=9), 5)}
    a.beat(names=(), subscribed_topic_regex="__.*")
    assert group(h).regexes["__.*"][0] == {"__consumer_offsets"}


def test_consumer_group_offsets_expire_only_for_topics_no_member_subscribes_to(
    make: Callable[..., Harness],
) -> None:
    h = make(offsets_retention_ms=60_000, offsets_retention_check_interval_ms=1_000)
    a = Member(h, "a")
    settle([a])
    commit = (
        rq.CommitTopic("t1", (rq.CommitPartition(0, 5),)),
        rq.CommitTopic("old", (rq.CommitPartition(0, 7),)),
    )
    h.reply(h.send(rq.OffsetCommit(G, commit, a.epoch, "a")))
    for _ in range(13):  # a heartbeats on while a minute passes
        h.advance(5_000)
        a.beat()
    got = h.reply(h.send(rq.OffsetFetch((rq.FetchGroup(G, None),)))).groups[0]
    assert [t.name for t in got.topics] == ["t1"]
