"""KIP-848 consumer groups in the deterministic simulation (`simulate.py`).

Virtual consumers speak ConsumerGroupHeartbeat to the real `ShardRuntime` as
a well-behaved client does: join with epoch 0 and a client-made member id,
heartbeat with the partitions they own after reconciling (a revoked
partition is dropped at once, as librdkafka does), leave (-1), leave
statically (-2, a static member's process ends), change their subscription,
get fenced (a heartbeat at a wrong epoch) and rejoin with epoch 0 owning
nothing, and commit offsets with their member epoch. One request in flight
per consumer, as a client has. The cluster's topics can change (a topic
deleted and re-created under a new id, a topic growing).

`check_consumer_groups` is the invariant added to `World.check`: no partition
is held by two members at once, ever (the broker's view: assigned or still
being revoked; and the clients' view: what each last reported or was given,
for every client the broker knows at the epoch it believes in), every
member has its session timer, a revocation timer only while it revokes, and
no timer is left for a member that is gone.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from sim_world import Violation, error_of

from muster.coordinator import errors as E
from muster.coordinator import requests as rq
from muster.coordinator.groups.modern.api import ConsumerGroupDescribe, ConsumerGroupHeartbeat
from muster.coordinator.groups.modern.member import MemberState
from muster.coordinator.groups.modern.shard_api import TIMERS as CONSUMER_TIMERS
from muster.coordinator.groups.modern.target import SubscribedTopic
from muster.coordinator.shard import CoordinatorShard

CG_GROUPS = 2
CG_SLOTS = 4
SUBSCRIPTIONS = (("t",), ("t", "u"), ("u",))
TP = tuple[uuid.UUID, int]


@dataclass
class Consumer:
    group: str
    slot: int
    incarnation: int = 0  # a new process: a new member id
    epoch: int = 0  # 0: not in the group (joins next)
    owned: dict[uuid.UUID, tuple[int, ...]] = field(default_factory=dict)
    topics: tuple[str, ...] = ("t",)
    busy: bool = False  # a heartbeat in flight: a client sends the next after its answer
    new_topics: bool = False  # the subscription changed: say it in the next heartbeat

    @property
    def member_id(self) -> str:
        return f"{self.group}-s{self.slot}-p{self.incarnation}"

    @property
    def instance(self) -> str | None:
        return f"{self.group}-i{self.slot}" if self.slot >= 2 else None

    def drop(self, new_process: bool = False) -> None:
        self.epoch, self.owned = 0, {}
        if new_process:
            self.incarnation += 1

    def partitions(self) -> set[TP]:
        return {(t, p) for t, ps in self.owned.items() for p in ps}


class ConsumerWorld:
    """The consumers and the cluster's topics as the broker sees them."""

    def __init__(self) -> None:
        self.consumers = {
            (g, s): Consumer(f"c{g}", s, topics=SUBSCRIPTIONS[s % 2])
            for g in range(CG_GROUPS)
            for s in range(CG_SLOTS)
        }
        self.ids = 2
        self.image: dict[str, SubscribedTopic] = {
            "t": SubscribedTopic(uuid.UUID(int=1), 4),
            "u": SubscribedTopic(uuid.UUID(int=2), 2),
        }

    def reloaded(self) -> None:
        for c in self.consumers.values():
            c.busy = False  # the request died with the coordinator; the client retries


def _send(sim: Any, c: Consumer, req: ConsumerGroupHeartbeat, leaving: bool = False) -> None:
    c.busy = True

    def answered(resp: Any) -> None:
        c.busy = False
        error = error_of(resp)
        if leaving:
            return
        if error == E.NONE:
            c.epoch = resp.member_epoch
            c.new_topics = False
            if resp.assignment is not None:
                c.owned = {t: ps for t, ps in resp.assignment if ps}
        elif error in (E.FENCED_MEMBER_EPOCH, E.UNKNOWN_MEMBER_ID):
            c.drop()  # gives everything up, rejoins with epoch 0 under its id
        elif error == E.FENCED_INSTANCE_ID:
            c.drop(new_process=True)  # fatal for that process; a new one starts
        elif error == E.UNRELEASED_INSTANCE_ID:
            c.drop()
        # other errors (an append refused, the coordinator loading): retry as is

    sim.world.send(req, answered)


def _heartbeat(sim: Any, c: Consumer, epoch: int, rebalance_timeout_ms: int = 30000) -> None:
    joining = epoch == 0
    if joining:
        c.owned = {}
    req = ConsumerGroupHeartbeat(
        c.group,
        c.member_id,
        epoch,
        instance_id=c.instance,
        rebalance_timeout_ms=rebalance_timeout_ms if joining else -1,
        subscribed_topic_names=c.topics if joining or c.new_topics else None,
        server_assignor=None,
        owned=tuple(sorted(c.owned.items())),
        client_id=f"c{c.slot}",
        client_host="/h",
        topics=dict(sim.cg.image),
    )
    _send(sim, c, req)


def op_cg_step(sim: Any, g: int, s: int) -> None:
    """What a well-behaved consumer does next: join, or heartbeat what it owns."""
    c = sim.cg.consumers[(g, s)]
    if not c.busy:
        _heartbeat(sim, c, c.epoch)


def op_cg_join(sim: Any, g: int, s: int, short: int) -> None:
    """Epoch 0: a first join, or a rejoin under its id owning nothing (a
    restart, or after being fenced); short: a 5 s rebalance timeout."""
    c = sim.cg.consumers[(g, s)]
    if not c.busy:
        _heartbeat(sim, c, 0, 5000 if short else 30000)


def op_cg_fence(sim: Any, g: int, s: int, ahead: int) -> None:
    """A heartbeat at an epoch the broker did not give (a zombie's)."""
    c = sim.cg.consumers[(g, s)]
    if not c.busy and c.epoch > 0:
        _heartbeat(sim, c, c.epoch + 1 if ahead else c.epoch - 1)


def op_cg_leave(sim: Any, g: int, s: int, static: int) -> None:
    """-1 leaves; -2 (a static member) says its process ends and comes back."""
    c = sim.cg.consumers[(g, s)]
    if c.busy or c.epoch <= 0:
        return
    epoch = -2 if static and c.instance else -1
    req = ConsumerGroupHeartbeat(
        c.group, c.member_id, epoch, instance_id=c.instance, topics=dict(sim.cg.image)
    )
    _send(sim, c, req, leaving=True)
    c.drop(new_process=True)  # a client stops owning anything once it leaves


def op_cg_subscribe(sim: Any, g: int, s: int, which: int) -> None:
    c = sim.cg.consumers[(g, s)]
    c.topics, c.new_topics = SUBSCRIPTIONS[which], True
    if not c.busy:
        _heartbeat(sim, c, c.epoch)


def op_cg_commit(sim: Any, g: int, s: int, tp: int, stale: int) -> None:
    """OffsetCommit with the member's epoch (stale: the epoch before)."""
    from simulate import _acked_partitions, _commit_topics

    c = sim.cg.consumers[(g, s)]
    value = sim.value()
    epoch = c.epoch - 1 if stale else c.epoch
    req = rq.OffsetCommit(c.group, _commit_topics(tp, value), epoch, c.member_id, c.instance)
    sent, sent_rid = sim.world.now, sim.world.rid + 1

    def answered(resp: Any) -> None:
        for topic, part in _acked_partitions(resp):
            sim.world.acked_commit(c.group, topic, part, value, sent, sent_rid)

    sim.world.send(req, answered)


def op_cg_topics(sim: Any, kind: int) -> None:
    """The cluster changes: 0 topic u deleted, 1 re-created (a new id), 2 t grows."""
    image = sim.cg.image
    if kind == 0:
        if image.pop("u", None) is not None:
            sim.world.delete_topic("u", 2)
    elif kind == 1 and "u" not in image:
        sim.cg.ids += 1
        image["u"] = SubscribedTopic(uuid.UUID(int=sim.cg.ids), 2)
    elif kind == 2:
        image["t"] = SubscribedTopic(image["t"].topic_id, min(image["t"].partitions + 1, 6))


def op_cg_admin(sim: Any, g: int, kind: int) -> None:
    """0: DeleteGroups (only an empty consumer group goes), 1: ConsumerGroupDescribe."""
    from simulate import delete_group

    if kind == 0:
        delete_group(sim, f"c{g}")
    else:
        sim.world.send(ConsumerGroupDescribe((f"c{g}",)), lambda r: None)


def _slot(r: Any) -> tuple[int, int]:
    return r.randrange(CG_GROUPS), r.randrange(CG_SLOTS)


OPS = {
    "cg_step": (24, op_cg_step, lambda r: _slot(r)),
    "cg_join": (4, op_cg_join, lambda r: (*_slot(r), int(r.random() < 0.3))),
    "cg_fence": (2, op_cg_fence, lambda r: (*_slot(r), r.randrange(2))),
    "cg_leave": (2, op_cg_leave, lambda r: (*_slot(r), r.randrange(2))),
    "cg_subscribe": (2, op_cg_subscribe, lambda r: (*_slot(r), r.randrange(len(SUBSCRIPTIONS)))),
    "cg_commit": (
        5,
        op_cg_commit,
        lambda r: (*_slot(r), r.randrange(6), int(r.random() < 0.2)),
    ),
    "cg_topics": (1, op_cg_topics, lambda r: (r.randrange(3),)),
    "cg_admin": (1, op_cg_admin, lambda r: (r.randrange(CG_GROUPS), r.randrange(2))),
}


# ---- the invariants ----------------------------------------------------------


def check_consumer_groups(shard: CoordinatorShard, cg: ConsumerWorld) -> None:
    groups = shard.store.modern
    for gid, group in groups.items():
        held: dict[TP, str] = {}
        for m in group.members.values():
            for parts in (m.assigned, m.pending_revocation):
                for t, ps in parts.items():
                    for p in ps:
                        if (t, p) in held:
                            raise Violation(
                                f"consumer group {gid}: partition {t.int}-{p} held by "
                                f"{held[(t, p)]} and {m.member_id}"
                            )
                        held[(t, p)] = m.member_id
    seen: dict[tuple[str, TP], str] = {}
    for c in cg.consumers.values():
        group = groups.get(c.group)
        known = None if group is None else group.members.get(c.member_id)
        if known is None or known.member_epoch != c.epoch:
            continue  # a zombie until its next heartbeat tells it (Kafka's too)
        mine = c.partitions()
        broker = {
            (t, p)
            for parts in (known.assigned, known.pending_revocation)
            for t, ps in parts.items()
            for p in ps
        }
        if not mine <= broker:
            raise Violation(
                f"consumer {c.member_id} owns {sorted(mine - broker)} the broker never gave it"
            )
        for tp in mine:
            other = seen.setdefault((c.group, tp), c.member_id)
            if other != c.member_id:
                raise Violation(
                    f"consumer group {c.group}: {tp} owned by {other} and {c.member_id}"
                )
    _check_consumer_timers(shard)


def _check_consumer_timers(shard: CoordinatorShard) -> None:
    groups = shard.store.modern
    keys = {tkey for tkey, _ in shard._timers.values() if tkey.kind in CONSUMER_TIMERS}
    for tkey in keys:
        group = groups.get(tkey.group_id)
        member = None if group is None else group.members.get(tkey.member_id)
        if member is None:
            raise Violation(f"timer {tkey} for a consumer member that is gone")
        if (
            tkey.kind == "consumer-revocation"
            and member.state is not MemberState.UNREVOKED_PARTITIONS
        ):
            raise Violation(f"revocation timer {tkey} for a member in {member.state.name}")
    for gid, group in groups.items():
        for mid in group.members:
            if not any(
                k.kind == "consumer-session" and k.group_id == gid and k.member_id == mid
                for k in keys
            ):
                raise Violation(f"consumer member {gid}/{mid} has no session timer")
