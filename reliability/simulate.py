"""Deterministic simulation of the whole group coordinator.

    .venv/bin/python reliability/simulate.py                 # 10,000 seeds, 2 workers
    .venv/bin/python reliability/simulate.py --seeds 1000 --workers 1
    .venv/bin/python reliability/simulate.py --seed 4711     # one seed; shrunk trace if it fails

A seed makes an op list: joins, syncs, heartbeats, leaves, commits (member
and simple), transactional offset commits and transaction ends (the marker),
offset fetches, DeleteGroups/OffsetDelete/Describe/List, topic deletion, the
fake clock moving (session expiry, rebalance and join timeouts, offset expiry),
appends refused (ENOSPC), durability held back and delivered later or in a
shuffled order or failed (the unflushed tail cut), and coordinator reloads
(after a flush, after a crash, after compaction) — over 4 groups of up to 5
virtual members and 2 transactional producers. The ops drive the real
`ShardRuntime` and `CoordinatorShard` (`sim_world.py`); after every op the
invariants are checked (`World.check`). A failing op list is shrunk by delta
debugging (ddmin) to a short trace that still fails, printed op by op.

KIP-848 consumer groups (issue #12): add their ops to `OPS` (a weight and a
function taking the world, the clients and the op's arguments) and their
invariants to `World.check`; nothing else here needs to change.
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import sim_classic_members
import sim_modern
from sim_world import Violation, World, error_of

from muster.coordinator import errors as E
from muster.coordinator import requests as rq
from muster.coordinator.groups.subscription import encode_subscription

GROUPS = 4
SLOTS = 5
PRODUCERS = 2
TOPICS = (("t", 4), ("u", 2))
PARTS = [(t, p) for t, n in TOPICS for p in range(n)]  # assignable partitions, numbered
Op = tuple[Any, ...]


@dataclass
class Client:
    group: str
    slot: int
    member_id: str = ""
    generation: int = -1
    plan: tuple[tuple[str, str], ...] | None = None  # the leader's members to assign
    synced: int = -1  # the generation it last got its assignment for
    rejoin: bool = False  # told REBALANCE_IN_PROGRESS: join again

    @property
    def instance(self) -> str | None:
        return f"{self.group}-i{self.slot}" if self.slot >= 3 else None

    @property
    def topics(self) -> tuple[str, ...]:
        return ("t",) if self.slot < 3 else ("t", "u")

    def reset(self) -> None:
        self.member_id, self.generation, self.plan, self.synced = "", -1, None, -1


@dataclass
class Producer:
    pid: int
    decision: bool | None = None  # an end decided and not yet acknowledged
    busy: bool = False  # a TxnOffsetCommit or end in flight


class Sim:
    def __init__(self) -> None:
        self.world = World()
        self.clients = {(g, s): Client(f"g{g}", s) for g in range(GROUPS) for s in range(SLOTS)}
        self.producers = [Producer(1000 + i) for i in range(PRODUCERS)]
        self.values = 0
        self.cg = sim_modern.ConsumerWorld()
        self.world.checks.append(lambda shard: sim_modern.check_consumer_groups(shard, self.cg))
        self.classic = sim_classic_members.clients(sim_modern.CG_GROUPS)
        self.world.checks.append(
            lambda shard: sim_classic_members.check_classic_clients(
                shard, self.classic, self.cg.consumers
            )
        )

    def value(self) -> int:
        self.values += 1
        return self.values


def _forgotten(c: Client, resp: Any) -> None:
    error = error_of(resp)
    if error in (E.UNKNOWN_MEMBER_ID, E.FENCED_INSTANCE_ID):
        c.reset()
    elif error in (E.REBALANCE_IN_PROGRESS, E.ILLEGAL_GENERATION):
        c.rejoin = True


def op_join(sim: Sim, g: int, s: int, flag: int) -> None:
    c = sim.clients[(g, s)]
    req = rq.JoinGroup(
        c.group,
        c.member_id,
        10000,
        30000,
        "consumer",
        (("range", encode_subscription(list(c.topics))),),
        c.instance,
        f"c{s}",
        "/h",
        bool(flag & 1) and c.instance is None,
        None,
        bool(flag & 2),
    )

    def answered(resp: Any) -> None:
        if resp.error_code in (E.NONE, E.MEMBER_ID_REQUIRED) and resp.member_id:
            c.member_id, c.generation = resp.member_id, resp.generation_id
            c.rejoin = resp.error_code == E.MEMBER_ID_REQUIRED
            leads = resp.error_code == E.NONE and resp.leader == resp.member_id
            # (member id, who the assignment is for: a static member's belongs
            # to its instance id, and a replacement of it inherits it, as in Kafka)
            c.plan = (
                tuple((m.member_id, m.group_instance_id or m.member_id) for m in resp.members)
                if leads and not resp.skip_assignment
                else None
            )
        else:
            _forgotten(c, resp)

    sim.world.send(req, answered)


def op_sync(sim: Sim, g: int, s: int, flag: int) -> None:
    c = sim.clients[(g, s)]
    assignments: tuple[tuple[str, bytes], ...] = ()
    if c.plan is not None:
        members = sorted(c.plan)
        # round robin (flag: the same, listed in reverse)
        plan = [
            (m, f"{owner}|{','.join(str(p) for p in range(i, len(PARTS), len(members)))}".encode())
            for i, (m, owner) in enumerate(members)
        ]
        assignments = tuple(plan[::-1] if flag else plan)
    generation, member = c.generation, c.instance or c.member_id
    req = rq.SyncGroup(c.group, generation, c.member_id, assignments, c.instance)

    def answered(resp: Any) -> None:
        if resp.error_code == E.NONE:
            sim.world.sync_assignment(c.group, generation, member, resp.assignment)
            c.synced = generation
        _forgotten(c, resp)

    sim.world.send(req, answered)


def op_step(sim: Sim, g: int, s: int) -> None:
    """What a well-behaved client does next: join, sync its generation, or
    heartbeat (groups reach Stable with many members far more often)."""
    c = sim.clients[(g, s)]
    if not c.member_id or c.rejoin:
        op_join(sim, g, s, 0)
    elif c.synced != c.generation:
        op_sync(sim, g, s, 0)
    else:
        op_heartbeat(sim, g, s)


def op_heartbeat(sim: Sim, g: int, s: int) -> None:
    c = sim.clients[(g, s)]
    sim.world.send(
        rq.Heartbeat(c.group, c.generation, c.member_id, c.instance), lambda r: _forgotten(c, r)
    )


def op_leave(sim: Sim, g: int, s: int, flag: int) -> None:
    c = sim.clients[(g, s)]
    member = "" if flag and c.instance else c.member_id
    sim.world.send(
        rq.LeaveGroup(c.group, (rq.LeavingMember(member, c.instance, "bye"),)), lambda r: None
    )
    c.reset()


def _commit_topics(tp: int, value: int) -> tuple[rq.CommitTopic, ...]:
    topic, part = PARTS[tp % len(PARTS)]
    return (rq.CommitTopic(topic, (rq.CommitPartition(part, value),)),)


def _acked_partitions(resp: Any) -> list[tuple[str, int]]:
    return [
        (t.name, p.partition_index)
        for t in resp.topics
        for p in t.partitions
        if p.error_code == E.NONE
    ]


def op_commit(sim: Sim, g: int, s: int, flag: int, tp: int) -> None:
    c = sim.clients[(g, s)]
    value = sim.value()
    req = rq.OffsetCommit(
        c.group,
        _commit_topics(tp, value),
        c.generation if flag else -1,
        c.member_id if flag else "",
        c.instance if flag else None,
    )

    sent, sent_rid = sim.world.now, sim.world.rid + 1

    def answered(resp: Any) -> None:
        for topic, part in _acked_partitions(resp):
            sim.world.acked_commit(c.group, topic, part, value, sent, sent_rid)

    sim.world.send(req, answered)


def op_txn_offsets(sim: Sim, producer: int, g: int, tp: int) -> None:
    pr = sim.producers[producer]
    if pr.busy or pr.decision is not None:
        return  # a producer waits for its last request before the next
    value, group = sim.value(), f"g{g}"
    pr.busy = True
    req = rq.TxnOffsetCommit(group, pr.pid, 0, _commit_topics(tp, value))

    sent, sent_rid = sim.world.now, sim.world.rid + 1

    def answered(resp: Any) -> None:
        pr.busy = False
        for topic, part in _acked_partitions(resp):
            sim.world.acked_txn_offset(pr.pid, group, topic, part, value, sent, sent_rid)

    sim.world.send(req, answered)


def op_end_txn(sim: Sim, producer: int, commit: int) -> None:
    pr = sim.producers[producer]
    if pr.busy or (pr.decision is None and not sim.world.txn_acked.get(pr.pid)):
        return
    if pr.decision is None:
        pr.decision = bool(commit)  # a retried end keeps its decision
    decision = pr.decision
    pr.busy = True

    def answered(resp: Any) -> None:
        pr.busy = False
        if error_of(resp) == E.NONE:
            sim.world.acked_end_txn(pr.pid, decision)
            pr.decision = None

    sim.world.send(rq.CompleteTxn(pr.pid, 0, decision), answered)


def op_fetch(sim: Sim, g: int, stable: int) -> None:
    group = f"g{g}"

    def answered(resp: Any) -> None:
        world = sim.world
        if world.durability.waiters:
            return  # deletions in flight hide offsets before they are durable
        shown = {
            (t.name, p.partition_index): p.committed_offset if p.error_code == E.NONE else None
            for t in resp.groups[0].topics
            for p in t.partitions
        }
        for (gid, topic, part), exp in world.expected.items():
            got = shown.get((topic, part), -1)
            if got is None:  # UNSTABLE_OFFSET_COMMIT: a transaction holds the partition
                continue
            if gid == group and got != exp.value and got not in exp.alternatives:
                if got != -1 or not exp.may_vanish:
                    raise Violation(f"OffsetFetch {group} {topic}-{part}: {got}, acked {exp.value}")

    sim.world.send(rq.OffsetFetch((rq.FetchGroup(group),), bool(stable)), answered)


def delete_group(sim: Sim, group: str) -> None:
    def deleted(resp: Any) -> None:
        if resp.results[0].error_code == E.NONE:
            sim.world.acked_delete(group)

    sim.world.send(rq.DeleteGroups((group,)), deleted)


def op_admin(sim: Sim, g: int, kind: int) -> None:
    group = f"g{g}"
    if kind == 0:
        delete_group(sim, group)
    elif kind == 1:

        def offset_deleted(resp: Any) -> None:
            if resp.error_code == E.NONE:
                for topic, part in _acked_partitions(resp):
                    sim.world.acked_delete(group, topic, part)

        sim.world.send(rq.OffsetDelete(group, (rq.OffsetDeleteTopic("u", (1,)),)), offset_deleted)
    elif kind == 2:
        sim.world.send(rq.DescribeGroups((group,)), lambda r: None)
    else:
        sim.world.send(rq.ListGroups(), lambda r: None)


def op_delete_topic(sim: Sim) -> None:
    sim_modern.op_cg_topics(sim, 0)  # the topic goes for consumer groups too


def op_advance(sim: Sim, ms: int) -> None:
    sim.world.advance(ms)


def op_hold(sim: Sim, hold: int) -> None:
    sim.world.auto_durable = not hold
    if not hold:
        sim.world.flush(0)


def op_flush(sim: Sim, mode: int, seed: int) -> None:
    sim.world.flush(mode, seed)


def op_refuse(sim: Sim, n: int) -> None:
    sim.world.log.refuse = n


def op_reload(sim: Sim, mode: int) -> None:
    sim.world.reload(mode, sim.world.now)
    for p in sim.producers:
        p.busy = False  # their requests died with the coordinator; they retry
    sim.cg.reloaded()
    sim_classic_members.reloaded(sim.classic)


def _slot(r: random.Random) -> tuple[int, int]:
    return r.randrange(GROUPS), r.randrange(SLOTS)


# kind -> (weight, the op's function, a generator of its arguments)
OPS: dict[str, tuple[int, Callable[..., None], Callable[[random.Random], tuple[Any, ...]]]] = {
    "step": (30, op_step, lambda r: _slot(r)),
    "join": (14, op_join, lambda r: (*_slot(r), r.randrange(4))),
    "sync": (12, op_sync, lambda r: (*_slot(r), int(r.random() < 0.1))),
    "heartbeat": (8, op_heartbeat, lambda r: _slot(r)),
    "leave": (3, op_leave, lambda r: (*_slot(r), r.randrange(2))),
    "commit": (10, op_commit, lambda r: (*_slot(r), r.randrange(2), r.randrange(len(PARTS)))),
    "txn_offsets": (
        4,
        op_txn_offsets,
        lambda r: (r.randrange(PRODUCERS), r.randrange(GROUPS), r.randrange(len(PARTS))),
    ),
    "end_txn": (3, op_end_txn, lambda r: (r.randrange(PRODUCERS), int(r.random() < 0.7))),
    "fetch": (2, op_fetch, lambda r: (r.randrange(GROUPS), r.randrange(2))),
    "admin": (2, op_admin, lambda r: (r.randrange(GROUPS), r.randrange(4))),
    "delete_topic": (1, op_delete_topic, lambda r: ()),
    "advance": (9, op_advance, lambda r: (r.choice([0, 500, 3000, 9000, 10000, 21000, 31000]),)),
    "hold": (4, op_hold, lambda r: (int(r.random() < 0.6),)),
    "flush": (4, op_flush, lambda r: (r.choice([0, 0, 1, 1, 2]), r.randrange(1000))),
    "refuse": (1, op_refuse, lambda r: (r.randrange(1, 3),)),
    "reload": (2, op_reload, lambda r: (r.randrange(3),)),
    **sim_modern.OPS,
    **sim_classic_members.OPS,
}


# ops added after the seeds' op lists were fixed: drawn from a second random
# stream and slipped in between, so that every seed keeps its original ops
# (and the traces found and shrunk with them stay valid)
INTERLEAVED = sim_classic_members.OPS
INTERLEAVE_RATE = 0.15


def generate(seed: int) -> list[Op]:
    rnd = random.Random(seed)
    kinds = [k for k in OPS if k not in INTERLEAVED]
    weights = [OPS[k][0] for k in kinds]
    ops = [
        (kind, *OPS[kind][2](rnd))
        for kind in rnd.choices(kinds, weights, k=rnd.randrange(20, 150))
    ]
    return _interleave(ops, random.Random(f"interleaved-{seed}"))


def _interleave(ops: list[Op], rnd: random.Random) -> list[Op]:
    kinds = list(INTERLEAVED)
    weights = [INTERLEAVED[k][0] for k in kinds]
    out: list[Op] = []
    for op in ops:
        out.append(op)
        if rnd.random() < INTERLEAVE_RATE:
            kind = rnd.choices(kinds, weights)[0]
            out.append((kind, *INTERLEAVED[kind][2](rnd)))
    return out


@dataclass
class Outcome:
    failure: str | None  # the violation, None when every invariant held
    step: int  # the op it broke at (len(ops): in the final checks)
    steps: int
    answered: int
    reloads: int


def run(ops: list[Op]) -> Outcome:
    """Runs the ops on a new world; the invariants after every op and, at the
    end, once every member's session has run out: every request answered."""
    sim = Sim()
    world = sim.world
    step = 0
    try:
        for kind, *args in ops:
            world.note_expirable()
            OPS[kind][1](sim, *args)
            world.check()
            step += 1
        world.auto_durable = True
        world.flush(0)
        world.advance(10 * 60 * 1000)  # everyone's session ends: parked requests get answers
        world.flush(0)
        world.check()
        if world.outstanding:
            stuck = sorted(type(req).__name__ for _, req, _ in world.outstanding.values())
            raise Violation(f"requests never answered: {stuck}")
    except Violation as exc:
        return Outcome(str(exc), step, step, world.answered, world.reloads)
    return Outcome(None, len(ops), len(ops), world.answered, world.reloads)


def shrink(ops: list[Op], fails: Callable[[list[Op]], bool] | None = None) -> list[Op]:
    """Delta debugging (Zeller's ddmin): the smallest op list found that still
    fails, removing chunks, then single ops, until nothing more can go."""
    if fails is None:
        first = run(ops)
        ops = ops[: first.step + 1]  # what came after the violation cannot matter
        kind = _kind(first.failure)

        def fails(candidate: list[Op]) -> bool:
            return _kind(run(candidate).failure) == kind

    n = 2
    while len(ops) >= 2:
        chunk = max(1, len(ops) // n)
        removed = False
        for start in range(0, len(ops), chunk):
            candidate = ops[:start] + ops[start + chunk :]
            if candidate and fails(candidate):
                ops, n, removed = candidate, max(n - 1, 2), True
                break
        if not removed:
            if chunk == 1:
                break
            n = min(len(ops), n * 2)
    return ops


def _kind(failure: str | None) -> str | None:
    """A violation's kind: its leading words (the same invariant must break)."""
    if failure is None:
        return None
    match = re.match(r"[A-Za-z ]*", failure)
    return match.group(0).strip() if match else failure


def _one(seed: int) -> tuple[int, Outcome]:
    return seed, run(generate(seed))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--seeds", type=int, default=10_000, help="how many seeds (from --start)")
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, help="run one seed; shrink and print it if it fails")
    args = ap.parse_args(argv)
    if args.seed is not None:
        ops = generate(args.seed)
        out = run(ops)
        if out.failure is None:
            print(f"simulate: seed {args.seed} ok ({len(ops)} ops, {out.answered} answered)")
            return 0
        print(f"seed {args.seed} fails at op {out.step} of {len(ops)}: {out.failure}")
        small = shrink(ops)
        print(f"shrunk to {len(small)} ops:")
        for i, op in enumerate(small):
            print(f"  {i:3d} {op[0]}{op[1:]}")
        print(f"violation: {run(small).failure}")
        return 1
    started = time.perf_counter()
    seeds = range(args.start, args.start + args.seeds)
    failed: list[tuple[int, Outcome]] = []
    steps = answered = reloads = 0
    if args.workers > 1:
        with multiprocessing.Pool(args.workers) as pool:
            results = list(pool.imap_unordered(_one, seeds, chunksize=25))
    else:
        results = [_one(s) for s in seeds]
    for seed, out in results:
        steps, answered, reloads = steps + out.steps, answered + out.answered, reloads + out.reloads
        if out.failure is not None:
            failed.append((seed, out))
    elapsed = time.perf_counter() - started
    for seed, out in sorted(failed)[:10]:
        first = out.failure.splitlines()[0] if out.failure else ""
        print(f"seed {seed}: op {out.step}: {first}")
        print(f"  reproduce: .venv/bin/python reliability/simulate.py --seed {seed}")
    print(
        f"simulate: {args.seeds:,} seeds in {elapsed:.0f}s ({args.workers} workers), "
        f"{len(failed)} failed; {steps:,} ops, {answered:,} requests answered, "
        f"{reloads:,} reloads, invariants checked after every op"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
