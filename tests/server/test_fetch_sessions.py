"""KIP-227 fetch sessions: the rules of Kafka's FetchManager, without a socket."""

from __future__ import annotations

import random
from types import SimpleNamespace

from kio.schema.errors import ErrorCode

from muster.server.fetch_sessions import (
    EVICTION_MS,
    FINAL_EPOCH,
    INITIAL_EPOCH,
    FetchSessionCache,
    plan_fetch,
)


def _req(partition: int, offset: int = 0) -> SimpleNamespace:
    return SimpleNamespace(partition=partition, fetch_offset=offset, partition_max_bytes=1 << 20)


def _entry(hwm: int, records: bytes = b"", error: ErrorCode = ErrorCode.none) -> dict:
    return {"records": records, "error_code": error, "high_watermark": hwm, "log_start_offset": 0}


def _open(cache: FetchSessionCache, parts: int, now: int = 0):
    requested = [("t", _req(i)) for i in range(parts)]
    plan = plan_fetch(cache, 0, INITIAL_EPOCH, False, requested, [], now)
    assert plan.session is not None and not plan.incremental
    assert plan.reads == requested
    for _topic, p in requested:  # the full answer tells the client every partition
        plan.session.partitions[("t", p.partition)].must_answer(_entry(5))
    return plan.session


def test_sessionless_full_fetch_creates_nothing() -> None:
    cache = FetchSessionCache(10)
    plan = plan_fetch(cache, 0, FINAL_EPOCH, False, [("t", _req(0))], [], 0)
    assert plan.session is None and len(cache) == 0 and len(plan.reads) == 1


def test_incremental_fetch_reads_the_whole_session_and_answers_only_news() -> None:
    cache = FetchSessionCache(10)
    session = _open(cache, 3)
    plan = plan_fetch(cache, session.id, 1, False, [], [], 10)
    assert plan.incremental and session.epoch == 2
    assert [p.partition for _t, p in plan.reads] == [0, 1, 2]
    cached = [p for _t, p in plan.reads]
    assert [c.must_answer(_entry(5)) for c in cached] == [False, False, False]
    assert cached[1].must_answer(_entry(6)) is True  # the high watermark moved
    assert cached[2].must_answer(_entry(5, b"batch")) is True
    assert cached[0].must_answer(_entry(-1, error=ErrorCode.offset_out_of_range)) is True


def test_changed_positions_update_the_session_and_forgotten_ones_leave() -> None:
    cache = FetchSessionCache(10)
    session = _open(cache, 3)
    plan = plan_fetch(cache, session.id, 1, False, [("t", _req(1, 40))], [("t", 2)], 10)
    assert [(p.partition, p.fetch_offset) for _t, p in plan.reads] == [(0, 0), (1, 40)]


def test_forgetting_every_partition_closes_the_session() -> None:
    cache = FetchSessionCache(10)
    session = _open(cache, 1)
    plan = plan_fetch(cache, session.id, 1, False, [], [("t", 0)], 10)
    assert plan.session is None and cache.get(session.id) is None


def test_wrong_epoch_unknown_id_and_topic_id_mismatch_are_kafkas_errors() -> None:
    cache = FetchSessionCache(10)
    session = _open(cache, 1)
    assert plan_fetch(cache, session.id, 7, False, [], [], 1).error == (
        ErrorCode.invalid_fetch_session_epoch
    )
    assert plan_fetch(cache, session.id + 1, 1, False, [], [], 1).error == (
        ErrorCode.fetch_session_id_not_found
    )
    assert plan_fetch(cache, session.id, 1, True, [], [], 1).error == (
        ErrorCode.fetch_session_topic_id_error
    )
    # the errors left the session as it was
    assert plan_fetch(cache, session.id, 1, False, [], [], 1).incremental


def test_final_epoch_closes_the_session() -> None:
    cache = FetchSessionCache(10)
    session = _open(cache, 2)
    plan = plan_fetch(cache, session.id, FINAL_EPOCH, False, [("t", _req(0))], [], 1)
    assert plan.session is None and cache.get(session.id) is None


def test_full_cache_evicts_a_stale_session_only() -> None:
    cache = FetchSessionCache(1, random.Random(1))
    first = _open(cache, 2, now=0)
    refused = plan_fetch(cache, 0, INITIAL_EPOCH, False, [("t", _req(0))], [], 1000)
    assert refused.session is None and cache.get(first.id) is not None
    later = plan_fetch(cache, 0, INITIAL_EPOCH, False, [("t", _req(0))], [], EVICTION_MS + 1)
    assert later.session is not None and cache.get(first.id) is None
