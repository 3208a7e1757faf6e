"""The world of the deterministic coordinator simulation (`simulate.py`).

The real `ShardRuntime` drives a real `CoordinatorShard`, on a fake clock,
over an in-memory log whose appends can fail at once (ENOSPC) and whose
durability callbacks come when the simulation says — later, in a shuffled
order, or with an fsync failure that cuts the unflushed tail, as the segment
log does. Nothing here is random: every choice is in the op list, so a run is
a pure function of its ops (which is what lets a failing run be shrunk).

`World.check()` states the invariants after every step; a broken one raises
`Violation`.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from muster.coordinator import errors as E
from muster.coordinator.durable import durable_state
from muster.coordinator.groups.modern.shard_api import TIMERS as CONSUMER_TIMERS
from muster.coordinator.shard import CoordinatorShard
from muster.log.config import LogConfig
from muster.log.memory_log import MemoryLog
from muster.log.port import StorageError
from muster.server.group_runtime.runtime import ShardRuntime, _Work
from tests.core.harness import _norm, at_rest

RETENTION_MS = 60_000
CHECK_INTERVAL_MS = 20_000
CONFIG = {
    "offsets.topic.num.partitions": 1,
    "group.initial.rebalance.delay.ms": 0,
    "group.min.session.timeout.ms": 6000,
    "group.max.session.timeout.ms": 1800000,
    "offsets.retention.minutes": RETENTION_MS // 60_000,
    "offsets.retention.check.interval.ms": CHECK_INTERVAL_MS,
}
_LOOP = asyncio.new_event_loop()  # never run: it only makes futures


class Violation(AssertionError):
    """An invariant broke (the message names it)."""


# ---- the fake log and durability --------------------------------------------


class SimLog:
    """A MemoryLog that can refuse appends and lose its unflushed tail.

    The segment log cuts the unflushed tail after a failed fsync (before the
    next write); here the cut is immediate. The log is rebuilt from the
    appends that survive, so producer state stays what the log holds."""

    def __init__(self) -> None:
        self.config = LogConfig(cleanup_policy="compact")
        self.inner = MemoryLog("__consumer_offsets", 0, self.config)
        self.appends: list[tuple[int, str, tuple[Any, ...]]] = []  # (base offset, kind, args)
        self.refuse = 0  # the next appends that fail with ENOSPC
        self.version = 0  # moves whenever what a load would read may change

    topic = "__consumer_offsets"
    partition = 0

    @property
    def log_start_offset(self) -> int:
        return self.inner.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.inner.log_end_offset

    @property
    def flushed_offset(self) -> int:
        return self.inner.flushed_offset

    def _do(self, kind: str, args: tuple[Any, ...]) -> Any:
        base = self.inner.log_end_offset
        self.version += 1
        info = getattr(self.inner, kind)(*args)
        self.appends.append((base, kind, args))
        return info

    def append(self, records: bytes, now_ms: int, coordinator: bool = False) -> Any:
        if self.refuse:
            self.refuse -= 1
            raise StorageError("no space left on device (simulated)")
        return self._do("append", (records, now_ms, coordinator))

    def append_marker(self, *args: Any) -> Any:
        if self.refuse:
            self.refuse -= 1
            raise StorageError("no space left on device (simulated)")
        return self._do("append_marker", args)

    def read(self, offset: int, max_bytes: int, upper: int | None = None) -> bytes:
        return self.inner.read(offset, max_bytes, upper)

    def flush(self) -> None:
        if self.inner.flushed_offset != self.inner.log_end_offset:
            self.version += 1
        self.inner.flush()

    def cut_tail(self) -> None:
        """Everything not yet flushed is gone (a failed fsync, or a crash)."""
        keep = [a for a in self.appends if a[0] < self.inner.flushed_offset]
        self.inner = MemoryLog("__consumer_offsets", 0, self.config)
        self.appends = []
        for _, kind, args in keep:
            self._do(kind, args)
        self.inner.flush()

    def compact(self, now_ms: int) -> None:
        self.version += 1
        self.inner.compact(now_ms)


class FlushedPrefix:
    """The log as a restart would find it after a crash: its flushed part."""

    def __init__(self, plog: SimLog) -> None:
        self.plog = plog
        self.log_start_offset = plog.log_start_offset
        self.log_end_offset = plog.flushed_offset

    def read(self, offset: int, max_bytes: int, upper: int | None = None) -> bytes:
        return self.plog.read(offset, max_bytes, self.log_end_offset)


class SimDurability:
    """Durability callbacks wait until the simulation flushes."""

    def __init__(self) -> None:
        self.waiters: list[Callable[[OSError | None], None]] = []

    def appended(self, plog: Any, latency_bound: bool = False) -> None:
        pass

    def on_durable(self, plog: Any, callback: Callable[[OSError | None], None]) -> None:
        self.waiters.append(callback)


class SimRuntime(ShardRuntime):
    """The real runtime with its timers kept by the world (fake clock)."""

    def __init__(self, world: World, shard: CoordinatorShard) -> None:
        super().__init__(
            shard, world.log, world.durability, world.events.extend, None, lambda: world.now  # type: ignore[arg-type]
        )
        self.world = world

    def _set_timer(self, op: Any) -> None:
        if hasattr(op, "deadline_ms"):
            self.world.timers[op.key] = op.deadline_ms
        else:
            self.world.timers.pop(op.key, None)

    def _reply(self, replies: list[tuple[int, Any]]) -> None:
        for request_id, _ in replies:
            if request_id not in self._waiting:
                raise Violation(f"request {request_id} answered twice (or never asked)")
        super()._reply(replies)


class _Errors(logging.Handler):
    """Tracebacks the runtime swallowed (a core exception is a finding)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info:
            self.seen.append(self.format(record))


ERRORS = _Errors()
logging.getLogger("muster.server.group_runtime.runtime").addHandler(ERRORS)
logging.getLogger("muster.server.group_runtime.runtime").propagate = False


# ---- the model of acknowledged commits ---------------------------------------


@dataclass
class Expected:
    value: int
    ack_ms: int
    ack_no: int  # acknowledgements are in log order: this one's place
    may_vanish: bool = False  # expiry, or its topic was deleted, could remove it
    # other values that may show instead (an older transactional offset comes
    # back when a deletion took the newer plain one: Kafka's marker rule)
    alternatives: tuple[int, ...] = ()


@dataclass
class World:
    now: int = 1_000_000
    log: SimLog = field(default_factory=SimLog)
    durability: SimDurability = field(default_factory=SimDurability)
    timers: dict[str, int] = field(default_factory=dict)
    events: list[Any] = field(default_factory=list)
    auto_durable: bool = True
    # acknowledged commits: (group, topic, partition) -> what OffsetFetch must show
    expected: dict[tuple[str, str, int], Expected] = field(default_factory=dict)
    # acknowledged transactional offsets, per producer, not yet ended
    # (value, ack_no, sent_ms, sent request id) per producer and partition
    txn_acked: dict[int, dict[tuple[str, str, int], tuple[int, int, int, int]]] = field(
        default_factory=dict
    )
    acks: int = 0
    # partition ownership per (group, generation): partition -> member
    owners: dict[tuple[str, int], dict[int, str]] = field(default_factory=dict)
    outstanding: dict[int, tuple[Any, Any, Callable[[Any], None]]] = field(default_factory=dict)
    rid: int = 0
    steps: int = 0
    answered: int = 0
    reloads: int = 0
    members: int = 0
    deleted_after: dict[str, int] = field(default_factory=dict)
    # more invariants (the consumer groups'), run after the built-in ones
    checks: list[Callable[[CoordinatorShard], None]] = field(default_factory=list)
    runtime: SimRuntime = field(init=False)
    _replay_cache: tuple[int, CoordinatorShard, dict[str, Any], dict[str, Any]] | None = None

    def __post_init__(self) -> None:
        self.runtime = self._start()

    # ---- driving the runtime ------------------------------------------------

    def _member_id(self, client_id: str) -> str:
        self.members += 1  # deterministic, and never reused across reloads
        return f"{client_id}-m{self.members}"

    def _start(self) -> SimRuntime:
        shard = CoordinatorShard(0, CONFIG, self._member_id)
        rt = SimRuntime(self, shard)
        rt.load()
        rt._process(_Work("loaded", None))
        rt.loaded = True
        self.runtime = rt
        self._drain()
        return rt

    def _drain(self) -> None:
        rt = self.runtime
        while True:
            while not rt._queue.empty():
                rt._process(rt._queue.get_nowait())
            if not (self.auto_durable and self.durability.waiters):
                break
            self.flush(0)
        self._collect()
        if ERRORS.seen:
            raise Violation("the runtime logged an exception:\n" + ERRORS.seen[0])

    def _collect(self) -> None:
        for rid, (fut, _req, on_reply) in list(self.outstanding.items()):
            if fut.done():
                del self.outstanding[rid]
                if fut.exception() is not None:
                    raise Violation(f"request failed inside the coordinator: {fut.exception()!r}")
                self.answered += 1
                on_reply(fut.result())

    def send(self, request: Any, on_reply: Callable[[Any], None]) -> None:
        fut = _LOOP.create_future()
        self.rid += 1
        self.outstanding[self.rid] = (fut, request, on_reply)
        work = _Work("request", request, fut)
        if self.runtime._queue.empty():
            self.runtime._process(work)
        else:
            self.runtime._queue.put_nowait(work)
        self._drain()
        self.advance(0)  # timers due now (call_later(0) in the broker)

    def delete_topic(self, topic: str, partitions: int) -> None:
        self.deleted_after[topic] = self.rid  # commits sent before may go too
        for key, exp in self.expected.items():
            if key[1] == topic:
                exp.may_vanish = True
        self.runtime._queue.put_nowait(
            _Work("delete_partitions", [(topic, p) for p in range(partitions)])
        )
        self._drain()

    def advance(self, ms: int) -> None:
        target = self.now + ms
        while True:
            due = [(d, k) for k, d in self.timers.items() if d <= target]
            if not due:
                break
            deadline, key = min(due)
            self.now = max(self.now, deadline)
            self.note_expirable()
            del self.timers[key]
            self.runtime._queue.put_nowait(_Work("timer", key))
            self._drain()
        self.now = target

    def flush(self, mode: int, shuffle_seed: int = 0) -> None:
        """0: the fsync succeeds; 1: succeeds, callbacks in a shuffled order;
        2: it fails and the unflushed tail is cut."""
        waiters, self.durability.waiters = self.durability.waiters, []
        if mode == 2:
            self.log.cut_tail()
            error: OSError | None = OSError(5, "I/O error (simulated fsync failure)")
        else:
            self.log.flush()
            error = None
        if mode == 1:
            random.Random(shuffle_seed).shuffle(waiters)
        for callback in waiters:
            callback(error)
        rt = self.runtime
        while not rt._queue.empty():
            rt._process(rt._queue.get_nowait())
        self._collect()

    def reload(self, mode: int, now_ms: int) -> None:
        """Unload the shard and load a new one from the log. 0: after the
        pending writes are flushed; 1: a crash (the unflushed tail is lost,
        parked and pending requests die with the process); 2: as 0, with the
        log compacted first."""
        before = durable_state(self.runtime.shard)
        if mode == 1:
            self.log.cut_tail()
            self.durability.waiters.clear()
        else:
            self.flush(0)
            self._collect()
            before = durable_state(self.runtime.shard)
            if mode == 2:
                self.log.compact(now_ms)
        self.outstanding.clear()  # their connections died with the coordinator
        self.timers.clear()
        self.reloads += 1
        self._start()
        after = durable_state(self.runtime.shard)
        if mode != 1 and after != before:
            raise Violation(f"reload changed durable state:\n{_diff(before, after)}")

    # ---- the model -------------------------------------------------------------

    def _deleted_since(self, topic: str, sent_rid: int) -> bool:
        return self.deleted_after.get(topic, -1) >= sent_rid

    def acked_commit(
        self, group: str, topic: str, part: int, value: int, sent_ms: int, sent_rid: int
    ) -> None:
        """sent_ms: when the coordinator took the commit (its commit timestamp,
        which retention counts from)."""
        self.acks += 1
        self.expected[(group, topic, part)] = Expected(value, sent_ms, self.acks)
        self.expected[(group, topic, part)].may_vanish = self._deleted_since(topic, sent_rid)

    def acked_txn_offset(
        self,
        producer: int,
        group: str,
        topic: str,
        part: int,
        value: int,
        sent_ms: int,
        sent_rid: int,
    ) -> None:
        self.acks += 1
        acked = (value, self.acks, sent_ms, sent_rid)
        self.txn_acked.setdefault(producer, {})[(group, topic, part)] = acked

    def acked_end_txn(self, producer: int, commit: bool) -> None:
        for key, (value, ack_no, sent_ms, sent_rid) in self.txn_acked.pop(producer, {}).items():
            plain = self.expected.get(key)
            # a plain commit written later in the log than the transactional one wins
            if commit and (plain is None or plain.ack_no < ack_no):
                self.expected[key] = Expected(value, sent_ms, ack_no)
                # a topic deleted since the transactional commit may take it
                self.expected[key].may_vanish = self._deleted_since(key[1], sent_rid)
            elif commit and plain is not None and plain.may_vanish:
                plain.alternatives += (value,)

    def acked_delete(self, group: str, topic: str | None = None, part: int | None = None) -> None:
        """A deletion acknowledged: committed offsets go, and so do those open
        transactions hold for the same partitions (Kafka's tombstone replay)."""
        for held in (self.expected, *self.txn_acked.values()):
            for key in list(held):
                if key[0] == group and (topic is None or key[1:] == (topic, part)):
                    del held[key]

    # ---- invariants --------------------------------------------------------------

    def note_expirable(self) -> None:
        """Before a step: which acknowledged commits expiry may take now."""
        shard = self.runtime.shard
        for (gid, _t, _p), exp in self.expected.items():
            if exp.may_vanish:
                continue
            group = shard.group(gid)
            empty_since = (
                group.state_timestamp
                if group is not None and group.state.value == "Empty" and group.state_timestamp
                else None
            )
            old = self.now - exp.ack_ms >= RETENTION_MS
            if old or (empty_since is not None and self.now - empty_since >= RETENTION_MS):
                exp.may_vanish = True

    def check(self) -> None:
        shard = self.runtime.shard
        self._check_commits(shard)
        self._check_groups(shard)
        self._check_timers(shard)
        self._check_replay(shard)
        for extra in self.checks:
            extra(shard)

    def _check_commits(self, shard: CoordinatorShard) -> None:
        live: dict[tuple[str, str, int], int] = {}
        for gid, offsets in shard.offsets.groups.items():
            for (topic, part), c in offsets.committed.items():
                live[(gid, topic, part)] = c.offset
        for key, exp in self.expected.items():
            got = live.get(key)
            if got is None and not exp.may_vanish:
                raise Violation(f"acknowledged commit {key}={exp.value} lost")
            if got is not None and got != exp.value and got not in exp.alternatives:
                what = "reordered" if got < exp.value else "overwritten"
                raise Violation(f"commit {key}: live {got}, last acknowledged {exp.value} ({what})")
        for key, got in live.items():
            if key not in self.expected:
                raise Violation(f"commit {key}={got} is live but was never acknowledged")

    def _check_groups(self, shard: CoordinatorShard) -> None:
        for key in list(self.owners):
            if shard.group(key[0]) is None:
                # the group is gone (tombstoned): a new one starts again at
                # generation 1, as in Kafka; its members are new members
                del self.owners[key]
        for group in shard.groups():
            if group.state.value == "Stable":
                missing = [m for m, mem in group.members.items() if not mem.assignment]
                if missing:
                    raise Violation(f"{group.group_id} Stable, {missing} without an assignment")

    def _check_timers(self, shard: CoordinatorShard) -> None:
        core = shard.pending_timers()
        if set(core) != set(self.timers):
            raise Violation(f"runtime timers {sorted(self.timers)} != core's {sorted(core)}")
        for _key, (tkey, _deadline) in shard._timers.items():
            kind = tkey.kind
            if kind == "expire-offsets" or kind in CONSUMER_TIMERS:
                continue  # consumer groups' timers: sim_modern.py checks them
            group = shard.group(tkey.group_id)
            if group is None:
                raise Violation(f"timer {tkey} for a group that is gone")
            if kind == "heartbeat" and tkey.member_id not in group.members:
                raise Violation(f"session timer {tkey} for a member that is gone")
            if kind == "pending" and tkey.member_id not in group.pending_members:
                raise Violation(f"pending-member timer {tkey} for a member that is gone")
            if kind == "join" and group.state.value != "PreparingRebalance":
                raise Violation(f"join timer {tkey} in state {group.state.value}")
            # Kafka's pending-sync timer: until every member of the generation
            # sent its SyncGroup, also once Stable
            waiting = group.state.value == "CompletingRebalance" or (
                group.state.value == "Stable" and group.pending_sync_members
            )
            if kind == "sync" and not waiting:
                raise Violation(f"sync timer {tkey} in {group.state.value}, no one to wait for")

    def _check_replay(self, shard: CoordinatorShard) -> None:
        """A shard loaded (the broker's own load path) from what is durable
        holds exactly the live durable state; groups at rest match their record."""
        fresh, theirs, written = self._replayed()
        mine = durable_state(shard)
        # a consumer group's records are applied when written (undone if the
        # write fails): live equals a replay of all written, durable or not
        if self.log.log_end_offset > self.log.flushed_offset:
            for key in {k for k in (*mine, *written, *theirs) if isinstance(k, tuple)}:
                live = mine.pop(key, None)
                theirs.pop(key, None)
                if live != written.get(key):
                    diff = _diff({str(key): live}, {str(key): written.get(key)})
                    raise Violation(f"replay of the written log != live state:\n{diff}")
        if mine != theirs:
            raise Violation(f"replay of the durable log != live state:\n{_diff(mine, theirs)}")
        for group in shard.groups():
            if at_rest(shard, group):
                if _norm(group.to_record()) != _norm(shard.persisted(group.group_id)):
                    raise Violation(f"{group.group_id} at rest differs from its last record")
                other = fresh.group(group.group_id)
                if other is None or other.state != group.state:
                    raise Violation(f"{group.group_id}: replayed group differs from live")

    def _replayed(self) -> tuple[CoordinatorShard, dict[str, Any], dict[str, Any]]:
        """Loads of the durable log and of all it was written (the same until
        the log changes: most steps write nothing, so they are kept)."""
        if self._replay_cache is None or self._replay_cache[0] != self.log.version:
            fresh = load(FlushedPrefix(self.log))
            durable = durable_state(fresh)
            unflushed = self.log.log_end_offset > self.log.flushed_offset
            written = durable_state(load(self.log)) if unflushed else durable
            self._replay_cache = (self.log.version, fresh, durable, written)
        _, fresh, durable, written = self._replay_cache
        return fresh, dict(durable), written

    def sync_assignment(self, group: str, generation: int, member: str, data: bytes) -> None:
        """A SyncGroup answer: no partition owned by two members of one generation
        (`member`: a static member's instance id, else its member id)."""
        if not data:
            return
        to, _, parts = data.decode().partition("|")
        if to != member:
            raise Violation(f"{member} of {group} gen {generation} was handed {to}'s assignment")
        owners = self.owners.setdefault((group, generation), {})
        for p in (int(x) for x in parts.split(",") if x):
            if owners.setdefault(p, member) != member:
                raise Violation(
                    f"{group} gen {generation}: partition {p} owned by {owners[p]} and {member}"
                )


def load(plog: Any) -> CoordinatorShard:
    """A new shard loaded from a log view by the broker's own load path."""
    rt = ShardRuntime(CoordinatorShard(0, CONFIG), plog, None, list.append)  # type: ignore[arg-type]
    rt.load()
    return rt.shard


def _diff(a: dict[str, Any], b: dict[str, Any]) -> str:
    lines = []
    for gid in sorted(set(a) | set(b), key=str):  # classic ids and ("consumer", id)
        if a.get(gid) != b.get(gid):
            pad = " " * len(gid)
            lines.append(f"  {gid}: live {a.get(gid)!r}\n  {pad}  replayed {b.get(gid)!r}")
    return "\n".join(lines)


def error_of(resp: Any) -> int:
    return resp if isinstance(resp, int) else getattr(resp, "error_code", E.NONE)
