"""The PartitionLog contract, run against both the segment log and the
in-memory log: offsets, read semantics (whole batches, max_bytes, upper,
KIP-74), timestamps, idempotent producers, validation errors."""

from __future__ import annotations

import pytest

from muster.log.port import (
    CorruptRecordError,
    InvalidProducerEpochError,
    InvalidRecordError,
    OffsetOutOfRangeError,
    OutOfOrderSequenceError,
    RecordTooLargeError,
)
from muster.records.batch import Record, build_batch, iter_batches, iter_records
from tests.log.conftest import MakeLog


def batch(n: int = 1, *, ts: int = 1_000, size: int = 10, **kw: object) -> bytes:
    return build_batch(
        [Record(b"k%d" % i, b"v" * size, (), ts + i) for i in range(n)],
        **kw,  # type: ignore[arg-type]
    )


def idem(pid: int, epoch: int, seq: int, n: int = 1) -> bytes:
    return batch(n, producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def offsets_in(data: bytes) -> list[int]:
    return [r.offset for r in iter_records(data)]  # type: ignore[misc]


def test_offsets_count_records_not_batches(make_log: MakeLog) -> None:
    log = make_log()
    assert (log.log_start_offset, log.log_end_offset) == (0, 0)
    a = log.append(batch(3), 5)
    b = log.append(batch(1), 6)
    c = log.append(batch(5), 7)
    assert [(i.base_offset, i.last_offset) for i in (a, b, c)] == [(0, 2), (3, 3), (4, 8)]
    assert log.log_end_offset == 9
    assert offsets_in(log.read(0, 1 << 20)) == list(range(9))
    assert not a.duplicate and a.log_append_time_ms == -1 and a.log_start_offset == 0


def test_one_request_with_several_batches(make_log: MakeLog) -> None:
    log = make_log()
    info = log.append(batch(2) + batch(3), 0)
    assert (info.base_offset, info.last_offset, log.log_end_offset) == (0, 4, 5)
    assert [h.base_offset for h in iter_batches(log.read(0, 1 << 20))] == [0, 2]


def test_read_returns_whole_batches_within_max_bytes(make_log: MakeLog) -> None:
    log = make_log()
    for _ in range(10):
        log.append(batch(2, size=100), 0)
    one = len(batch(2, size=100))
    data = log.read(0, 3 * one + one // 2)
    assert [h.base_offset for h in iter_batches(data, strict=True)] == [0, 2, 4]
    # an offset inside a batch returns that whole batch
    assert next(iter_batches(log.read(5, 1 << 20))).base_offset == 4
    assert log.read(20, 1 << 20) == b""


def test_read_returns_one_batch_even_if_larger_than_max_bytes(make_log: MakeLog) -> None:
    log = make_log()
    log.append(batch(1, size=5000), 0)
    log.append(batch(1, size=10), 0)
    data = log.read(0, 100)
    assert [h.base_offset for h in iter_batches(data, strict=True)] == [0]
    assert len(data) > 5000


def test_read_stops_at_upper(make_log: MakeLog) -> None:
    log = make_log()
    for _ in range(5):
        log.append(batch(2), 0)
    assert [h.base_offset for h in iter_batches(log.read(0, 1 << 20, upper=6))] == [0, 2, 4]
    assert log.read(6, 1 << 20, upper=6) == b""
    assert [h.base_offset for h in iter_batches(log.read(0, 1 << 20, upper=5))] == [0, 2, 4]


def test_read_out_of_range(make_log: MakeLog) -> None:
    log = make_log()
    log.append(batch(2), 0)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(3, 100)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(-1, 100)


def test_stored_batches_keep_producer_bytes(make_log: MakeLog) -> None:
    log = make_log()
    raw = batch(3, compression_type=3)
    log.append(raw, 0)
    log.append(raw, 0)
    stored = log.read(3, 1 << 20)
    assert stored[8:] == raw[8:]  # only the base offset differs
    assert offsets_in(stored) == [3, 4, 5]


def test_invalid_appends_write_nothing(make_log: MakeLog) -> None:
    log = make_log(max_message_bytes=500)
    bad = bytearray(batch(2))
    bad[-1] ^= 1
    with pytest.raises(CorruptRecordError):
        log.append(bytes(bad), 0)
    old = bytearray(batch(1))
    old[16] = 1
    with pytest.raises(InvalidRecordError):
        log.append(bytes(old), 0)
    with pytest.raises(RecordTooLargeError):
        log.append(batch(1, size=600), 0)
    with pytest.raises(CorruptRecordError):
        log.append(batch(2) + batch(1)[:-3], 0)  # second batch torn: whole request refused
    assert log.log_end_offset == 0


def test_log_append_time(make_log: MakeLog) -> None:
    log = make_log(message_timestamp_type="LogAppendTime")
    info = log.append(batch(2, ts=5), 123_456)
    assert info.log_append_time_ms == 123_456
    assert [r.timestamp for r in iter_records(log.read(0, 1 << 20))] == [123_456, 123_456]


def test_timestamps(make_log: MakeLog) -> None:
    log = make_log()
    assert log.max_timestamp() is None and log.offset_for_timestamp(0) is None
    log.append(batch(3, ts=100), 0)  # 100, 101, 102
    log.append(batch(3, ts=500), 0)  # 500, 501, 502
    log.append(batch(2, ts=200), 0)  # 200, 201
    assert log.offset_for_timestamp(0) == (0, 100)
    assert log.offset_for_timestamp(101) == (1, 101)
    assert log.offset_for_timestamp(103) == (3, 500)
    assert log.offset_for_timestamp(502) == (5, 502)
    assert log.offset_for_timestamp(503) is None
    assert log.max_timestamp() == (5, 502)


def test_idempotent_retry_is_a_duplicate(make_log: MakeLog) -> None:
    log = make_log()
    first = log.append(idem(7, 0, 0, n=3), 0)
    log.append(batch(2), 0)
    second = log.append(idem(7, 0, 3, n=2), 0)
    again = log.append(idem(7, 0, 0, n=3), 0)
    assert again.duplicate and (again.base_offset, again.last_offset) == (0, 2)
    again2 = log.append(idem(7, 0, 3, n=2), 0)
    assert again2.duplicate and (again2.base_offset, again2.last_offset) == (
        second.base_offset,
        second.last_offset,
    )
    assert log.log_end_offset == 7 and not first.duplicate


def test_only_the_last_five_batches_are_remembered(make_log: MakeLog) -> None:
    log = make_log()
    for seq in range(6):
        log.append(idem(1, 0, seq), 0)
    assert log.append(idem(1, 0, 1), 0).duplicate
    with pytest.raises(OutOfOrderSequenceError):
        log.append(idem(1, 0, 0), 0)


def test_sequence_gap_is_out_of_order(make_log: MakeLog) -> None:
    log = make_log()
    log.append(idem(1, 0, 0, n=2), 0)
    with pytest.raises(OutOfOrderSequenceError):
        log.append(idem(1, 0, 3), 0)
    assert log.append(idem(1, 0, 2), 0).base_offset == 2


def test_producer_epochs(make_log: MakeLog) -> None:
    log = make_log()
    log.append(idem(1, 3, 0), 0)
    with pytest.raises(InvalidProducerEpochError):
        log.append(idem(1, 2, 1), 0)
    with pytest.raises(OutOfOrderSequenceError):
        log.append(idem(1, 4, 5), 0)  # a new epoch starts at 0
    log.append(idem(1, 4, 0), 0)
    with pytest.raises(InvalidProducerEpochError):
        log.append(idem(1, 3, 1), 0)
    assert log.append(idem(1, 4, 1), 0).base_offset == 2


def test_unknown_producer_may_start_anywhere_and_producers_are_independent(
    make_log: MakeLog,
) -> None:
    log = make_log()
    log.append(idem(1, 0, 50), 0)
    log.append(idem(2, 0, 0), 0)
    log.append(idem(1, 0, 51), 0)
    assert log.append(idem(2, 0, 0), 0).duplicate
    assert log.log_end_offset == 3


def test_failed_request_does_not_change_producer_state(make_log: MakeLog) -> None:
    log = make_log()
    log.append(idem(1, 0, 0), 0)
    with pytest.raises(OutOfOrderSequenceError):
        log.append(idem(1, 0, 1) + idem(1, 0, 5), 0)
    assert log.append(idem(1, 0, 1), 0).base_offset == 1


def test_flush_advances_flushed_offset(make_log: MakeLog) -> None:
    log = make_log()
    log.append(batch(4), 0)
    assert log.flushed_offset == 0
    log.flush()
    assert log.flushed_offset == 4


def test_compacted_topics_refuse_keyless_records(make_log: MakeLog) -> None:
    log = make_log(cleanup_policy="compact")
    with pytest.raises(InvalidRecordError, match="without key"):
        log.append(build_batch([(b"k", b"v"), (None, b"v")], compression_type=1), 0)
    assert log.append(build_batch([(b"k", b"v")], compression_type=1), 0).base_offset == 0


def test_other_topics_accept_keyless_records(make_log: MakeLog) -> None:
    assert make_log().append(build_batch([(None, b"v")]), 0).base_offset == 0
