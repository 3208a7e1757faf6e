"""The online downgrade Kafka does when a classic static member replaces the
last consumer-protocol static member (same group.instance.id; Kafka's
validateOnlineDowngradeWithReplacedMemberId in classicGroupJoinToConsumerGroup).
After each test the harness replays the log into a fresh shard and compares."""

from __future__ import annotations

from collections.abc import Callable

from muster.coordinator import errors as E
from muster.coordinator import events_modern as ce
from muster.coordinator import requests as rq
from muster.coordinator.events import RebalanceStarted
from muster.protocol import consumer_protocol as cp
from tests.core.harness import Harness
from tests.core.modern.test_heartbeat import G, Member
from tests.core.modern.test_migration import (
    DELAY,
    Classic,
    classic_group,
    events,
    names,
    no_double_ownership,
    settle,
)


def _mixed(h: Harness) -> tuple[list[Classic], Member]:
    """Two classic members and a consumer-protocol static member (i1), settled."""
    classics = classic_group(h)
    s = Member(h, "s", instance_id="i1")
    assert s.beat().error_code == E.NONE  # upgrades the group
    settle(h, classics, [s])
    assert len(names(s)) == 2
    return classics, s


def _replace(h: Harness) -> tuple[Classic, object]:
    """A classic client comes back under instance id i1 with no member id."""
    k = Classic(h)
    resp = h.reply(h.send(k.join_request(group_instance_id="i1")))
    if resp.error_code == E.NONE:
        k.member_id, k.generation = resp.member_id, resp.generation_id
    return k, resp


def test_a_classic_static_member_replacing_the_last_consumer_one_downgrades(
    make: Callable[..., Harness],
) -> None:
    h = make(group_initial_rebalance_delay_ms=DELAY)
    (a, b), s = _mixed(h)
    epoch = h.shard.store.modern[G].epoch
    rebalances = len(events(h, RebalanceStarted))
    k, resp = _replace(h)
    assert resp.error_code == E.NONE and resp.generation_id == epoch
    # a classic group now, Stable at the group epoch, with the replacement in it
    assert G not in h.shard.store.modern
    classic = h.shard.group(G)
    assert classic is not None and classic.state.value == "Stable"
    assert classic.generation == epoch
    assert set(classic.members) == {a.member_id, b.member_id, k.member_id}
    assert classic.members[k.member_id].group_instance_id == "i1"
    converted = events(h, ce.ConsumerGroupConverted)[-1]
    assert (converted.to_type, converted.cause, converted.member_id) == (
        "classic",
        ce.GROUP_DOWNGRADED_STATIC,
        "s",
    )
    # everyone held its target: no rebalance, as Kafka
    assert len(events(h, RebalanceStarted)) == rebalances
    # the replacement syncs and gets what the replaced member had
    sync = h.reply(h.send(rq.SyncGroup(G, k.generation, k.member_id, (), "i1")))
    assert sync.error_code == E.NONE
    got = cp.decode_assignment(sync.assignment).partition_set()
    assert got == names(s)
    k.owned = got
    assert a.beat() == b.beat() == E.NONE  # the classic members go on untouched
    assert no_double_ownership([a, b, k], []) == {("t1", p) for p in range(6)}


def test_no_static_downgrade_while_another_consumer_member_remains(
    make: Callable[..., Harness],
) -> None:
    h = make(group_initial_rebalance_delay_ms=DELAY)
    _mixed(h)
    other = Member(h, "d")
    assert other.beat().error_code == E.NONE
    _k, resp = _replace(h)
    assert resp.error_code == E.NONE
    assert G in h.shard.store.modern and h.shard.group(G) is None


def test_no_static_downgrade_when_the_policy_allows_only_upgrades(
    make: Callable[..., Harness],
) -> None:
    h = make(consumer_migration_policy="upgrade", group_initial_rebalance_delay_ms=DELAY)
    _mixed(h)
    _k, resp = _replace(h)
    assert resp.error_code == E.NONE
    assert G in h.shard.store.modern and h.shard.group(G) is None


def test_a_static_downgrade_while_partitions_move_rebalances(
    make: Callable[..., Harness],
) -> None:
    h = make(group_initial_rebalance_delay_ms=DELAY)
    _mixed(h)
    c = Classic(h)
    c.member_id = h.reply(h.send(c.join_request(require_known_member_id=True))).member_id
    assert c.join().error_code == E.NONE  # a new target: a, b and s must give some up
    _k, resp = _replace(h)
    assert resp.error_code == E.NONE
    classic = h.shard.group(G)
    assert classic is not None and G not in h.shard.store.modern
    started = events(h, RebalanceStarted)[-1]
    assert started.cause == ce.GROUP_DOWNGRADED_STATIC
    assert classic.state.value == "PreparingRebalance"
    # the classic group's assignments never give a partition to two members
    held = [
        cp.decode_assignment(m.assignment).partition_set() for m in classic.members.values()
    ]
    seen: set[tuple[str, int]] = set()
    for parts in held:
        assert not (parts & seen)
        seen |= parts
