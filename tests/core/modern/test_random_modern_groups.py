"""Random consumer-group scenarios through the shard: members join, heartbeat
(reporting what they own, dropping revoked partitions at once, as librdkafka
does), leave, leave statically, crash, come back; topics grow and vanish; the
clock moves so sessions and revocation timeouts expire. After every step no
partition is owned by two live members at once; at the end the group
settles to an exact cover, and (fixture) the log replays to the live state."""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable

import pytest

from muster.coordinator import errors as E
from muster.coordinator.groups.modern.target import SubscribedTopic
from tests.core.harness import Harness
from tests.core.modern.test_heartbeat import Member, group

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)


def _step(
    rng: random.Random, h: Harness, live: dict[str, Member], image: dict, n: list[int]
) -> None:
    roll = rng.random()
    if roll < 0.15 or not live:
        n[0] += 1
        static = rng.random() < 0.3
        m = Member(
            h, f"m{n[0]}", ("t1", "t2"), instance_id=f"i{n[0] % 4}" if static else None, image=image
        )
        if m.beat().error_code == E.NONE:
            live[m.member_id] = m
        return
    m = rng.choice(sorted(live.values(), key=lambda x: x.member_id))
    if roll < 0.22:
        resp = m.beat(
            epoch=-2 if m.instance_id else -1, names=None, owned=None, rebalance_timeout_ms=-1
        )
        assert resp.error_code in (E.NONE, E.UNKNOWN_MEMBER_ID, E.FENCED_INSTANCE_ID)
        del live[m.member_id]
    elif roll < 0.27:
        del live[m.member_id]  # crashed: silent from now on
    elif roll < 0.32:
        h.advance(rng.choice([1_000, 5_000, 20_000]))
    elif roll < 0.36:
        image["t1"] = SubscribedTopic(T1, image["t1"].partitions + rng.randint(1, 3))
    else:
        resp = m.beat()
        if resp.error_code in (E.FENCED_MEMBER_EPOCH, E.UNKNOWN_MEMBER_ID):
            m.owned = {}  # drops everything, rejoins under its id
            if m.beat(epoch=0).error_code != E.NONE:
                del live[m.member_id]
        elif resp.error_code == E.FENCED_INSTANCE_ID:
            del live[m.member_id]  # another process took its instance id: fatal, as in librdkafka
        else:
            assert resp.error_code == E.NONE, resp


def _no_partition_owned_twice(h: Harness, live: dict[str, Member]) -> None:
    """The broker never lets two members hold a partition (assigned or still
    being revoked); nor do two clients the broker still knows at the epoch
    they believe in. (A client fenced while silent may still believe it owns
    partitions until its next heartbeat tells it: Kafka's zombie, the same.)"""
    held: dict[tuple[uuid.UUID, int], str] = {}
    g = h.shard.store.modern.get("g")
    members = {} if g is None else g.members
    for member in members.values():
        for parts in (member.assigned, member.pending_revocation):
            for t, ps in parts.items():
                for p in ps:
                    assert (t, p) not in held, (
                        f"{(t, p)} held by {held[(t, p)]} and {member.member_id}"
                    )
                    held[(t, p)] = member.member_id
    seen: dict[tuple[uuid.UUID, int], str] = {}
    for m in live.values():
        known = members.get(m.member_id)
        if known is None or known.member_epoch != m.epoch:
            continue
        for tp in m.partitions():
            assert tp not in seen, f"{tp} owned by {seen[tp]} and {m.member_id}"
            seen[tp] = m.member_id


@pytest.mark.parametrize("seed", range(40))
def test_random_scenario(make: Callable[..., Harness], seed: int) -> None:
    rng = random.Random(seed)
    h = make()
    image = {"t1": SubscribedTopic(T1, 4), "t2": SubscribedTopic(T2, 3)}
    live: dict[str, Member] = {}
    counter = [0]
    for _ in range(80):
        _step(rng, h, live, image, counter)
        _no_partition_owned_twice(h, live)
    # settle: the live members heartbeat until every partition is owned once
    for _ in range(20):  # 100 s: silent members' sessions run out meanwhile
        for m in list(live.values()):
            code = m.beat().error_code
            if code == E.FENCED_INSTANCE_ID:
                del live[m.member_id]
            elif code != E.NONE:
                m.owned = {}
                m.beat(epoch=0)
        _no_partition_owned_twice(h, live)
        h.advance(5_000)
    assert set(group(h).members) == set(live)
    if live:
        owned = set().union(*(m.partitions() for m in live.values()))
        assert len(owned) == image["t1"].partitions + image["t2"].partitions


@pytest.mark.parametrize("seed", range(5))
def test_arbitrary_heartbeats_get_an_answer_never_an_exception(
    make: Callable[..., Harness], seed: int
) -> None:
    """Bad input is a Kafka error code: random field combinations, member ids,
    epochs, owned partitions (known and unknown topic ids) and regexes."""
    from muster.coordinator.groups.modern.api import ConsumerGroupHeartbeat

    rng = random.Random(seed)
    h = make()
    image = {"t1": SubscribedTopic(T1, 4), "t2": SubscribedTopic(T2, 3)}
    known = {E.NONE, E.INVALID_REQUEST, E.UNKNOWN_MEMBER_ID, E.FENCED_MEMBER_EPOCH}
    known |= {E.GROUP_ID_NOT_FOUND, E.UNRELEASED_INSTANCE_ID, E.FENCED_INSTANCE_ID}
    known |= {E.UNSUPPORTED_ASSIGNOR, E.INVALID_REGULAR_EXPRESSION, E.INVALID_GROUP_ID}
    for _ in range(300):
        owned = rng.choice(
            [None, (), ((T1, (0, 1)),), ((uuid.UUID(int=9), (5,)),), ((T2, (7, -1)),)]
        )
        req = ConsumerGroupHeartbeat(
            rng.choice(["g", "g", ""]),
            rng.choice(["a", "b", "c", ""]),
            rng.choice([-3, -2, -1, 0, 0, 1, 2, 3, 7]),
            instance_id=rng.choice([None, None, "i", ""]),
            rack_id=rng.choice([None, "r", ""]),
            rebalance_timeout_ms=rng.choice([-1, 0, 1000]),
            subscribed_topic_names=rng.choice([None, (), ("t1",), ("t1", "nope")]),
            subscribed_topic_regex=rng.choice([None, "", "t.*", "(", "[a-"]),
            server_assignor=rng.choice([None, "uniform", "range", "x"]),
            owned=owned,
            topics=image,
        )
        resp = h.reply(h.send(req))
        assert resp.error_code in known, resp
        if rng.random() < 0.1:
            h.advance(rng.choice([1_000, 30_000, 50_000]))
