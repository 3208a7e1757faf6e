"""Committed offsets as state: the record-derived values and the apply
rules every replay uses (`put_committed`, `drop_committed`)."""

from __future__ import annotations

from dataclasses import dataclass, field

TP = tuple[str, int]


@dataclass(slots=True)
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int  # -1 when none (current clients)
    record_seq: int  # position of the record holding it (log offset on replay)


@dataclass
class GroupOffsets:
    """One group's offsets. `committed` and `txn` are durable state: only
    `OffsetManager.replay_*` change them, for a record appended live or read
    at load. `pending` and `deleting` are transient (never in a record): what
    this shard has appended and not yet seen become durable or fail."""

    committed: dict[TP, CommittedOffset] = field(default_factory=dict)
    # transactional offsets per producer id, durable but not committed until
    # the producer's marker (Kafka's pendingTransactionalOffsetCommits)
    txn: dict[int, dict[TP, CommittedOffset]] = field(default_factory=dict)
    # commits in flight: partition -> their write tokens (unstable, never expire)
    pending: dict[TP, set[int]] = field(default_factory=dict)
    # tombstones in flight: partition -> their record sequences; a committed
    # offset older than one of them is hidden until that append fails
    deleting: dict[TP, set[int]] = field(default_factory=dict)

    def visible(self, tp: TP) -> CommittedOffset | None:
        c = self.committed.get(tp)
        if c is None or not self.deleting:
            return c
        seqs = self.deleting.get(tp)
        return None if seqs and c.record_seq < max(seqs) else c

    def visible_items(self) -> list[tuple[TP, CommittedOffset]]:
        if not self.deleting:
            return list(self.committed.items())
        return [(tp, c) for tp in self.committed if (c := self.visible(tp)) is not None]

    def has_any(self) -> bool:
        """Offsets that keep an Empty group alive (committed, in flight or transactional)."""
        if self.pending or self.txn:
            return True
        return any(self.visible(tp) is not None for tp in self.committed)

    def idle(self) -> bool:
        return not (self.committed or self.txn or self.pending or self.deleting)


def put_committed(committed: dict[TP, CommittedOffset], tp: TP, c: CommittedOffset) -> None:
    """An OffsetCommit value: the newer record (by log position) wins."""
    current = committed.get(tp)
    if current is None or current.record_seq < c.record_seq:
        committed[tp] = c


def drop_committed(committed: dict[TP, CommittedOffset], tp: TP, seq: int) -> None:
    """An OffsetCommit tombstone at `seq` removes what was written before it."""
    current = committed.get(tp)
    if current is not None and current.record_seq < seq:
        del committed[tp]
