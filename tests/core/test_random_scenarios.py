"""Random interleavings of clients, timers and durability: the coordinator never
breaks its state table, answers every request exactly once, and the log always
replays to the live durable state — checked after every step, for 2,000 seeds."""

from __future__ import annotations

import random
from typing import Any

import pytest

from muster.coordinator import errors as E
from muster.coordinator import requests as rq
from muster.coordinator.responses import JoinGroupResponse, SyncGroupResponse
from tests.core.harness import Harness, sub

SLOTS = 4


def random_actions(rnd: random.Random, n: int) -> list[tuple[str, int, bool]]:
    out = []
    for _ in range(n):
        kind = rnd.choice(
            [
                "join",
                "join",
                "sync",
                "sync",
                "heartbeat",
                "leave",
                "commit",
                "advance",
                "advance",
                "hold",
                "flush",
                "admin",
                "restart",
            ]
        )
        if kind == "advance":
            arg = rnd.choice([0, 500, 3000, 9000, 10000, 31000])
        elif kind == "flush":
            arg = rnd.choice([0, 0, E.NOT_ENOUGH_REPLICAS])
        elif kind == "admin":
            arg = rnd.randrange(3)
        elif kind in ("hold", "restart"):
            arg = 0
        else:
            arg = rnd.randrange(SLOTS)
        out.append((kind, arg, rnd.random() < 0.5))
    return out


class Client:
    def __init__(self, slot: int) -> None:
        self.slot = slot
        self.member_id = ""
        self.generation = -1
        self.instance = f"i{slot}" if slot % 2 else None
        self.topics = ("t",) if slot < 2 else ("t", "u")


def run(actions: list[tuple[str, int, bool]], delay: int) -> None:
    h = Harness(
        group_initial_rebalance_delay_ms=delay,
        offsets_retention_ms=60000,
        offsets_retention_check_interval_ms=20000,
    )
    clients = [Client(i) for i in range(SLOTS)]
    owner: dict[int, Client] = {}
    sent: set[int] = set()
    seen: set[int] = set()

    def send(c: Client | None, req: Any) -> None:
        rid = h.send(req)
        sent.add(rid)
        if c is not None:
            owner[rid] = c

    def drain() -> None:
        for rid, resp in list(h.replies.items()):
            seen.add(rid)
            del h.replies[rid]
            c = owner.get(rid)
            if c is None:
                continue
            if isinstance(resp, JoinGroupResponse):
                if resp.error_code in (E.NONE, E.MEMBER_ID_REQUIRED) and resp.member_id:
                    c.member_id = resp.member_id
                    c.generation = resp.generation_id
                elif resp.error_code in (E.UNKNOWN_MEMBER_ID, E.FENCED_INSTANCE_ID):
                    c.member_id, c.generation = "", -1
            elif isinstance(resp, SyncGroupResponse) and resp.error_code in (
                E.UNKNOWN_MEMBER_ID,
                E.FENCED_INSTANCE_ID,
            ):
                c.member_id, c.generation = "", -1

    for kind, arg, flag in actions:
        if kind == "join":
            c = clients[arg]
            send(
                c,
                rq.JoinGroup(
                    "g",
                    c.member_id,
                    10000,
                    30000,
                    "consumer",
                    (("range", sub(*c.topics)),),
                    c.instance,
                    f"c{arg}",
                    "/h",
                    flag and c.instance is None,
                    None,
                    flag,
                ),
            )
        elif kind == "sync":
            c = clients[arg]
            g = h.shard.group("g")
            members = list(g.members) if g else []
            assignment = tuple((m, m.encode()) for m in members) if flag else ()
            send(c, rq.SyncGroup("g", c.generation, c.member_id, assignment, c.instance))
        elif kind == "heartbeat":
            c = clients[arg]
            send(c, rq.Heartbeat("g", c.generation, c.member_id, c.instance))
        elif kind == "leave":
            c = clients[arg]
            send(
                c,
                rq.LeaveGroup(
                    "g",
                    (
                        rq.LeavingMember(
                            "" if flag and c.instance else c.member_id, c.instance, "bye"
                        ),
                    ),
                ),
            )
        elif kind == "commit":
            c = clients[arg]
            gen, mid = (c.generation, c.member_id) if flag else (-1, "")
            send(
                c,
                rq.OffsetCommit(
                    "g",
                    (
                        rq.CommitTopic("t", (rq.CommitPartition(0, arg),)),
                        rq.CommitTopic("u", (rq.CommitPartition(1, arg),)),
                    ),
                    gen,
                    mid,
                    c.instance if flag else None,
                ),
            )
        elif kind == "advance":
            h.advance(arg)
        elif kind == "hold":
            h.auto_durable = not flag
        elif kind == "flush":
            h.flush(arg)
        elif kind == "admin":
            req = [
                rq.DeleteGroups(("g",)),
                rq.OffsetDelete("g", (rq.OffsetDeleteTopic("u", (1,)),)),
                rq.DescribeGroups(("g",)),
            ][arg]
            send(None, req)
            send(None, rq.OffsetFetch((rq.FetchGroup("g"),), flag))
            send(None, rq.ListGroups())
        elif kind == "restart":
            h.flush()
            h.auto_durable = True
            drain()
            unanswered = sent - seen
            h.check_replay()
            h = Harness(
                now=h.now,
                log=h.log,
                group_initial_rebalance_delay_ms=delay,
                offsets_retention_ms=60000,
                offsets_retention_check_interval_ms=20000,
            )
            # requests parked in the old incarnation died with it (clients time out)
            sent -= unanswered
            owner.clear()
        drain()
        # after every step: the live durable state is what a fresh shard loads
        # from the durable records, and groups at rest match their last record
        h.check_replay()
    h.auto_durable = True
    h.flush()
    h.check_replay()
    h.advance(10 * 60 * 1000)  # everyone dies: every parked request gets its answer
    h.flush()
    drain()
    assert sent == seen
    h.check_replay()
    g = h.shard.group("g")
    assert (
        g is None
        or g.state.value == "Empty"
        or not g.members
        or all(m.is_static for m in g.members.values())
    )


@pytest.mark.parametrize("seed", range(2000))
def test_random_scenarios(seed: int) -> None:
    rnd = random.Random(seed)
    run(random_actions(rnd, rnd.randrange(5, 60)), rnd.choice([0, 3000]))
