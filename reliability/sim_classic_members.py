"""Classic-protocol clients in the consumer groups of the simulation
(`sim_modern.py`): the online KIP-848 migration under every fault the
simulation makes.

One cooperative classic client per consumer group speaks JoinGroup /
SyncGroup / Heartbeat / LeaveGroup to the same group the ConsumerGroupHeartbeat
clients use. While the group is a classic group (it formed with this client
alone, or the last consumer-protocol member left and it was downgraded) the
client is its leader and assigns round robin; a consumer-protocol member
joining upgrades it; inside a consumer group the server assigns and the
client reports what it owns in its JoinGroup metadata, drops what a
SyncGroup no longer gives it, and rejoins when a Heartbeat says
REBALANCE_IN_PROGRESS; now and then every consumer-protocol client of a
group leaves at once (a rollback), which downgrades it.
`check_classic_clients` adds these clients to the "no partition owned by two
members at once" invariant of consumer groups (their owned partitions are
keyed by topic id, as the consumer clients').
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from sim_world import Violation, error_of

from muster.coordinator import errors as E
from muster.coordinator import requests as rq
from muster.coordinator.shard import CoordinatorShard
from muster.protocol import consumer_protocol as cp

PROTOCOL = "cooperative-sticky"
SESSION_MS = 10000
TP = tuple[uuid.UUID, int]


@dataclass
class ClassicClient:
    group: str
    member_id: str = ""
    generation: int = -1
    phase: str = "join"  # join, sync (its generation's assignment), stable
    owned: dict[uuid.UUID, tuple[int, ...]] = field(default_factory=dict)
    plan: tuple[tuple[str, bytes], ...] = ()  # as the leader of a classic group
    busy: bool = False
    last_ok: int = 0  # when it sent the last request answered without an error

    def reset(self) -> None:
        self.member_id, self.generation, self.phase, self.owned, self.plan = "", -1, "join", {}, ()

    def partitions(self) -> set[TP]:
        return {(t, p) for t, ps in self.owned.items() for p in ps}


def clients(groups: int) -> dict[int, ClassicClient]:
    return {g: ClassicClient(f"c{g}") for g in range(groups)}


def _names(image: dict[str, Any]) -> dict[uuid.UUID, str]:
    return {t.topic_id: name for name, t in image.items()}


def _subscription(c: ClassicClient, image: dict[str, Any]) -> bytes:
    names = _names(image)
    owned = {names[t]: sorted(ps) for t, ps in c.owned.items() if t in names}
    return cp.encode_subscription(
        cp.Subscription(("t",), None, sorted(owned.items()), c.generation)
    )


def _by_id(data: bytes, image: dict[str, Any]) -> dict[uuid.UUID, tuple[int, ...]]:
    out: dict[uuid.UUID, tuple[int, ...]] = {}
    for name, parts in cp.decode_assignment(data).as_dict().items():
        if name in image and parts:
            out[image[name].topic_id] = tuple(sorted(parts))
    return out


def _leader_plan(resp: Any, image: dict[str, Any]) -> tuple[tuple[str, bytes], ...]:
    """Round robin over t's partitions, as a classic group's leader."""
    members = sorted(m.member_id for m in resp.members)
    count = image["t"].partitions if "t" in image else 0
    return tuple(
        (m, cp.encode_assignment(cp.Assignment({"t": list(range(i, count, len(members)))})))
        for i, m in enumerate(members)
    )


def _forget(c: ClassicClient, error: int) -> bool:
    if error in (E.UNKNOWN_MEMBER_ID, E.FENCED_INSTANCE_ID):
        c.reset()
    elif error == E.ILLEGAL_GENERATION:
        c.owned, c.phase = {}, "join"  # its partitions are lost: it rejoins owning none
    elif error == E.REBALANCE_IN_PROGRESS:
        c.phase = "join"
    else:
        return False
    return True


def op_classic_step(sim: Any, g: int) -> None:
    """What the classic client does next: join, sync its generation, or heartbeat."""
    c = sim.classic[g]
    if c.busy:
        return
    if c.generation >= 0 and sim.world.now - c.last_ok >= SESSION_MS:
        # librdkafka's own session timeout: no good answer for that long, the
        # coordinator may have fenced it; its partitions are lost, it starts over
        c.reset()
    image = dict(sim.cg.image)
    c.busy = True
    sent = sim.world.now  # a session runs from the request that refreshed it
    if c.phase == "join":
        req: Any = rq.JoinGroup(
            c.group,
            c.member_id,
            SESSION_MS,
            30000,
            "consumer",
            ((PROTOCOL, _subscription(c, image)),),
            None,
            "classic",
            "/h",
            not c.member_id,
            topics=image,
        )

        def joined(resp: Any) -> None:
            c.busy = False
            error = error_of(resp)
            if error == E.NONE:
                c.last_ok = sent
            if error == E.MEMBER_ID_REQUIRED:
                c.member_id = resp.member_id
            elif error == E.NONE:
                c.member_id, c.generation, c.phase = resp.member_id, resp.generation_id, "sync"
                leads = resp.leader == resp.member_id and resp.members
                c.plan = _leader_plan(resp, image) if leads else ()
            else:
                _forget(c, error)

        sim.world.send(req, joined)
    elif c.phase == "sync":
        req = rq.SyncGroup(c.group, c.generation, c.member_id, c.plan, None, "consumer", PROTOCOL)

        def synced(resp: Any) -> None:
            c.busy = False
            error = error_of(resp)
            if error == E.NONE:
                c.last_ok = sent
                c.owned, c.phase = _by_id(resp.assignment, image), "stable"
            else:
                _forget(c, error)

        sim.world.send(req, synced)
    else:

        def beat(resp: Any) -> None:
            c.busy = False
            if error_of(resp) in (E.NONE, E.REBALANCE_IN_PROGRESS):
                c.last_ok = sent  # a live session either way
            _forget(c, error_of(resp))

        sim.world.send(rq.Heartbeat(c.group, c.generation, c.member_id), beat)


def op_classic_leave(sim: Any, g: int) -> None:
    c = sim.classic[g]
    if c.busy or not c.member_id:
        return
    sim.world.send(rq.LeaveGroup(c.group, (rq.LeavingMember(c.member_id),)), lambda r: None)
    c.reset()  # a client stops owning anything once it leaves


def op_consumers_leave(sim: Any, g: int) -> None:
    """A deployment rolled back to classic clients: every consumer-protocol
    client of the group leaves (the last one's leave downgrades the group)."""
    from sim_modern import CG_SLOTS, op_cg_leave

    for s in range(CG_SLOTS):
        op_cg_leave(sim, g, s, 0)


def reloaded(classic: dict[int, ClassicClient]) -> None:
    for c in classic.values():
        c.busy = False  # the request died with the coordinator; the client retries


OPS = {
    "classic_step": (10, op_classic_step, lambda r: (r.randrange(2),)),
    "classic_leave": (1, op_classic_leave, lambda r: (r.randrange(2),)),
    "consumers_leave": (1, op_consumers_leave, lambda r: (r.randrange(2),)),
}


def check_classic_clients(
    shard: CoordinatorShard, classic: dict[int, ClassicClient], consumers: Any
) -> None:
    """A classic client the consumer group knows at the epoch it believes in
    owns only what the broker gave it and nothing another client owns."""
    groups = shard.store.modern
    for c in classic.values():
        group = groups.get(c.group)
        known = None if group is None else group.members.get(c.member_id)
        if known is None or known.member_epoch != c.generation:
            continue
        broker = {
            (t, p)
            for parts in (known.assigned, known.pending_revocation)
            for t, ps in parts.items()
            for p in ps
        }
        mine = c.partitions()
        if not mine <= broker:
            raise Violation(f"classic {c.member_id} owns {sorted(mine - broker)} not given it")
        for other in consumers.values():
            if other.group != c.group:
                continue
            theirs = group.members.get(other.member_id)  # type: ignore[union-attr]
            if theirs is None or theirs.member_epoch != other.epoch:
                continue
            both = mine & other.partitions()
            if both:
                raise Violation(
                    f"{c.group}: {sorted(both)} owned by {c.member_id} and {other.member_id}"
                )
