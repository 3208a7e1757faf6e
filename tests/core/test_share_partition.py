"""One share partition (`muster.share.partition`): records handed out under
locks, acknowledged, released, rejected, renewed; lock expiry; the
delivery-count limit; the SPSO moving over the finished prefix; control
records as finished gaps; the in-flight cap."""

from __future__ import annotations

from muster.share.partition import (
    INVALID_RECORD_STATE,
    INVALID_REQUEST,
    AckType,
    Batch,
    RecordState,
    SharePartition,
)

ACCEPT, RELEASE, REJECT, RENEW, GAP = (
    AckType.ACCEPT,
    AckType.RELEASE,
    AckType.REJECT,
    AckType.RENEW,
    AckType.GAP,
)


def sp(**kw: int) -> SharePartition:
    return SharePartition(0, 0, **kw)


def test_acquire_then_accept_moves_the_start() -> None:
    p = sp()
    assert p.acquire("a", [Batch(0, 4)], 0, 10, now=0) == [(0, 4, 1)]
    assert p.speo == 5 and p.first_available() == 5
    assert p.acknowledge("a", 0, 2, (ACCEPT,), now=1) == 0
    assert p.spso == 3
    # per-offset types: 3 accepted, 4 released (available again, counted once)
    assert p.acknowledge("a", 3, 4, (ACCEPT, RELEASE), now=1) == 0
    assert p.spso == 4 and p.first_available() == 4
    assert p.acquire("b", [Batch(4, 4)], 4, 10, now=2) == [(4, 4, 2)]


def test_max_records_and_another_member() -> None:
    p = sp()
    assert p.acquire("a", [Batch(0, 9)], 0, 3, now=0) == [(0, 2, 1)]
    assert p.acquire("b", [Batch(0, 9)], p.first_available() or 0, 3, now=0) == [(3, 5, 1)]
    # b may not acknowledge a's records
    assert p.acknowledge("b", 0, 0, (ACCEPT,), now=0) == INVALID_RECORD_STATE
    assert p.acknowledge("a", 0, 5, (ACCEPT,), now=0) == INVALID_RECORD_STATE  # 3-5 are b's
    assert p.records[0].state is RecordState.ACQUIRED  # nothing changed on an error


def test_lock_expiry_and_the_delivery_limit() -> None:
    p = sp(delivery_limit=2, lock_ms=100)
    p.acquire("a", [Batch(0, 0)], 0, 1, now=0)
    p.expire(now=100)
    assert p.records[0].state is RecordState.AVAILABLE
    assert p.acquire("a", [Batch(0, 0)], 0, 1, now=100) == [(0, 0, 2)]
    p.expire(now=200)  # the second delivery's lock expired: archived at the limit
    assert p.spso == 1 and p.records == {}


def test_an_acknowledgement_after_its_lock_expired_is_refused() -> None:
    """librdkafka 0173 do_test_lock_timeout_redelivery: an implicit ACCEPT
    sent after the lock expired must not finish the record; it comes back."""
    p = sp(lock_ms=100)
    p.acquire("a", [Batch(0, 1)], 0, 10, now=0)
    assert p.acknowledge("a", 0, 1, (ACCEPT,), now=100) == INVALID_RECORD_STATE
    assert p.acknowledge("a", 0, 0, (RENEW,), now=150) == INVALID_RECORD_STATE
    assert p.spso == 0
    assert p.acquire("a", [Batch(0, 1)], 0, 10, now=150) == [(0, 1, 2)]


def test_reject_archives_and_renew_extends_the_lock() -> None:
    p = sp(lock_ms=100)
    p.acquire("a", [Batch(0, 1)], 0, 10, now=0)
    assert p.acknowledge("a", 0, 0, (REJECT,), now=0) == 0
    assert p.acknowledge("a", 1, 1, (RENEW,), now=90) == 0
    p.expire(now=150)
    assert p.records[1].state is RecordState.ACQUIRED
    assert p.spso == 1


def test_control_batches_are_finished_gaps() -> None:
    p = sp()
    runs = p.acquire("a", [Batch(0, 1), Batch(2, 2, control=True), Batch(3, 3)], 0, 10, now=0)
    assert runs == [(0, 1, 1), (3, 3, 1)]
    assert p.acknowledge("a", 0, 3, (ACCEPT, ACCEPT, GAP, ACCEPT), now=0) == 0
    assert p.spso == 4


def test_bad_acknowledgements() -> None:
    p = sp()
    p.acquire("a", [Batch(0, 3)], 0, 10, now=0)
    assert p.acknowledge("a", 2, 1, (ACCEPT,), now=0) == INVALID_REQUEST
    assert p.acknowledge("a", 0, 3, (ACCEPT, ACCEPT), now=0) == INVALID_REQUEST
    assert p.acknowledge("a", 0, 0, (9,), now=0) == INVALID_REQUEST
    assert p.acknowledge("a", 7, 7, (ACCEPT,), now=0) == INVALID_RECORD_STATE


def test_the_in_flight_window_is_capped_and_a_session_end_releases() -> None:
    p = sp(max_locks=3)
    assert p.acquire("a", [Batch(0, 9)], 0, 10, now=0) == [(0, 2, 1)]
    assert p.first_available() is None  # full of locks
    p.release_member("a")
    assert p.first_available() == 0 and p.counts()["available"] == 3
