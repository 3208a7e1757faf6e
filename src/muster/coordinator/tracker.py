"""The one write path: each shard step's write (`Write`, the step's
`Result.on_durable`) is held by the runtime's `WriteTracker` from its append
until the runtime reports its fate, then completed (durable) or abandoned
(failed), the same way for every kind of state. The shard computes and
replays; it holds no write.

Each kind of durable state of a shard (offsets, classic groups, modern
groups) is a `Domain`: it applies a record, it snapshots what a step changed
before the step's records are durable, and it restores snapshots when an
append fails. Offsets and classic groups apply on durability and take no
snapshot; modern groups apply at write time (as Kafka does) and snapshot
the groups they changed. The tracker never looks at a record's type: the
shard's `replay` finds the record's domain in its table (`domain_of`), at
load and when a write is durable alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from muster.coordinator import errors as E
from muster.coordinator.context import Continuation, Effects
from muster.coordinator.result import Record, Result


class Domain(Protocol):
    """One kind of a shard's durable state, and the records that change it."""

    # the record types (a key's version) this domain applies
    record_types: frozenset[int]

    def apply(self, key: bytes, value: bytes | None, offset: int, producer_id: int | None) -> None:
        """Apply one record at log position `offset` (with `producer_id`, one
        of that producer's transactional records, held until its marker)."""

    def snapshot(self, fx: Effects) -> Any | None:
        """What this step's records already changed, as it was before them
        (None: the domain applies only durable records, nothing to restore)."""

    def restore(self, snapshots: list[Any], fx: Effects) -> None:
        """The appends of these snapshots' writes failed (latest write first,
        so the oldest snapshot wins): put the state back; `fx` takes the timer
        changes that follow."""


class Shard(Protocol):
    """What the tracker completes writes against (`CoordinatorShard`)."""

    domains: tuple[Domain, ...]
    next_seq: int

    def domain_of(self, key: bytes) -> Domain | None: ...

    def replay(
        self, key: bytes, value: bytes | None, offset: int, producer_id: int | None = None
    ) -> None: ...

    def replay_marker(self, producer_id: int, commit: bool) -> None: ...

    def finish(self, fx: Effects) -> Result: ...


@dataclass(eq=False)
class Write:
    """One step's append (its records, marker or continuations), from the
    step's `Result.on_durable` until the runtime reports its fate."""

    first_seq: int
    records: list[Record]
    producer_id: int | None  # the records are this producer's transactional batch
    marker: tuple[int, int, bool] | None
    continuations: list[Continuation]
    # the domains that applied this write's records at write time -> their
    # snapshots; emptied once restored (its records then wait for durability)
    live: dict[Domain, Any]
    token: int | None = None  # its place among the writes in flight (`track`)
    done: bool = False

    @classmethod
    def of(cls, fx: Effects, domains: Sequence[Domain]) -> Write:
        """The write of the step `fx` ends, with each domain's snapshot of it."""
        live = {}
        for domain in domains:
            snapshot = domain.snapshot(fx)
            if snapshot is not None:
                live[domain] = snapshot
        return cls(
            fx.first_seq,
            fx.records,
            None if fx.producer is None else fx.producer[0],
            fx.marker,
            fx.continuations,
            live,
        )


class WriteTracker:
    """The writes in flight of one shard, in append order. Owned by whoever
    appends them (the runtime; a test's fake runtime): it tracks each
    `Result.on_durable` as it appends that Result, and reports each write's
    fate here, in append order."""

    def __init__(self, shard: Shard) -> None:
        self._shard = shard
        self._in_flight: dict[int, Write] = {}
        self._next_token = 0

    def track(self, write: Write | None) -> None:
        """`write` (a Result's `on_durable`) is being appended."""
        if write is not None:
            write.token = self._next_token
            self._next_token += 1
            self._in_flight[write.token] = write

    def abandon(self, write: Write, now_ms: int) -> Result:
        """The latest append (`write`) was refused at once: what it applied
        comes off the live state now, not once the earlier writes in flight
        complete (later steps would build on records the log never got). Its
        completion (`complete`, failed) still comes in order."""
        fx = Effects(now_ms, self._shard.next_seq)
        if not write.done:
            self._restore([write], fx)
        return self._shard.finish(fx)

    def complete(self, write: Write, error_code: int, now_ms: int) -> Result:
        """`write` is durable (error_code 0): its records are replayed (by the
        shard's `replay`, exactly as at load), but for those a domain applied
        at write time. Or it failed: the domains restore their snapshots of
        it and of every later write in flight (Kafka reverts to its last
        committed snapshot). Then its continuations answer requests and
        adjust transient state."""
        if write.done:
            return Result()
        write.done = True
        token = write.token
        if token is not None:
            del self._in_flight[token]
        shard = self._shard
        if error_code == E.NONE:
            live = write.live
            domain_of, replay = shard.domain_of, shard.replay
            for seq, (key, value) in enumerate(write.records, write.first_seq):
                if not live or domain_of(key) not in live:
                    replay(key, value, seq, write.producer_id)
            if write.marker is not None:
                producer_id, _epoch, commit = write.marker
                shard.replay_marker(producer_id, commit)
            fx = Effects(now_ms, shard.next_seq)
        else:
            fx = Effects(now_ms, shard.next_seq)
            if write.live:
                later = [w for t, w in self._in_flight.items() if token is not None and t > token]
                self._restore([*reversed(later), write], fx)
        for continuation in write.continuations:
            continuation(error_code, fx)
        return shard.finish(fx)

    def _restore(self, writes: list[Write], fx: Effects) -> None:
        """Restore these writes' snapshots, in the order given, each domain
        once over all of its own."""
        snapshots: dict[Domain, list[Any]] = {}
        for write in writes:
            for domain, snapshot in write.live.items():
                snapshots.setdefault(domain, []).append(snapshot)
            write.live = {}
        for domain, taken in snapshots.items():
            domain.restore(taken, fx)
