"""A fake runtime for the pure coordinator: an in-memory log, a fake clock,
keyed timers fired by advancing the clock, and durability now or on demand."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

from muster.coordinator import requests as rq
from muster.coordinator.context import CoordinatorConfig
from muster.coordinator.durable import durable_state
from muster.coordinator.groups.subscription import encode_subscription
from muster.coordinator.result import Cancel, Result, Schedule
from muster.coordinator.shard import CoordinatorShard
from muster.coordinator.tracker import WriteTracker

DEFAULTS = dict(
    num_partitions=1,
    group_initial_rebalance_delay_ms=0,
    group_min_session_timeout_ms=6000,
    group_max_session_timeout_ms=1800000,
)


def sub(*topics: str) -> bytes:
    return encode_subscription(list(topics))


class Harness:
    def __init__(
        self,
        now: int = 1_000_000,
        log: list[tuple[bytes, bytes | None, int]] | None = None,
        **cfg: Any,
    ) -> None:
        self.cfg = CoordinatorConfig(**{**DEFAULTS, **cfg})
        ids = itertools.count(1)
        self.shard = CoordinatorShard(0, self.cfg, lambda client: f"{client}-{next(ids)}")
        self.writes = WriteTracker(self.shard)  # a runtime's, as the broker's
        self.now = now
        self.log: list[tuple[bytes, bytes | None, int]] = []
        self.timers: dict[str, int] = {}
        self.replies: dict[int, Any] = {}
        self.events: list[Any] = []
        self.auto_durable = True
        self.held: list[tuple[Result, list[int]]] = []
        self._offsets = itertools.count(max((o for _, _, o in log or []), default=-1) + 1)
        self._rid = itertools.count(1)
        for k, v, o in log or []:
            self.shard.replay(k, v, o)
            self.log.append((k, v, o))
        self.apply(self.shard.loaded(now))

    # ---- driving -------------------------------------------------------------

    def apply(self, res: Result) -> None:
        self.writes.track(res.on_durable)
        for op in res.timers:
            if isinstance(op, Schedule):
                self.timers[op.key] = op.deadline_ms
            else:
                assert isinstance(op, Cancel)
                self.timers.pop(op.key, None)
        self.events.extend(res.events)
        # records take their log positions in append order, durable or not yet
        positions = []
        for k, v in res.records:
            positions.append(next(self._offsets))
            self.log.append((k, v, positions[-1]))
        if res.records and not self.auto_durable:
            self.held.append((res, positions))
        elif res.records and self.held:
            # a log makes appends durable in order: earlier held ones first
            self.held.append((res, positions))
            self.flush()
        else:
            self._durable(res, 0, positions)

    def _durable(self, res: Result, error: int, positions: list[int]) -> None:
        if error != 0:  # the append failed: its records are not in the log
            self.log = [r for r in self.log if r[2] not in positions]
        for rid, resp in res.replies:
            assert rid not in self.replies, f"request {rid} answered twice"
            self.replies[rid] = resp
        if res.on_durable is not None:
            self.apply(self.writes.complete(res.on_durable, error, self.now))

    def flush(self, error: int = 0) -> None:
        held, self.held = self.held, []
        for res, positions in held:
            self._durable(res, error, positions)

    def send(self, req: Any) -> int:
        rid = next(self._rid)
        self.apply(self.shard.handle(rid, req, self.now))
        self.fire_due()
        return rid

    def fire_due(self) -> None:
        while True:
            due = [(d, k) for k, d in self.timers.items() if d <= self.now]
            if not due:
                return
            _, key = min(due)
            del self.timers[key]
            self.apply(self.shard.on_timer(key, self.now))

    def advance(self, ms: int) -> None:
        target = self.now + ms
        while True:
            due = [(d, k) for k, d in self.timers.items() if d <= target]
            if not due:
                break
            deadline, key = min(due)
            self.now = max(self.now, deadline)
            del self.timers[key]
            self.apply(self.shard.on_timer(key, self.now))
        self.now = target

    @property
    def group_timers(self) -> dict[str, int]:
        return {k: d for k, d in self.timers.items() if k != "expire-offsets"}

    def reply(self, rid: int) -> Any:
        return self.replies.pop(rid)

    def answered(self, rid: int) -> bool:
        return rid in self.replies

    # ---- request builders ----------------------------------------------------

    def join(
        self,
        member_id: str = "",
        *,
        group: str = "g",
        instance: str | None = None,
        protocols: tuple[tuple[str, bytes], ...] | None = None,
        session: int = 10000,
        rebalance: int = 30000,
        client: str = "c",
        require_known: bool = False,
        protocol_type: str = "consumer",
        reason: str | None = None,
        skip: bool = False,
    ) -> int:
        return self.send(
            rq.JoinGroup(
                group_id=group,
                member_id=member_id,
                session_timeout_ms=session,
                rebalance_timeout_ms=rebalance,
                protocol_type=protocol_type,
                protocols=protocols if protocols is not None else (("range", sub("t")),),
                group_instance_id=instance,
                client_id=client,
                client_host="/10.0.0.1",
                require_known_member_id=require_known,
                reason=reason,
                supports_skip_assignment=skip,
            )
        )

    def sync(
        self,
        member_id: str,
        generation: int,
        assignments: dict[str, bytes] | None = None,
        *,
        group: str = "g",
        instance: str | None = None,
    ) -> int:
        return self.send(
            rq.SyncGroup(group, generation, member_id, tuple((assignments or {}).items()), instance)
        )

    def heartbeat(
        self, member_id: str, generation: int, *, group: str = "g", instance: str | None = None
    ) -> int:
        return self.send(rq.Heartbeat(group, generation, member_id, instance))

    def leave(self, *members: str | tuple[str, str | None, str | None], group: str = "g") -> int:
        leaving = tuple(
            rq.LeavingMember(m) if isinstance(m, str) else rq.LeavingMember(*m) for m in members
        )
        return self.send(rq.LeaveGroup(group, leaving))

    def commit(
        self,
        offsets: dict[tuple[str, int], int],
        *,
        group: str = "g",
        generation: int = -1,
        member_id: str = "",
        instance: str | None = None,
        metadata: str = "",
        retention: int = -1,
    ) -> int:
        topics: dict[str, list[rq.CommitPartition]] = {}
        for (t, p), off in offsets.items():
            topics.setdefault(t, []).append(rq.CommitPartition(p, off, 3, metadata))
        return self.send(
            rq.OffsetCommit(
                group,
                tuple(rq.CommitTopic(t, tuple(ps)) for t, ps in topics.items()),
                generation,
                member_id,
                instance,
                retention,
            )
        )

    def fetch(
        self,
        topics: dict[str, tuple[int, ...]] | None = None,
        *,
        group: str = "g",
        require_stable: bool = False,
    ) -> Any:
        ft = None if topics is None else tuple(rq.FetchTopic(t, ps) for t, ps in topics.items())
        rid = self.send(rq.OffsetFetch((rq.FetchGroup(group, ft),), require_stable))
        return self.reply(rid).groups[0]

    # ---- convenience scenarios -----------------------------------------------

    def form(self, n: int, *, group: str = "g", **kw: Any) -> list[str]:
        """n members join a new group and sync; returns member ids, leader first."""
        rids = [self.join(group=group, client=f"c{i}", **kw) for i in range(n)]
        if self.cfg.group_initial_rebalance_delay_ms:
            self.advance(self.cfg.group_initial_rebalance_delay_ms)
        resps = {}
        # joins that completed alone (delay 0) are followed by rebalances: rejoin until stable
        for _ in range(n + 1):
            pending = [r for r in rids if r in self.replies]
            for r in pending:
                resps[r] = self.reply(r)
            g = self.shard.group(group)
            assert g is not None
            waiting = [m for m in g.members.values() if m.awaiting_join is None]
            if g.state.value == "PreparingRebalance" and waiting:
                rids = [
                    self.join(m.member_id, group=group, client=m.client_id, **kw) for m in waiting
                ]
                continue
            break
        g = self.shard.group(group)
        assert g is not None and g.state.value == "CompletingRebalance", g.state
        leader = g.leader_id
        members = [leader] + [m for m in g.members if m != leader]
        gen = g.generation
        srids = [
            self.sync(
                m,
                gen,
                {x: f"a-{x}".encode() for x in members} if m == leader else None,
                group=group,
            )
            for m in members
        ]
        for r in srids:
            assert self.reply(r).error_code == 0
        return members

    # ---- the replay invariant --------------------------------------------------

    def durable_log(self) -> list[tuple[bytes, bytes | None, int]]:
        """The records whose append is durable (held ones are not yet)."""
        held = {p for _, positions in self.held for p in positions}
        return [r for r in self.log if r[2] not in held]

    def replayed(self) -> CoordinatorShard:
        """A fresh shard loaded from the durable records."""
        fresh = CoordinatorShard(0, self.cfg)
        for k, v, o in self.durable_log():
            fresh.replay(k, v, o)
        fresh.loaded(self.now)
        return fresh

    def check_replay(self) -> CoordinatorShard:
        fresh = self.replayed()
        assert durable_state(fresh) == durable_state(self.shard)
        for shard in (self.shard, fresh):
            for g in shard.groups():
                # at rest, live state is what the last group record says (unless
                # the latest store failed: then the log keeps the older record)
                if at_rest(shard, g):
                    assert _norm(g.to_record()) == _norm(shard.persisted(g.group_id)), g.group_id
        for g in self.shard.groups():
            if at_rest(self.shard, g):
                other = fresh.group(g.group_id)
                assert other is not None
                assert other.state == g.state
                assert _norm(other.to_record()) == _norm(g.to_record())
        return fresh


def at_rest(shard: CoordinatorShard, g: Any) -> bool:
    return (
        g.has_record
        and shard.persisted(g.group_id) is not None
        and g.state.value in ("Stable", "Empty")
        and g.persisted_seq == g.store_seq
    )


def _norm(v: Any) -> Any:
    return dataclasses.replace(v, current_state_timestamp=0)
