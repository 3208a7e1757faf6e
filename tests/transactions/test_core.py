"""The transaction coordinator's state machine (Kafka's TransactionCoordinator
rules), without I/O: every transition a client can cause."""

from __future__ import annotations

from muster.records.transaction_log import (
    decode_txn_key,
    decode_txn_value,
    encode_txn_key,
    encode_txn_value,
    value_partitions,
)
from muster.transactions import core
from muster.transactions.core import TxnMetadata, TxnStatus

MAX = 900_000
T0 = 1_000


def init(meta: TxnMetadata | None, *, timeout: int = 60_000, expected=None, now: int = T0):
    return core.init_producer_id(meta, "tx", timeout, MAX, expected, now, new_producer_id=77)


def ongoing(parts=frozenset({("t", 0)})) -> TxnMetadata:
    meta = init(None).final
    error, meta = core.add_partitions(meta, 77, 0, frozenset(parts), T0 + 1)
    assert error == core.NONE and meta is not None
    return meta


def test_first_init_allocates_a_producer_id_at_epoch_zero() -> None:
    plan = init(None)
    assert plan.error == core.NONE and plan.abort_first is None
    assert plan.final is not None
    assert (plan.final.producer_id, plan.final.producer_epoch) == (77, 0)
    assert plan.final.status == TxnStatus.EMPTY and plan.final.timeout_ms == 60_000


def test_init_validates_id_and_timeout() -> None:
    assert core.init_producer_id(None, "", 1000, MAX, None, T0, 1).error == core.INVALID_REQUEST
    assert init(None, timeout=MAX + 1).error == core.INVALID_TRANSACTION_TIMEOUT
    assert init(None, timeout=0).error == core.INVALID_TRANSACTION_TIMEOUT


def test_reinit_bumps_the_epoch_and_keeps_the_producer_id() -> None:
    first = init(None).final
    second = init(first).final
    assert second is not None
    assert (second.producer_id, second.producer_epoch) == (77, 1)
    # the old producer's requests are now fenced
    assert core.check_producer(second, 77, 0) == core.PRODUCER_FENCED
    assert core.check_producer(second, 78, 1) == core.INVALID_PRODUCER_ID_MAPPING


def test_reinit_with_an_open_transaction_aborts_it_under_a_fencing_epoch() -> None:
    meta = ongoing()
    plan = init(meta)
    assert plan.abort_first is not None
    assert plan.abort_first.status == TxnStatus.PREPARE_ABORT
    assert plan.abort_first.producer_epoch == 1  # markers fence epoch 0
    assert plan.abort_first.partitions == {("t", 0)}
    assert plan.final is not None and plan.final.producer_epoch == 2
    assert plan.final.status == TxnStatus.EMPTY and not plan.final.partitions


def test_epoch_exhaustion_moves_to_a_new_producer_id() -> None:
    meta = init(None).final.with_(producer_epoch=core.MAX_EPOCH - 1)
    final = core.init_producer_id(meta, "tx", 1000, MAX, None, T0, 99).final
    assert final is not None and (final.producer_id, final.producer_epoch) == (99, 0)


def test_kip360_retry_and_stale_expected_epoch() -> None:
    first = init(None).final
    second = init(first, expected=(77, 0)).final
    assert second is not None and second.producer_epoch == 1
    # the same request again (its answer was lost): same id and epoch back
    again = init(second, expected=(77, 0))
    assert again.error == core.NONE and again.final == second
    assert init(second, expected=(77, 5)).error == core.PRODUCER_FENCED


def test_add_partitions_starts_and_widens_a_transaction() -> None:
    meta = ongoing()
    assert meta.status == TxnStatus.ONGOING and meta.start_ms == T0 + 1
    error, same = core.add_partitions(meta, 77, 0, frozenset({("t", 0)}), T0 + 2)
    assert error == core.NONE and same is None  # nothing new to persist
    error, wider = core.add_partitions(meta, 77, 0, frozenset({("u", 1)}), T0 + 3)
    assert wider is not None and wider.partitions == {("t", 0), ("u", 1)}
    assert wider.start_ms == T0 + 1
    assert core.add_partitions(meta, 77, 1, frozenset(), T0)[0] == core.PRODUCER_FENCED
    assert core.add_partitions(None, 77, 0, frozenset(), T0)[0] == core.INVALID_PRODUCER_ID_MAPPING


def test_end_txn_transitions_and_retries() -> None:
    meta = ongoing()
    plan = core.end_txn(meta, 77, 0, True, T0 + 5)
    assert plan.error == core.NONE and plan.prepare is not None
    assert plan.prepare.status == TxnStatus.PREPARE_COMMIT
    # while markers are being written
    assert core.end_txn(plan.prepare, 77, 0, True, T0).error == core.CONCURRENT_TRANSACTIONS
    assert core.end_txn(plan.prepare, 77, 0, False, T0).error == core.INVALID_TXN_STATE
    assert core.add_partitions(plan.prepare, 77, 0, frozenset(), T0)[0] == (
        core.CONCURRENT_TRANSACTIONS
    )
    done = core.complete(plan.prepare, T0 + 6)
    assert done.status == TxnStatus.COMPLETE_COMMIT and not done.partitions
    assert core.end_txn(done, 77, 0, True, T0).error == core.NONE  # retried commit
    assert core.end_txn(done, 77, 0, False, T0).error == core.INVALID_TXN_STATE
    empty = init(None).final
    assert core.end_txn(empty, 77, 0, True, T0).error == core.INVALID_TXN_STATE
    # a completed transaction can be followed by the next one
    error, nxt = core.add_partitions(done, 77, 0, frozenset({("t", 1)}), T0 + 7)
    assert error == core.NONE
    assert nxt is not None and nxt.status == TxnStatus.ONGOING and nxt.start_ms == T0 + 7


def test_timed_out_transactions_are_found_and_fenced() -> None:
    meta = ongoing()
    assert core.timed_out([meta], T0 + 1 + 60_000) == []
    assert core.timed_out([meta], T0 + 2 + 60_000) == [meta]
    fenced = core.fence_and_abort(meta, T0)
    assert fenced.status == TxnStatus.PREPARE_ABORT and fenced.producer_epoch == 1
    assert core.check_producer(fenced, 77, 0) == core.PRODUCER_FENCED


def test_transaction_log_records_round_trip_in_kafkas_layout() -> None:
    key = encode_txn_key("tx-1")
    assert key == b"\x00\x00\x00\x04tx-1"  # version 0, int16 length, UTF-8
    assert decode_txn_key(key) == "tx-1"
    value = encode_txn_value(5, 2, 60_000, 1, {("b", 3), ("a", 1), ("a", 0)}, 10, 9)
    # version, pid, epoch, timeout, status, 2 topics: a [0, 1], b [3], update ts, start ts
    assert value[:17] == bytes.fromhex("0000000000000000000500020000ea6001")
    decoded = decode_txn_value(value)
    assert value_partitions(decoded) == {("a", 0), ("a", 1), ("b", 3)}
    assert decoded.transaction_last_update_timestamp_ms == 10
    assert decoded.transaction_start_timestamp_ms == 9
