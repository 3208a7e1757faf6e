"""The transaction coordinator's state machine, without I/O or a clock.

One `TxnMetadata` per transactional id, moved through Kafka's states
(TransactionState.scala): Empty -> Ongoing -> PrepareCommit|PrepareAbort ->
CompleteCommit|CompleteAbort -> Ongoing ... Each function takes the current
metadata and the request, and returns an error code and the metadata to
persist next; the service writes that to `__transaction_state`, writes the
markers a Prepare state calls for, and only then answers.

Two simplifications against Kafka, both invisible to clients: the
coordinator answers EndTxn after the markers are written (Kafka answers after
PrepareX is durable and then refuses the next AddPartitionsToTxn with
CONCURRENT_TRANSACTIONS until they are), and InitProducerId for an id with
an open transaction aborts it in the same call (Kafka answers
CONCURRENT_TRANSACTIONS and lets the client retry).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import IntEnum

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_REQUEST = 42
INVALID_PRODUCER_EPOCH = 47
INVALID_TXN_STATE = 48
INVALID_PRODUCER_ID_MAPPING = 49
INVALID_TRANSACTION_TIMEOUT = 50
CONCURRENT_TRANSACTIONS = 51
OPERATION_NOT_ATTEMPTED = 55
PRODUCER_FENCED = 90

MAX_EPOCH = 32767  # producer epochs are int16
NO_PRODUCER_ID = -1


class TxnStatus(IntEnum):
    """Kafka's transaction states, with the ids of the transaction log."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7


PREPARING = (TxnStatus.PREPARE_COMMIT, TxnStatus.PREPARE_ABORT)
COMPLETED = (TxnStatus.COMPLETE_COMMIT, TxnStatus.COMPLETE_ABORT)


@dataclass(frozen=True)
class TxnMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    status: TxnStatus
    partitions: frozenset[tuple[str, int]] = frozenset()
    start_ms: int = -1
    last_update_ms: int = -1
    # what InitProducerId handed out before, so that its retry (KIP-360,
    # v3+) is recognised; kept in memory only, as Kafka's v0 log value does
    last_producer_id: int = NO_PRODUCER_ID
    last_producer_epoch: int = -1

    def with_(self, **changes: object) -> TxnMetadata:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


@dataclass(frozen=True)
class InitPlan:
    error: int
    # an open transaction that must be aborted first (fenced with epoch + 1)
    abort_first: TxnMetadata | None = None
    final: TxnMetadata | None = None


def init_producer_id(
    meta: TxnMetadata | None,
    transactional_id: str,
    timeout_ms: int,
    max_timeout_ms: int,
    expected: tuple[int, int] | None,
    now_ms: int,
    new_producer_id: int,
) -> InitPlan:
    """InitProducerId with a transactional id. `expected` is the (id, epoch)
    a v3+ client sends to keep its producer id; `new_producer_id` is used
    when the id is new or its epoch is exhausted."""
    if not transactional_id:
        return InitPlan(INVALID_REQUEST)
    if timeout_ms <= 0 or timeout_ms > max_timeout_ms:
        return InitPlan(INVALID_TRANSACTION_TIMEOUT)
    if meta is None or meta.status == TxnStatus.DEAD:
        final = TxnMetadata(
            transactional_id,
            new_producer_id,
            0,
            timeout_ms,
            TxnStatus.EMPTY,
            frozenset(),
            -1,
            now_ms,
        )
        return InitPlan(NONE, final=final)
    if expected is not None:
        pid, epoch = expected
        retry = pid == meta.last_producer_id and epoch == meta.last_producer_epoch
        if retry and meta.status not in (TxnStatus.ONGOING, *PREPARING):
            return InitPlan(NONE, final=meta)
        if pid != meta.producer_id or epoch != meta.producer_epoch:
            return InitPlan(PRODUCER_FENCED)
    if meta.status in PREPARING:
        return InitPlan(CONCURRENT_TRANSACTIONS)
    abort_first = None
    current = meta
    if meta.status == TxnStatus.ONGOING:
        abort_first = fence_and_abort(meta, now_ms)
        current = complete(abort_first, now_ms)
    if current.producer_epoch + 1 >= MAX_EPOCH:
        pid, epoch = new_producer_id, 0
    else:
        pid, epoch = current.producer_id, current.producer_epoch + 1
    final = current.with_(
        producer_id=pid,
        producer_epoch=epoch,
        timeout_ms=timeout_ms,
        status=TxnStatus.EMPTY,
        partitions=frozenset(),
        start_ms=-1,
        last_update_ms=now_ms,
        last_producer_id=meta.producer_id,
        last_producer_epoch=meta.producer_epoch,
    )
    return InitPlan(NONE, abort_first, final)


def check_producer(meta: TxnMetadata | None, producer_id: int, producer_epoch: int) -> int:
    """The producer id/epoch check every transactional request starts with."""
    if meta is None or meta.status == TxnStatus.DEAD or meta.producer_id != producer_id:
        return INVALID_PRODUCER_ID_MAPPING
    if producer_epoch != meta.producer_epoch or meta.status == TxnStatus.PREPARE_EPOCH_FENCE:
        return PRODUCER_FENCED
    return NONE


def add_partitions(
    meta: TxnMetadata | None,
    producer_id: int,
    producer_epoch: int,
    partitions: frozenset[tuple[str, int]],
    now_ms: int,
) -> tuple[int, TxnMetadata | None]:
    """(error, metadata to persist or None when nothing changes)."""
    error = check_producer(meta, producer_id, producer_epoch)
    if error:
        return error, None
    assert meta is not None
    if meta.status in PREPARING:
        return CONCURRENT_TRANSACTIONS, None
    if meta.status == TxnStatus.ONGOING and partitions <= meta.partitions:
        return NONE, None
    if meta.status == TxnStatus.ONGOING:
        return NONE, meta.with_(partitions=meta.partitions | partitions, last_update_ms=now_ms)
    return NONE, meta.with_(
        status=TxnStatus.ONGOING, partitions=partitions, start_ms=now_ms, last_update_ms=now_ms
    )


@dataclass(frozen=True)
class EndPlan:
    error: int
    prepare: TxnMetadata | None = None  # persist, write markers, then complete()


def end_txn(
    meta: TxnMetadata | None, producer_id: int, producer_epoch: int, commit: bool, now_ms: int
) -> EndPlan:
    error = check_producer(meta, producer_id, producer_epoch)
    if error:
        return EndPlan(error)
    assert meta is not None
    wanted_complete = TxnStatus.COMPLETE_COMMIT if commit else TxnStatus.COMPLETE_ABORT
    wanted_prepare = TxnStatus.PREPARE_COMMIT if commit else TxnStatus.PREPARE_ABORT
    if meta.status == TxnStatus.ONGOING:
        return EndPlan(NONE, meta.with_(status=wanted_prepare, last_update_ms=now_ms))
    if meta.status == wanted_complete:
        return EndPlan(NONE)  # a retry of the EndTxn that finished it
    if meta.status == wanted_prepare:
        return EndPlan(CONCURRENT_TRANSACTIONS)
    return EndPlan(INVALID_TXN_STATE)


def fence_and_abort(meta: TxnMetadata, now_ms: int) -> TxnMetadata:
    """An open transaction aborted by the coordinator (timeout, or a new
    producer with the same id): the epoch is bumped so that the old producer
    is fenced, and its markers carry the new epoch."""
    epoch = meta.producer_epoch + 1 if meta.producer_epoch + 1 < MAX_EPOCH else meta.producer_epoch
    return meta.with_(producer_epoch=epoch, status=TxnStatus.PREPARE_ABORT, last_update_ms=now_ms)


def complete(meta: TxnMetadata, now_ms: int) -> TxnMetadata:
    """PrepareX -> CompleteX once every marker is written."""
    done = (
        TxnStatus.COMPLETE_COMMIT
        if meta.status == TxnStatus.PREPARE_COMMIT
        else TxnStatus.COMPLETE_ABORT
    )
    return meta.with_(status=done, partitions=frozenset(), last_update_ms=now_ms)


def timed_out(metas: list[TxnMetadata], now_ms: int) -> list[TxnMetadata]:
    """Open transactions older than their timeout (Kafka aborts these)."""
    return [
        m
        for m in metas
        if m.status == TxnStatus.ONGOING and m.start_ms >= 0 and m.start_ms + m.timeout_ms < now_ms
    ]
