"""Idempotent-producer state of one partition (Kafka's ProducerStateManager).

Per producer id: its epoch and the metadata of its last 5 batches. A retry of
one of those is a duplicate (answered with the original offsets, not written);
a sequence gap is OutOfOrderSequence; an older epoch is fenced; a new epoch
must start at sequence 0. The state is rebuilt on open by replaying batch
headers; a clean shutdown also leaves a snapshot (`to_json`/`from_json`)
so a restart need not scan.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from muster.log.port import InvalidProducerEpochError, OutOfOrderSequenceError
from muster.records.batch import CONTROL_MASK, BatchHeader

MAX_CACHED_BATCHES = 5
_INT32_MASK = 0x7FFFFFFF


@dataclass(frozen=True, slots=True)
class BatchMeta:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int  # log append time of the original, -1 for CreateTime


@dataclass(slots=True)
class ProducerEntry:
    epoch: int
    batches: deque[BatchMeta] = field(default_factory=lambda: deque(maxlen=MAX_CACHED_BATCHES))
    last_timestamp: int = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1


class ProducerStateManager:
    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}

    def check(
        self, h: BatchHeader, pending: dict[int, ProducerEntry] | None = None
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
        if epoch > entry.epoch:
            if first_seq != 0:
                raise OutOfOrderSequenceError(
                    f"producer {h.producer_id}: new epoch {epoch} must start at sequence 0,"
                    f" got {first_seq}"
                )
            return None
        last_seq = h.last_sequence
        for meta in entry.batches:
            if meta.first_seq == first_seq and meta.last_seq == last_seq:
                return meta
        expected = (entry.last_seq + 1) & _INT32_MASK if entry.batches else first_seq
        if first_seq != expected:
            raise OutOfOrderSequenceError(
                f"producer {h.producer_id}: expected sequence {expected}, got {first_seq}"
            )
        return None

    def stage(
        self,
        h: BatchHeader,
        first_offset: int,
        timestamp: int,
        pending: dict[int, ProducerEntry],
    ) -> None:
        """Records the batch in `pending` (a copy-on-write overlay of the state)."""
        if h.producer_id < 0:
            return
        entry = pending.get(h.producer_id)
        if entry is None:
            current = self.producers.get(h.producer_id)
            entry = ProducerEntry(h.producer_epoch)
            if current is not None and current.epoch == h.producer_epoch:
                entry.batches.extend(current.batches)
            pending[h.producer_id] = entry
        if h.producer_epoch != entry.epoch:
            entry.epoch = h.producer_epoch
            entry.batches.clear()
        if h.attributes & CONTROL_MASK or h.base_sequence < 0:
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

    def replay(self, h: BatchHeader) -> None:
        """Loads a stored batch (recovery): no checks, offsets from the header."""
        if h.producer_id < 0:
            return
        pending: dict[int, ProducerEntry] = {}
        ts = h.max_timestamp if h.timestamp_type else -1
        self.stage(h, h.base_offset, ts, pending)
        self.commit(pending)

    def truncate(self) -> None:
        self.producers.clear()

    def to_json(self) -> dict[str, object]:
        return {
            str(pid): {
                "epoch": e.epoch,
                "last_timestamp": e.last_timestamp,
                "batches": [
                    [m.first_seq, m.last_seq, m.first_offset, m.last_offset, m.timestamp]
                    for m in e.batches
                ],
            }
            for pid, e in self.producers.items()
        }

    def load_json(self, doc: dict[str, dict]) -> None:  # type: ignore[type-arg]
        self.producers.clear()
        for pid, raw in doc.items():
            entry = ProducerEntry(int(raw["epoch"]), last_timestamp=int(raw["last_timestamp"]))
            entry.batches.extend(BatchMeta(*map(int, b)) for b in raw["batches"])
            self.producers[int(pid)] = entry
