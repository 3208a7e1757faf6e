"""Idempotent and transactional producer state of one partition (Kafka's
ProducerStateManager).

Per producer id: its epoch, the metadata of its last 5 batches and the first
offset of its ongoing transaction here. A retry of one of those batches is a
duplicate (answered with the original offsets, not written); a sequence gap is
OutOfOrderSequence; an older epoch is fenced; a new epoch must start at
sequence 0, and so must the next batch after a marker bumped the epoch.

Transactions: a transactional batch from a producer with no ongoing
transaction here starts one at its first offset; a plain batch from a
producer inside one is INVALID_TXN_STATE. An end marker (`end_txn`) finishes
it; an aborted one is kept in `aborted` (Kafka's .txnindex), the offset ranges
a read_committed consumer must skip. The oldest ongoing transaction's first
offset is the partition's first unstable offset (what bounds the LSO); as in
Kafka, a finished transaction stays unstable until its marker is below the
high watermark, so no reader sees an outcome a crash could take back.

The state is rebuilt on open by replaying batch headers (and the one record of
each marker); snapshots (`to_json`/`load_json`) spare that scan.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter
from typing import Any, NamedTuple

from muster.log.port import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
)
from muster.records.batch import CONTROL_MASK, TRANSACTIONAL_MASK, BatchHeader
from muster.records.control import ABORT, COMMIT

MAX_CACHED_BATCHES = 5
_INT32_MASK = 0x7FFFFFFF


@dataclass(frozen=True, slots=True)
class BatchMeta:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int  # log append time of the original, -1 for CreateTime


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int  # the ABORT marker's offset
    # The LSO just after the marker. Every transaction aborted later starts at
    # or above it (it was ongoing then, or began after the marker), so a search
    # for transactions starting below `upper` can stop at the first entry
    # whose last_stable_offset >= upper (Kafka's AbortedTxn does the same).
    last_stable_offset: int


_last_offset = attrgetter("last_offset")


@dataclass(slots=True)
class ProducerEntry:
    epoch: int
    batches: deque[BatchMeta] = field(default_factory=lambda: deque(maxlen=MAX_CACHED_BATCHES))
    last_timestamp: int = -1
    txn_first_offset: int = -1  # first offset of its ongoing transaction here, -1 if none

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1


class ProducerStateManager:
    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}
        self.ongoing: dict[int, int] = {}  # producer id -> first offset of its transaction
        self.aborted: list[AbortedTxn] = []  # in marker (= last_offset) order
        # (marker offset, first offset) of finished transactions whose marker
        # may be above the high watermark, in marker order
        self.finishing: deque[tuple[int, int]] = deque()

    def check(
        self,
        h: BatchHeader,
        pending: dict[int, ProducerEntry] | None = None,
        check_sequence: bool = True,
    ) -> BatchMeta | None:
        """Validates `h` against the stored state (and batches staged earlier in
        the same request). Returns the original BatchMeta if it is a duplicate."""
        if h.producer_id < 0 or h.attributes & CONTROL_MASK:
            return None
        entry = (pending or {}).get(h.producer_id) or self.producers.get(h.producer_id)
        if entry is None:
            return None  # unknown producer (new, or its state expired): accept
        epoch, first_seq = h.producer_epoch, h.base_sequence
        if epoch < entry.epoch:
            raise InvalidProducerEpochError(
                f"producer {h.producer_id} epoch {epoch} is older than {entry.epoch}"
            )
        # a coordinator's batch (check_sequence False) has no sequence: only its epoch counts
        if check_sequence and epoch > entry.epoch:
            if first_seq != 0:
                raise OutOfOrderSequenceError(
                    f"producer {h.producer_id}: new epoch {epoch} must start at sequence 0,"
                    f" got {first_seq}"
                )
        elif check_sequence:
            last_seq = h.last_sequence
            for meta in entry.batches:
                if meta.first_seq == first_seq and meta.last_seq == last_seq:
                    return meta
            # A known epoch without batches was set by a marker: the sequence restarts.
            expected = (entry.last_seq + 1) & _INT32_MASK if entry.batches else 0
            if first_seq != expected:
                raise OutOfOrderSequenceError(
                    f"producer {h.producer_id}: expected sequence {expected}, got {first_seq}"
                )
        if entry.txn_first_offset >= 0 and not h.attributes & TRANSACTIONAL_MASK:
            raise InvalidTxnStateError(
                f"producer {h.producer_id} sent a non-transactional batch inside its"
                f" transaction (started at offset {entry.txn_first_offset})"
            )
        return None

    def stage(
        self,
        h: BatchHeader,
        first_offset: int,
        timestamp: int,
        pending: dict[int, ProducerEntry],
    ) -> None:
        """Records a data batch in `pending` (a copy-on-write overlay of the
        state); markers go through `end_txn` once written."""
        if h.producer_id < 0 or h.attributes & CONTROL_MASK:
            return
        entry = pending.get(h.producer_id)
        if entry is None:
            current = self.producers.get(h.producer_id)
            entry = ProducerEntry(h.producer_epoch)
            if current is not None:
                entry.txn_first_offset = current.txn_first_offset
                if current.epoch == h.producer_epoch:
                    entry.batches.extend(current.batches)
            pending[h.producer_id] = entry
        if h.producer_epoch != entry.epoch:
            entry.epoch = h.producer_epoch
            entry.batches.clear()
        if h.attributes & TRANSACTIONAL_MASK and entry.txn_first_offset < 0:
            entry.txn_first_offset = first_offset
        if h.base_sequence < 0:
            return
        entry.batches.append(
            BatchMeta(
                h.base_sequence,
                h.last_sequence,
                first_offset,
                first_offset + h.last_offset_delta,
                timestamp,
            )
        )
        entry.last_timestamp = h.max_timestamp

    def commit(self, pending: dict[int, ProducerEntry]) -> None:
        self.producers.update(pending)
        for pid, entry in pending.items():
            if entry.txn_first_offset >= 0:
                self.ongoing[pid] = entry.txn_first_offset

    def check_marker(self, producer_id: int, producer_epoch: int) -> None:
        entry = self.producers.get(producer_id)
        if entry is not None and producer_epoch < entry.epoch:
            raise InvalidProducerEpochError(
                f"marker for producer {producer_id} has epoch {producer_epoch},"
                f" older than {entry.epoch}"
            )

    def end_txn(self, producer_id: int, producer_epoch: int, commit: bool, offset: int) -> None:
        """Applies an end marker written at `offset` (checked by check_marker)."""
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = self.producers[producer_id] = ProducerEntry(producer_epoch)
        elif producer_epoch != entry.epoch:
            # a newer epoch fences the old one, and its sequences start over
            entry.epoch = producer_epoch
            entry.batches.clear()
        first = entry.txn_first_offset
        if first < 0:
            return  # no data of this transaction here: nothing to skip or wait for
        entry.txn_first_offset = -1
        self.ongoing.pop(producer_id, None)
        self.finishing.append((offset, first))
        if not commit:
            lso = min(self.ongoing.values(), default=offset + 1)
            self.aborted.append(AbortedTxn(producer_id, first, offset, lso))

    def first_unstable_offset(self, high_watermark: int | None = None) -> int | None:
        """With `high_watermark`, transactions whose marker is at or past it
        count as still open."""
        if not self.ongoing and not self.finishing:
            return None  # the common case, asked for every partition of every Fetch
        first = min(self.ongoing.values(), default=None)
        if high_watermark is None:
            return first
        self.settle(high_watermark)
        for _, txn_first in self.finishing:
            if first is None or txn_first < first:
                first = txn_first
        return first

    def settle(self, durable_offset: int) -> None:
        """Forgets finished transactions whose marker is below `durable_offset`."""
        finishing = self.finishing
        while finishing and finishing[0][0] < durable_offset:
            finishing.popleft()

    def aborted_between(self, fetch_offset: int, upper: int) -> list[tuple[int, int]]:
        """(producer id, first offset) of aborted transactions with last offset
        >= fetch_offset and first offset < upper, by first offset."""
        aborted = self.aborted
        found: list[tuple[int, int]] = []
        for i in range(bisect_left(aborted, fetch_offset, key=_last_offset), len(aborted)):
            txn = aborted[i]
            if txn.first_offset < upper:
                found.append((txn.producer_id, txn.first_offset))
            if txn.last_stable_offset >= upper:
                break
        found.sort(key=itemgetter(1))
        return found

    def prune(self, log_start_offset: int) -> None:
        """Forgets aborted transactions wholly below the log start (retention)."""
        n = bisect_left(self.aborted, log_start_offset, key=_last_offset)
        if n:
            del self.aborted[:n]

    def replay(self, h: BatchHeader, marker: int | None = None) -> None:
        """Loads a stored batch (recovery): no checks, offsets from the header.
        `marker` is a control batch's record type (ABORT, COMMIT, ...)."""
        if h.producer_id < 0:
            return
        if h.attributes & CONTROL_MASK:
            if marker in (ABORT, COMMIT):
                self.end_txn(h.producer_id, h.producer_epoch, marker == COMMIT, h.base_offset)
            return
        pending: dict[int, ProducerEntry] = {}
        ts = h.max_timestamp if h.timestamp_type else -1
        self.stage(h, h.base_offset, ts, pending)
        self.commit(pending)

    def truncate(self) -> None:
        self.producers.clear()
        self.ongoing.clear()
        self.aborted.clear()
        self.finishing.clear()

    def to_json(self) -> dict[str, Any]:
        return {
            "producers": {
                str(pid): {
                    "epoch": e.epoch,
                    "last_timestamp": e.last_timestamp,
                    "txn_first_offset": e.txn_first_offset,
                    "batches": [
                        [m.first_seq, m.last_seq, m.first_offset, m.last_offset, m.timestamp]
                        for m in e.batches
                    ],
                }
                for pid, e in self.producers.items()
            },
            "aborted": [list(txn) for txn in self.aborted],
        }

    def load_json(self, doc: dict[str, Any]) -> None:
        """Replaces the state with a `to_json` document; on a malformed one
        raises (KeyError, TypeError, ValueError) and leaves the state empty."""
        self.truncate()
        try:
            for pid, raw in doc["producers"].items():
                entry = ProducerEntry(
                    int(raw["epoch"]),
                    last_timestamp=int(raw["last_timestamp"]),
                    txn_first_offset=int(raw.get("txn_first_offset", -1)),
                )
                entry.batches.extend(BatchMeta(*map(int, b)) for b in raw["batches"])
                self.producers[int(pid)] = entry
                if entry.txn_first_offset >= 0:
                    self.ongoing[int(pid)] = entry.txn_first_offset
            self.aborted.extend(AbortedTxn(*map(int, t)) for t in doc.get("aborted", ()))
        except (KeyError, TypeError, ValueError, AttributeError):
            self.truncate()
            raise
