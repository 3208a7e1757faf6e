"""A request answered with an error changes nothing: no record reaches the
log and the group is as it was, even when the error is found after some
records were written (Kafka's handler throws before its records are
committed). After each test the harness replays the log into a fresh shard
and compares."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from muster.coordinator import errors as E
from muster.coordinator import requests as rq
from muster.coordinator.groups.modern.group import current_assignment_record
from muster.coordinator.groups.modern.member import MemberState
from muster.protocol import consumer_protocol as cp
from muster.records.modern_group_records import consumer_group_record
from tests.core.harness import Harness
from tests.core.modern.test_heartbeat import G, Member
from tests.core.modern.test_migration import DELAY, Classic, classic_group


def _snapshot(h: Harness) -> tuple[Any, ...]:
    """The log, both group types' state (copies: records apply in place) and the timers."""
    consumer = h.shard.store.modern.get(G)
    classic = h.shard.group(G)
    return (
        list(h.log),
        None if consumer is None else consumer.copy(),
        None if classic is None else (classic.state, classic.to_record()),
        dict(h.group_timers),
        len(h.events),
    )


def _with_unknown_state(make: Callable[..., Harness], h: Harness, member_id: str) -> Harness:
    """A shard loaded from `h`'s log plus a current-assignment record for the
    member in a state only a newer broker knows (Kafka's UNKNOWN): its next
    reconciliation fences it."""
    member = h.shard.store.modern[G].members[member_id]
    odd = dataclasses.replace(member, state=MemberState.UNKNOWN)
    key, value = consumer_group_record(*current_assignment_record(G, odd))
    log = [*h.log, (key, value, max(o for _, _, o in h.log) + 1)]
    return make(log=log, now=h.now)


def test_a_fenced_heartbeat_after_a_subscription_change_writes_nothing(
    make: Callable[..., Harness],
) -> None:
    first = make()
    a = Member(first, "a")
    assert a.beat().error_code == E.NONE
    assert a.beat().error_code == E.NONE
    h = _with_unknown_state(make, first, "a")
    a.h = h
    before = _snapshot(h)
    # the new subscription writes the member, the metadata, the epoch and the
    # target before reconciliation finds the member must be fenced
    resp = a.beat(names=("t1", "t2"))
    assert resp.error_code == E.FENCED_MEMBER_EPOCH
    assert _snapshot(h) == before  # no epoch bump event either


def _static_classic(h: Harness) -> Classic:
    """A classic group of one static member, Stable, owning all of t1."""
    c = Classic(h)
    rid = h.send(c.join_request(group_instance_id="i1"))
    while not h.answered(rid):
        h.advance(DELAY)
    joined = h.reply(rid)
    assert joined.error_code == E.NONE
    c.member_id, c.generation = joined.member_id, joined.generation_id
    assignment = cp.encode_assignment(cp.Assignment({"t1": list(range(6))}))
    req = rq.SyncGroup(G, c.generation, c.member_id, ((c.member_id, assignment),), "i1")
    assert h.reply(h.send(req)).error_code == E.NONE
    assert h.shard.group(G).state.value == "Stable"
    return c


def test_an_upgrade_refused_for_an_unreleased_instance_id_writes_nothing(
    make: Callable[..., Harness],
) -> None:
    h = make(group_initial_rebalance_delay_ms=DELAY)
    c = _static_classic(h)
    before = _snapshot(h)
    # the upgrade converts the group, then the static member of the same
    # instance id turns out to be live: Kafka answers UNRELEASED_INSTANCE_ID
    # and the group stays classic
    resp = Member(h, "intruder", instance_id="i1").beat()
    assert resp.error_code == E.UNRELEASED_INSTANCE_ID
    assert _snapshot(h) == before
    assert G not in h.shard.store.modern and h.shard.group(G) is not None
    assert c.beat() == E.NONE  # still a member of the classic group
    # the classic member's session still runs: it expires as it would have
    h.advance(20_000)
    assert not h.shard.group(G).members


def test_a_classic_join_fenced_after_its_records_writes_nothing(
    make: Callable[..., Harness],
) -> None:
    first = make(group_initial_rebalance_delay_ms=DELAY)
    a, _b = classic_group(first)
    assert Member(first, "c").beat().error_code == E.NONE  # upgrade
    h = _with_unknown_state(make, first, a.member_id)
    a.h = h
    before = _snapshot(h)
    a.topics = ("t1", "t2")  # a new subscription: records before reconciliation
    resp = h.reply(h.send(a.join_request()))
    assert resp.error_code == E.FENCED_MEMBER_EPOCH
    assert _snapshot(h) == before
