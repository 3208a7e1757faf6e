"""The online classic <-> consumer migration through the shard with the fake
clock: a live classic group upgraded by a ConsumerGroupHeartbeat, classic
members joining / syncing / heartbeating / leaving inside a consumer group,
revocation before reassignment across a classic and a consumer member, the
downgrade when the last consumer-protocol member leaves, and every
`group.consumer.migration.policy` value. After each test the harness replays
the log into a fresh shard and compares."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from muster.coordinator import errors as E
from muster.coordinator import events_modern as ce
from muster.coordinator import requests as rq
from muster.coordinator.events import RebalanceStarted
from muster.coordinator.groups.modern.api import ConsumerGroupDescribe, ConsumerGroupHeartbeat
from muster.protocol import consumer_protocol as cp
from muster.records.offsets_topic import GroupMetadataKey, encode_key
from tests.core.harness import Harness
from tests.core.modern.test_heartbeat import T1, TOPICS, G, Member

DELAY = 3000  # the classic group's initial delay, so that its members join as one


@pytest.fixture
def h(make: Callable[..., Harness]) -> Harness:
    return make(group_initial_rebalance_delay_ms=DELAY)


class Classic:
    """A cooperative classic client: reports what it owns in its JoinGroup
    metadata and drops what a SyncGroup no longer gives it."""

    def __init__(self, h: Harness, member_id: str = "", topics: tuple[str, ...] = ("t1",)) -> None:
        self.h, self.member_id, self.topics = h, member_id, topics
        self.generation = -1
        self.owned: set[tuple[str, int]] = set()

    def metadata(self) -> bytes:
        return cp.encode_subscription(
            cp.Subscription(self.topics, None, sorted(self.owned), self.generation)
        )

    def join_request(self, **kw: Any) -> rq.JoinGroup:
        return rq.JoinGroup(
            group_id=G,
            member_id=self.member_id,
            session_timeout_ms=kw.pop("session", 10000),
            rebalance_timeout_ms=kw.pop("rebalance", 30000),
            protocol_type=kw.pop("protocol_type", "consumer"),
            protocols=kw.pop("protocols", (("cooperative-sticky", self.metadata()),)),
            client_id="classic",
            client_host="/10.0.0.2",
            topics=TOPICS,
            **kw,
        )

    def join(self, **kw: Any) -> Any:
        resp = self.h.reply(self.h.send(self.join_request(**kw)))
        if resp.error_code == E.MEMBER_ID_REQUIRED:
            self.member_id = resp.member_id
            resp = self.h.reply(self.h.send(self.join_request(**kw)))
        if resp.error_code == E.NONE:
            self.member_id, self.generation = resp.member_id, resp.generation_id
        return resp

    def sync(self) -> Any:
        req = rq.SyncGroup(
            G, self.generation, self.member_id, (), None, "consumer", "cooperative-sticky"
        )
        resp = self.h.reply(self.h.send(req))
        if resp.error_code == E.NONE:
            got = cp.decode_assignment(resp.assignment).partition_set()
            self.owned &= got  # revoked ones are dropped at once
            self.owned |= got
        return resp

    def beat(self) -> int:
        return int(
            self.h.reply(self.h.send(rq.Heartbeat(G, self.generation, self.member_id))).error_code
        )

    def rebalance(self) -> None:
        """What the client does on REBALANCE_IN_PROGRESS: rejoin and sync."""
        assert self.join().error_code == E.NONE
        assert self.sync().error_code == E.NONE


def classic_group(h: Harness, n: int = 2) -> list[Classic]:
    """n classic members form a classic group over t1 (6 partitions), the
    leader handing out range-like assignments."""
    members = [Classic(h) for _ in range(n)]
    rids = []
    for m in members:
        first = h.reply(h.send(m.join_request(require_known_member_id=True)))
        m.member_id = first.member_id
        rids.append(h.send(m.join_request()))
    while not h.answered(rids[0]):  # the initial delay runs again while members come
        h.advance(DELAY)
    joined = [h.reply(r) for r in rids]
    leader = joined[0].leader
    gen = joined[0].generation_id
    per = 6 // n
    assignment = {
        m.member_id: cp.encode_assignment(
            cp.Assignment({"t1": list(range(i * per, (i + 1) * per))})
        )
        for i, m in enumerate(members)
    }
    srids = [
        h.send(
            rq.SyncGroup(
                G, gen, m.member_id, tuple(assignment.items()) if m.member_id == leader else ()
            )
        )
        for m in members
    ]
    for m, r in zip(members, srids, strict=True):
        resp = h.reply(r)
        assert resp.error_code == E.NONE
        m.generation = gen
        m.owned = cp.decode_assignment(resp.assignment).partition_set()
    assert h.shard.group(G).state.value == "Stable"
    return members


def names(m: Member) -> set[tuple[str, int]]:
    return {("t1", p) for t, p in m.partitions() if t == T1}


def no_double_ownership(classics: list[Classic], consumers: list[Member]) -> set[tuple[str, int]]:
    seen: set[tuple[str, int]] = set()
    for held in [c.owned for c in classics] + [names(m) for m in consumers]:
        assert not (held & seen), f"{held & seen} owned twice"
        seen |= held
    return seen


def settle(h: Harness, classics: list[Classic], consumers: list[Member]) -> None:
    """Every member heartbeats (a classic one rejoins when told) a few rounds;
    no partition is ever owned by two members."""
    for _ in range(4):
        for m in consumers:
            assert m.beat().error_code == E.NONE
            no_double_ownership(classics, consumers)
        for cl in classics:
            if cl.beat() == E.REBALANCE_IN_PROGRESS:
                cl.rebalance()
            no_double_ownership(classics, consumers)


def events(h: Harness, kind: type) -> list[Any]:
    return [e for e in h.events if isinstance(e, kind)]


def test_a_consumer_member_upgrades_a_live_classic_group(h: Harness) -> None:
    a, b = classic_group(h)
    gen = a.generation
    c = Member(h, "c")
    resp = c.beat()
    assert resp.error_code == E.NONE and resp.member_epoch == gen + 1
    assert h.shard.group(G) is None  # no classic group any more
    group = h.shard.store.modern[G]
    assert set(group.members) == {a.member_id, b.member_id, "c"}
    assert group.members[a.member_id].uses_classic and not group.members["c"].uses_classic
    # the classic members keep their assignment, at the classic generation
    assert group.members[a.member_id].member_epoch == gen
    assert {(T1, p) for p in range(3)} == {
        (t, p) for t, ps in group.members[a.member_id].assigned.items() for p in ps
    }
    # Kafka's records: the classic GroupMetadata tombstone, then the group's
    assert (encode_key(GroupMetadataKey(G)), None) in [(k, v) for k, v, _ in h.log]
    converted = events(h, ce.ConsumerGroupConverted)
    assert [(e.to_type, e.epoch, e.member_count) for e in converted] == [("consumer", gen, 2)]
    assert "became a consumer group" in converted[0].sentence()
    # the new member gets nothing another member still holds
    assert c.partitions() == set()
    described = h.reply(h.send(ConsumerGroupDescribe((G,)))).groups[0]
    kinds = {m["member_id"]: m["member_type"] for m in described["members"]}
    assert kinds == {a.member_id: 0, b.member_id: 0, "c": 1}  # Kafka's MemberType


def test_classic_and_consumer_members_reconcile_without_double_ownership(h: Harness) -> None:
    a, b = classic_group(h)
    c = Member(h, "c")
    settle(h, [a, b], [c])
    covered = no_double_ownership([a, b], [c])
    assert covered == {("t1", p) for p in range(6)}
    assert all(len(x) == 2 for x in (a.owned, b.owned, names(c)))
    group = h.shard.store.modern[G]
    assert group.state == "Stable"
    assert a.beat() == b.beat() == E.NONE


def test_revocation_before_reassignment_across_a_classic_and_a_consumer_member(h: Harness) -> None:
    (a,) = classic_group(h, 1)
    c = Member(h, "c")
    c.beat()
    assert a.beat() == E.REBALANCE_IN_PROGRESS
    # the classic member rejoins still owning everything: it must revoke first
    join = a.join()
    assert join.error_code == E.NONE and join.generation_id == a.generation
    assert a.sync().error_code == E.NONE
    assert len(a.owned) == 3  # the three to revoke are gone from its assignment
    c.beat()
    assert c.partitions() == set()  # not before the classic member rejoins without them
    assert a.beat() == E.REBALANCE_IN_PROGRESS
    a.rebalance()
    assert a.generation == h.shard.store.modern[G].epoch
    c.beat()
    assert len(names(c)) == 3 and not (names(c) & a.owned)


def test_a_classic_member_joins_syncs_heartbeats_and_leaves_a_consumer_group(h: Harness) -> None:
    c = Member(h, "c")
    c.beat()
    assert len(c.partitions()) == 6
    k = Classic(h)
    first = h.reply(h.send(k.join_request(require_known_member_id=True)))
    assert first.error_code == E.MEMBER_ID_REQUIRED and first.member_id
    k.member_id = first.member_id
    resp = k.join()
    group = h.shard.store.modern[G]
    assert resp.error_code == E.NONE and resp.generation_id == group.epoch == 2
    assert resp.leader != k.member_id and resp.members == ()  # the server assigns
    assert resp.protocol_name == "cooperative-sticky"
    assert group.members[k.member_id].classic.session_timeout_ms == 10000
    bumps = [e for e in events(h, ce.ConsumerGroupEpochBumped) if e.member_id == k.member_id]
    assert [e.cause for e in bumps] == [ce.CLASSIC_MEMBER_JOINED]
    assert k.sync().error_code == E.NONE and k.owned == set()  # c still holds its share
    assert k.beat() == E.NONE  # waiting for c: nothing to rejoin for yet
    c.beat()
    c.beat()
    assert k.beat() == E.REBALANCE_IN_PROGRESS  # its partitions are free now
    k.rebalance()
    assert len(k.owned) == 3 and not (k.owned & names(c))
    # errors as Kafka sends them
    assert h.reply(h.send(rq.Heartbeat(G, k.generation + 5, k.member_id))).error_code == (
        E.ILLEGAL_GENERATION
    )
    assert h.reply(h.send(rq.Heartbeat(G, 1, "nobody"))).error_code == E.UNKNOWN_MEMBER_ID
    assert h.reply(h.send(rq.Heartbeat(G, c.epoch, "c"))).error_code == E.UNKNOWN_MEMBER_ID
    bad = h.reply(h.send(rq.SyncGroup(G, k.generation + 1, k.member_id)))
    assert bad.error_code == E.ILLEGAL_GENERATION
    # its offsets commit with its generation
    ok = h.reply(h.commit({("t1", 0): 5}, generation=k.generation, member_id=k.member_id))
    assert ok.topics[0].partitions[0].error_code == E.NONE
    stale = h.reply(h.commit({("t1", 0): 6}, generation=k.generation - 1, member_id=k.member_id))
    assert stale.topics[0].partitions[0].error_code == E.ILLEGAL_GENERATION
    # LeaveGroup: the member goes, the epoch moves, c takes everything back
    epoch = group.epoch
    left = h.reply(h.leave(k.member_id))
    assert left.error_code == E.NONE and left.members[0].error_code == E.NONE
    group = h.shard.store.modern[G]
    assert k.member_id not in group.members and group.epoch == epoch + 1
    c.beat()
    assert len(c.partitions()) == 6


def test_classic_join_refused_for_an_unsupported_protocol(h: Harness) -> None:
    Member(h, "c").beat()
    k = Classic(h)
    assert k.join(protocol_type="connect").error_code == E.INCONSISTENT_GROUP_PROTOCOL
    k2 = Classic(h)
    assert k2.join().error_code == E.NONE
    # every classic member must support the protocol a new one names
    k3 = Classic(h)
    odd = (("roundrobin", k3.metadata()),)
    assert k3.join(protocols=odd).error_code == E.INCONSISTENT_GROUP_PROTOCOL


def test_a_classic_member_is_fenced_after_its_own_session_timeout(h: Harness) -> None:
    c = Member(h, "c")
    c.beat()
    k = Classic(h)
    assert k.join(session=7000).error_code == E.NONE and k.sync().error_code == E.NONE
    h.advance(6000)
    c.beat()
    assert k.member_id in h.shard.store.modern[G].members
    h.advance(1500)
    assert k.member_id not in h.shard.store.modern[G].members
    assert k.beat() == E.UNKNOWN_MEMBER_ID


def test_a_classic_member_that_never_rejoins_is_fenced_after_its_rebalance_timeout(
    h: Harness,
) -> None:
    (a,) = classic_group(h, 1)
    c = Member(h, "c")
    c.beat()
    for _ in range(4):  # heartbeats alone do not push the join deadline back
        assert a.beat() == E.REBALANCE_IN_PROGRESS
        c.beat()
        h.advance(9000)
    assert a.member_id not in h.shard.store.modern[G].members
    removed = events(h, ce.ConsumerMemberRemoved)
    assert [e.cause for e in removed] == [ce.CLASSIC_JOIN_TIMEOUT]


def test_the_last_consumer_member_leaving_downgrades_the_group(h: Harness) -> None:
    a, b = classic_group(h)
    c = Member(h, "c")
    settle(h, [a, b], [c])
    epoch = h.shard.store.modern[G].epoch
    assert a.generation == b.generation == epoch
    resp = c.beat(epoch=-1, names=None, owned=None, rebalance_timeout_ms=-1)
    assert resp.error_code == E.NONE
    assert G not in h.shard.store.modern
    classic = h.shard.group(G)
    assert classic is not None and set(classic.members) == {a.member_id, b.member_id}
    assert classic.state.value == "PreparingRebalance" and classic.generation == epoch
    assert classic.protocol_type == "consumer" and classic.protocol_name == "cooperative-sticky"
    assert h.shard.persisted(G) is not None  # the classic group's record is written
    converted = events(h, ce.ConsumerGroupConverted)
    assert [(e.to_type, e.member_id) for e in converted][-1] == ("classic", "c")
    started = events(h, RebalanceStarted)[-1]
    assert started.cause == ce.GROUP_DOWNGRADED
    # the classic members rebalance as a classic group
    assert a.beat() == E.REBALANCE_IN_PROGRESS
    rids = [h.send(cl.join_request()) for cl in (a, b)]
    joined = [h.reply(r) for r in rids]
    assert all(j.error_code == E.NONE for j in joined)
    gen = joined[0].generation_id
    assert gen == epoch + 1
    leader = next(j for j in joined if j.leader == j.member_id)
    assert len(leader.members) == 2  # a classic leader assigns again
    plan = {m.member_id: cp.encode_assignment(cp.Assignment({"t1": [0, 1, 2]})) for m in (a,)}
    plan[b.member_id] = cp.encode_assignment(cp.Assignment({"t1": [3, 4, 5]}))
    for cl in (a, b):
        cl.generation = gen
    srids = [
        h.send(
            rq.SyncGroup(
                G,
                gen,
                cl.member_id,
                tuple(plan.items()) if cl.member_id == leader.member_id else (),
            )
        )
        for cl in (a, b)
    ]
    assert all(h.reply(r).error_code == E.NONE for r in srids)
    assert h.shard.group(G).state.value == "Stable"
    assert a.beat() == b.beat() == E.NONE


@pytest.mark.parametrize("policy", ["downgrade", "disabled"])
def test_policies_without_upgrade_refuse_a_consumer_member_on_a_live_classic_group(
    make: Callable[..., Harness], policy: str
) -> None:
    h = make(consumer_migration_policy=policy, group_initial_rebalance_delay_ms=DELAY)
    classic_group(h)
    resp = Member(h, "c").beat()
    assert resp.error_code == E.GROUP_ID_NOT_FOUND
    assert G not in h.shard.store.modern and h.shard.group(G).state.value == "Stable"


@pytest.mark.parametrize("policy", ["upgrade", "disabled"])
def test_policies_without_downgrade_keep_the_consumer_group(
    make: Callable[..., Harness], policy: str
) -> None:
    h = make(consumer_migration_policy="bidirectional" if policy == "upgrade" else policy)
    c = Member(h, "c")
    c.beat()
    k = Classic(h)
    assert k.join().error_code == E.NONE
    h.shard.cfg = h.shard.store.cfg = h.cfg = type(h.cfg)(
        **{**h.cfg.__dict__, "consumer_migration_policy": policy}
    )
    c.beat(epoch=-1, names=None, owned=None, rebalance_timeout_ms=-1)
    group = h.shard.store.modern[G]
    assert set(group.members) == {k.member_id} and h.shard.group(G) is None


def test_upgrade_refused_for_a_non_consumer_protocol_or_a_full_group(
    make: Callable[..., Harness],
) -> None:
    h = make()
    h.form(1, protocol_type="connect", protocols=(("default", b"x"),))
    assert Member(h, "c").beat().error_code == E.GROUP_ID_NOT_FOUND
    full = make(consumer_max_size=2, group_initial_rebalance_delay_ms=DELAY)
    classic_group(full)
    assert Member(full, "c").beat().error_code == E.GROUP_MAX_SIZE_REACHED
    assert full.shard.group(G).state.value == "Stable"


def test_migration_policy_is_a_broker_property() -> None:
    from muster.coordinator.context import CoordinatorConfig

    assert CoordinatorConfig.from_mapping({}).consumer_migration_policy == "bidirectional"
    cfg = CoordinatorConfig.from_mapping({"group.consumer.migration.policy": "Upgrade"})
    assert cfg.upgrade_enabled and not cfg.downgrade_enabled
    cfg = CoordinatorConfig.from_mapping({"group.consumer.migration.policy": "nonsense"})
    assert cfg.consumer_migration_policy == "disabled"


def test_a_failed_upgrade_append_leaves_the_classic_group_as_it_was(h: Harness) -> None:
    a, b = classic_group(h)
    gen = a.generation
    h.auto_durable = False
    rid = h.send(
        ConsumerGroupHeartbeat(
            G,
            "c",
            0,
            rebalance_timeout_ms=30000,
            subscribed_topic_names=("t1",),
            owned=(),
            topics=TOPICS,
        )
    )
    h.flush(E.NOT_ENOUGH_REPLICAS)
    h.auto_durable = True
    assert h.reply(rid).error_code != E.NONE
    assert G not in h.shard.store.modern
    classic = h.shard.group(G)
    assert classic is not None and classic.state.value == "Stable" and classic.generation == gen
    assert set(classic.members) == {a.member_id, b.member_id}
    assert a.beat() == b.beat() == E.NONE
    h.advance(9000)  # their sessions are kept by heartbeats again, not lost
    assert a.beat() == b.beat() == E.NONE
    h.advance(11000)  # and expire without them
    assert h.shard.group(G).members == {}


def test_a_static_classic_member_replaced_by_its_new_incarnation_keeps_its_target(
    h: Harness,
) -> None:
    c = Member(h, "c")
    c.beat()
    k = Classic(h)
    assert k.join(group_instance_id="i1").error_code == E.NONE
    settle(h, [k], [c])
    owned = set(k.owned)
    assert len(owned) == 3
    again = Classic(h)  # restarted: no member id, same instance id
    resp = again.join(group_instance_id="i1")
    assert resp.error_code == E.NONE and resp.member_id != k.member_id
    group = h.shard.store.modern[G]
    assert k.member_id not in group.members
    target = group.targets[resp.member_id]
    assert {("t1", p) for ps in target.values() for p in ps} == owned
    # the old incarnation is fenced
    assert h.reply(h.send(rq.Heartbeat(G, k.generation, k.member_id, "i1"))).error_code == (
        E.FENCED_INSTANCE_ID
    )


def test_a_failed_downgrade_append_keeps_the_consumer_group(h: Harness) -> None:
    c = Member(h, "c")
    c.beat()
    k = Classic(h)
    assert k.join().error_code == E.NONE and k.sync().error_code == E.NONE
    h.auto_durable = False
    rid = h.send(ConsumerGroupHeartbeat(G, "c", -1, topics=TOPICS))
    assert h.shard.group(G) is not None  # downgraded at write time
    h.flush(E.NOT_ENOUGH_REPLICAS)
    h.auto_durable = True
    assert h.reply(rid).error_code != E.NONE
    group = h.shard.store.modern[G]
    assert set(group.members) == {"c", k.member_id} and h.shard.group(G) is None
    assert not [t for t in h.group_timers if t.startswith(("heartbeat-", "join-"))]
    assert k.beat() in (E.NONE, E.REBALANCE_IN_PROGRESS)
    assert c.beat().error_code == E.NONE


def test_a_downgrade_then_an_upgrade_before_a_classic_member_revoked_gives_nothing_away(
    h: Harness,
) -> None:
    """Found by the simulation: the downgraded classic group records what each
    member holds (not its target), so an upgrade right after it does not see
    the partitions a classic member has yet to revoke as free."""
    (a,) = classic_group(h, 1)
    c = Member(h, "c")
    c.beat()
    assert a.beat() == E.REBALANCE_IN_PROGRESS  # a still owns all six
    c.beat(epoch=-1, names=None, owned=None, rebalance_timeout_ms=-1)  # downgrade
    held = cp.decode_assignment(h.shard.group(G).members[a.member_id].assignment)
    assert held.partition_set() == {("t1", p) for p in range(6)}
    again = Member(h, "c2")
    assert again.beat().error_code == E.NONE  # upgrade again
    again.beat()
    assert again.partitions() == set()  # a has given nothing up yet
    no_double_ownership([a], [again])


def test_an_upgrade_during_a_classic_rebalance_answers_the_parked_join(h: Harness) -> None:
    a, b = classic_group(h)
    parked = h.send(a.join_request())  # a rejoins: the group prepares a rebalance
    assert not h.answered(parked) and h.shard.group(G).state.value == "PreparingRebalance"
    assert Member(h, "c").beat().error_code == E.NONE
    assert h.reply(parked).error_code == E.REBALANCE_IN_PROGRESS
    assert h.shard.group(G) is None
    assert not [t for t in h.group_timers if t.startswith(("heartbeat-", "join-"))]
    assert set(h.shard.store.modern[G].members) == {a.member_id, b.member_id, "c"}


def _consumer_heartbeat(h: Harness, member_id: str, epoch: int) -> int:
    return h.send(
        ConsumerGroupHeartbeat(
            G,
            member_id,
            epoch,
            rebalance_timeout_ms=30000,
            subscribed_topic_names=("t1",) if epoch == 0 else None,
            owned=() if epoch == 0 else None,
            topics=TOPICS,
        )
    )


def pending_timers(h: Harness) -> list[str]:
    return [t for t in h.group_timers if t.startswith("pending-")]


def test_a_failed_upgrade_leaves_no_timer_of_a_classic_group_made_after_it(h: Harness) -> None:
    # found by the simulation (seed 3501): the upgrade's append fails after
    # the consumer group emptied and a new classic member asked for its id;
    # the old classic group comes back and the new one's pending timer must go
    (a,) = classic_group(h, 1)
    h.auto_durable = False
    _consumer_heartbeat(h, "c", 0)  # upgrades, its append in flight
    h.send(rq.LeaveGroup(G, (rq.LeavingMember(a.member_id),)))
    _consumer_heartbeat(h, "c", -1)  # the consumer group is empty now
    k = Classic(h)
    h.send(k.join_request(require_known_member_id=True))
    (pending,) = h.shard.group(G).pending_members  # a new classic group
    assert pending_timers(h)
    h.flush(E.NOT_ENOUGH_REPLICAS)
    h.auto_durable = True
    classic = h.shard.group(G)
    assert classic is not None and set(classic.members) == {a.member_id}
    assert pending not in classic.pending_members
    assert pending_timers(h) == []


def test_a_failed_tombstone_of_an_empty_consumer_group_drops_the_pending_classic_member(
    h: Harness,
) -> None:
    # found by the simulation (seeds 6238, 6778, 8595): a classic member asked
    # for its id on an empty consumer group whose tombstones then failed; a
    # classic group of pending members stayed beside the consumer group, its
    # pending timer outliving it
    c = Member(h, "c")
    c.beat()
    assert c.beat(-1).error_code == E.NONE
    assert h.shard.store.modern[G].members == {}
    h.auto_durable = False
    k = Classic(h)
    rid = h.send(k.join_request(require_known_member_id=True))
    assert pending_timers(h)
    h.flush(E.NOT_ENOUGH_REPLICAS)
    k.member_id = h.reply(rid).member_id
    h.auto_durable = True
    assert G in h.shard.store.modern
    assert h.shard.group(G) is None
    assert pending_timers(h) == []
    # its pending id went with the reverted group (as in Kafka, whose revert
    # drops the group): the client starts over and joins
    assert k.join().error_code == E.UNKNOWN_MEMBER_ID
    k.member_id = ""
    again = h.reply(h.send(k.join_request(require_known_member_id=True)))
    assert again.error_code == E.MEMBER_ID_REQUIRED
    k.member_id = again.member_id
    rid = h.send(k.join_request())
    h.advance(DELAY)  # the classic group's initial delay
    assert h.reply(rid).error_code == E.NONE
    assert h.shard.group(G) is not None and G not in h.shard.store.modern
    assert h.shard.group(G) is not None and G not in h.shard.store.modern
