"""One share partition: the records of one topic partition as one share
group hands them out (Kafka's SharePartition), pure: time is an argument.

Every offset in the in-flight window [spso, speo) has a state: AVAILABLE
(may be handed out), ACQUIRED (locked to one member until its deadline),
ACKNOWLEDGED (accepted) or ARCHIVED (rejected, past the delivery-count
limit, or not a record: a control record). The share-partition start
offset (SPSO) moves over the finished prefix; the end (SPEO) is the first
offset never handed out. Each hand-out counts a delivery; a record whose
lock expires or that is released goes back to AVAILABLE unless it has had
its deliveries, then it is ARCHIVED.

This is the serving state; what survives a restart is `durable.py`'s
(`__share_group_state`): every change of a record's state or count marks it
dirty, `take_changes` gives the dirty records as state batches for the next
write, and `from_state` rebuilds a share partition from what was written
(ACQUIRED is written as AVAILABLE: a lock does not outlive the broker).
Acquiring is not written (Kafka does not persist it either): after a crash
a record held then is handed out again with the count it had last written.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import IntEnum


class RecordState(IntEnum):
    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AckType(IntEnum):
    """ShareAcknowledge's AcknowledgeTypes (v2 adds RENEW)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


@dataclass(slots=True)
class InFlight:
    state: RecordState = RecordState.AVAILABLE
    delivery_count: int = 0
    member: str = ""
    deadline: int = 0  # lock deadline (ms) while ACQUIRED


@dataclass(frozen=True, slots=True)
class Batch:
    """What acquiring needs of one log batch: its offsets and whether it is a
    gap (no records to hand out: a control batch, or under read_committed an
    aborted transaction's batch)."""

    base: int
    last: int
    control: bool = False  # a gap: finished as soon as the window reaches it


INVALID_RECORD_STATE = 121
INVALID_REQUEST = 42


@dataclass
class SharePartition:
    spso: int
    speo: int
    delivery_limit: int = 5
    lock_ms: int = 30000
    max_locks: int = 2000
    records: dict[int, InFlight] = field(default_factory=dict)
    dirty: set[int] = field(default_factory=set)  # changed since the last write
    written_spso: int | None = None  # the SPSO last written (None: nothing yet)

    # ---- the window ---------------------------------------------------------

    def expire(self, now: int) -> None:
        """Locks past their deadline go back (or are archived at the limit)."""
        for offset, rec in self.records.items():
            if rec.state is RecordState.ACQUIRED and rec.deadline <= now:
                self._release(rec)
                self.dirty.add(offset)
        self._advance()

    def first_available(self) -> int | None:
        """Where the next hand-out starts: the first AVAILABLE offset in the
        window, else the end (None: the window is full of locks)."""
        for offset in range(self.spso, self.speo):
            rec = self.records.get(offset)
            if rec is not None and rec.state is RecordState.AVAILABLE:
                return offset
        return self.speo if self.speo - self.spso < self.max_locks else None

    def acquire(
        self, member: str, batches: Iterable[Batch], start: int, max_records: int, now: int
    ) -> list[tuple[int, int, int]]:
        """Hand out up to `max_records` records of `batches` (read from `start`)
        to `member`: [(first, last, delivery count)], contiguous runs with one count."""
        runs: list[tuple[int, int, int]] = []
        taken = 0
        for batch in batches:
            if taken >= max_records:
                break
            for offset in range(max(batch.base, start, self.spso), batch.last + 1):
                if offset >= self.speo:
                    if offset - self.spso >= self.max_locks:
                        break
                    # offsets the log no longer has (compacted) are finished
                    for gone in range(self.speo, offset):
                        self.records[gone] = InFlight(RecordState.ARCHIVED)
                    self.speo = offset + 1
                    self.records[offset] = InFlight()
                    if batch.control:  # a marker is no record: finished at once
                        self.records[offset].state = RecordState.ARCHIVED
                        continue
                if taken >= max_records:
                    break
                rec = self.records.get(offset)
                if batch.control or rec is None or rec.state is not RecordState.AVAILABLE:
                    continue
                rec.state = RecordState.ACQUIRED
                rec.delivery_count += 1
                rec.member = member
                rec.deadline = now + self.lock_ms
                taken += 1
                if runs and runs[-1][1] == offset - 1 and runs[-1][2] == rec.delivery_count:
                    runs[-1] = (runs[-1][0], offset, rec.delivery_count)
                else:
                    runs.append((offset, offset, rec.delivery_count))
        self._advance()
        return runs

    # ---- acknowledgements --------------------------------------------------

    def acknowledge(
        self, member: str, first: int, last: int, types: tuple[int, ...], now: int
    ) -> int:
        """One acknowledgement batch: one type for the range, or one per
        offset. Returns an error code (0: done). Nothing changes on an error
        but locks past their deadline: they end first, so an acknowledgement
        that comes after its lock expired finds the record no longer held
        (INVALID_RECORD_STATE, as Kafka's lock timer would have it)."""
        self.expire(now)
        if last < first or (len(types) not in (1, last - first + 1)):
            return INVALID_REQUEST
        if any(t not in AckType._value2member_map_ for t in types):
            return INVALID_REQUEST
        pairs = list(zip(range(first, last + 1), _types(types, last - first + 1), strict=True))
        for offset, kind in pairs:
            rec = self.records.get(offset)
            if offset < self.spso:
                if kind == AckType.GAP:
                    continue
                return INVALID_RECORD_STATE
            if rec is None:
                return INVALID_RECORD_STATE
            if kind == AckType.GAP:
                continue
            if rec.state is not RecordState.ACQUIRED or rec.member != member:
                return INVALID_RECORD_STATE
        for offset, kind in pairs:
            rec = self.records.get(offset)
            if rec is None or offset < self.spso:
                continue
            if kind != AckType.RENEW:
                self.dirty.add(offset)
            if kind == AckType.GAP:
                if rec.state in (RecordState.ACQUIRED, RecordState.AVAILABLE):
                    rec.state = RecordState.ARCHIVED
            elif kind == AckType.ACCEPT:
                rec.state = RecordState.ACKNOWLEDGED
            elif kind == AckType.RELEASE:
                self._release(rec)
            elif kind == AckType.REJECT:
                rec.state = RecordState.ARCHIVED
            elif kind == AckType.RENEW:
                rec.deadline = now + self.lock_ms
        self._advance()
        return 0

    def release_member(self, member: str) -> None:
        """A member's share session ended: its locks go back (Kafka's
        releaseAcquiredRecords on session close)."""
        for offset, rec in self.records.items():
            if rec.state is RecordState.ACQUIRED and rec.member == member:
                self._release(rec)
                self.dirty.add(offset)
        self._advance()

    # ---- durability --------------------------------------------------------

    def needs_write(self) -> bool:
        return bool(self.dirty) or self.written_spso != self.spso

    def take_changes(self) -> list[tuple[int, int, int, int]]:
        """The dirty records still in the window as state batches
        (first, last, delivery state, count), contiguous runs; clears them."""
        out: list[tuple[int, int, int, int]] = []
        for offset in sorted(self.dirty):
            rec = self.records.get(offset)
            if rec is None or offset < self.spso:
                continue  # finished and passed: the SPSO says so
            state = RecordState.AVAILABLE if rec.state is RecordState.ACQUIRED else rec.state
            if out and out[-1][1] == offset - 1 and out[-1][2:] == (state, rec.delivery_count):
                out[-1] = (out[-1][0], offset, int(state), rec.delivery_count)
            else:
                out.append((offset, offset, int(state), rec.delivery_count))
        self.dirty.clear()
        self.written_spso = self.spso
        return out

    @classmethod
    def from_state(
        cls,
        spso: int,
        batches: Iterable[tuple[int, int, int, int]],
        delivery_limit: int = 5,
        lock_ms: int = 30000,
        max_locks: int = 2000,
    ) -> SharePartition:
        """A share partition as written: the window runs to the last written
        batch; every record in it not written is AVAILABLE, never delivered."""
        sp = cls(spso, spso, delivery_limit, lock_ms, max_locks, written_spso=spso)
        for first, last, state, count in batches:
            for offset in range(max(first, spso), last + 1):
                # written states are AVAILABLE, ACKNOWLEDGED, ARCHIVED; a lock
                # (or a state this broker does not know) comes back available
                done = state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
                kept = RecordState(state) if done else RecordState.AVAILABLE
                sp.records[offset] = InFlight(kept, count)
                sp.speo = max(sp.speo, offset + 1)
        for offset in range(spso, sp.speo):
            sp.records.setdefault(offset, InFlight())
        sp._advance()
        return sp

    # ---- inspection --------------------------------------------------------

    def counts(self) -> dict[str, int]:
        out = {s.name.lower(): 0 for s in RecordState}
        for rec in self.records.values():
            out[rec.state.name.lower()] += 1
        return out

    def acquired(self) -> Iterator[tuple[int, InFlight]]:
        return ((o, r) for o, r in self.records.items() if r.state is RecordState.ACQUIRED)

    # ---- internals ---------------------------------------------------------

    def _release(self, rec: InFlight) -> None:
        rec.member = ""
        rec.deadline = 0
        done = rec.delivery_count >= self.delivery_limit
        rec.state = RecordState.ARCHIVED if done else RecordState.AVAILABLE

    def _advance(self) -> None:
        """The SPSO moves over the finished prefix (never back)."""
        while self.spso < self.speo:
            rec = self.records.get(self.spso)
            if rec is None or rec.state not in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED):
                break
            del self.records[self.spso]
            self.spso += 1


def _types(types: tuple[int, ...], n: int) -> tuple[int, ...]:
    return types if len(types) == n else types * n
