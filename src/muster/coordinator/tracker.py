"""The one write path: each shard step's write is held here from its append
until the runtime reports its fate, then completed (durable) or abandoned
(failed), the same way for every kind of state.

Each kind of durable state of a shard (offsets, classic groups, consumer
groups) is a `Domain`: it applies a record, it snapshots what a step changed
before the step's records are durable, and it restores snapshots when an
append fails. Offsets and classic groups apply on durability and take no
snapshot; consumer groups apply at write time (as Kafka does) and snapshot
the groups they changed. The tracker never looks at a record's type: the
shard's `replay` finds the record's domain in its table (`domain_of`), at
load and when a write is durable alike.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from muster.coordinator import errors as E
from muster.coordinator.context import Continuation, Effects
from muster.coordinator.result import Record


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


class Log(Protocol):
    """What the tracker replays a durable write into (the shard)."""

    def domain_of(self, key: bytes) -> Domain | None: ...

    def replay(
        self, key: bytes, value: bytes | None, offset: int, producer_id: int | None = None
    ) -> None: ...

    def replay_marker(self, producer_id: int, commit: bool) -> None: ...


@dataclass
class _Write:
    """One step's append, kept until the runtime reports its fate."""

    first_seq: int
    records: list[Record]
    producer_id: int | None  # the records are this producer's transactional batch
    marker: tuple[int, int, bool] | None
    continuations: list[Continuation]
    # the domains that applied this write's records at write time -> their
    # snapshots; emptied once restored (its records then wait for durability)
    live: dict[Domain, Any]


class WriteTracker:
    """The writes in flight of one shard, by token (in append order)."""

    def __init__(self, log: Log, domains: Sequence[Domain]) -> None:
        self._log = log
        self._domains = tuple(domains)
        self._writes: dict[int, _Write] = {}
        self._next_token = 0

    def track(self, fx: Effects) -> int:
        """Hold this step's write (records, marker or continuations); its token."""
        token = self._next_token
        self._next_token += 1
        live = {}
        for domain in self._domains:
            snapshot = domain.snapshot(fx)
            if snapshot is not None:
                live[domain] = snapshot
        self._writes[token] = _Write(
            fx.first_seq,
            fx.records,
            None if fx.producer is None else fx.producer[0],
            fx.marker,
            fx.continuations,
            live,
        )
        return token

    def abandon(self, token: int, fx: Effects) -> None:
        """The latest append (write `token`) was refused at once: what it
        applied comes off the live state now, not once the earlier writes in
        flight complete (later steps would build on records the log never
        got). Its completion (`complete`, failed) still comes in order."""
        write = self._writes.get(token)
        if write is not None:
            self._restore([write], fx)

    def complete(
        self, token: int, error_code: int, effects: Callable[[], Effects]
    ) -> Effects | None:
        """Write `token` is durable (error_code 0): its records are replayed,
        but for those a domain applied at write time. Or it failed: the
        domains restore their snapshots of it and of every later write in
        flight (Kafka reverts to its last committed snapshot). Then its
        continuations run on `effects()` (made once durable state is
        replayed), which is returned; None for an unknown token."""
        write = self._writes.pop(token, None)
        if write is None:
            return None
        if error_code == E.NONE:
            live = write.live
            domain_of, replay = self._log.domain_of, self._log.replay
            for seq, (key, value) in enumerate(write.records, write.first_seq):
                if not live or domain_of(key) not in live:
                    replay(key, value, seq, write.producer_id)
            if write.marker is not None:
                producer_id, _epoch, commit = write.marker
                self._log.replay_marker(producer_id, commit)
            fx = effects()
        else:
            fx = effects()
            if write.live:
                later = [w for t, w in sorted(self._writes.items()) if t > token]
                self._restore([*reversed(later), write], fx)
        for continuation in write.continuations:
            continuation(error_code, fx)
        return fx

    def _restore(self, writes: list[_Write], fx: Effects) -> None:
        """Restore these writes' snapshots, in the order given, each domain
        once over all of its own."""
        snapshots: dict[Domain, list[Any]] = {}
        for write in writes:
            for domain, snapshot in write.live.items():
                snapshots.setdefault(domain, []).append(snapshot)
            write.live = {}
        for domain, taken in snapshots.items():
            domain.restore(taken, fx)
