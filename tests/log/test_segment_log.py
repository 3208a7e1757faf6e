"""Segment log specifics: files, roll, index lookups, recovery, retention,
flush concurrent with appends."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from muster.log.config import LogConfig
from muster.log.port import InvalidProducerEpochError, OffsetOutOfRangeError
from muster.log.segment_log import SegmentLog
from muster.records.batch import Record, build_batch, iter_batches, iter_records


def batch(n: int = 1, *, ts: int = 1_000, size: int = 100, **kw: object) -> bytes:
    return build_batch(
        [Record(b"k%d" % i, b"v" * size, (), ts + i) for i in range(n)],
        **kw,  # type: ignore[arg-type]
    )


def open_log(path: Path, clean: bool = False, **cfg: object) -> SegmentLog:
    return SegmentLog(path, "t", 0, LogConfig(**cfg), clean_shutdown=clean)  # type: ignore[arg-type]


SMALL = {"segment_bytes": 4_000, "index_interval_bytes": 500}


def fill(log: SegmentLog, batches: int, n: int = 3, ts: int = 1_000) -> None:
    for i in range(batches):
        log.append(batch(n, ts=ts + i), 0)


def test_files_are_named_like_kafka(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", **SMALL)
    fill(log, 40)
    log.flush()
    names = sorted(p.name for p in (tmp_path / "t-0").iterdir())
    assert "00000000000000000000.log" in names
    assert "00000000000000000000.index" in names
    assert "00000000000000000000.timeindex" in names
    bases = [s.base_offset for s in log.segments]
    assert len(bases) > 3 and bases == sorted(bases)
    assert all(f"{b:020d}.log" in names for b in bases)
    # each non-active segment respects segment.bytes
    assert all(s.size <= 4_000 for s in log.segments)


def test_every_offset_is_found_across_many_segments(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", **SMALL)
    fill(log, 200)
    assert log.log_end_offset == 600 and len(log.segments) > 15
    assert any(len(s.idx_offsets) > 1 for s in log.segments)
    for offset in range(600):
        first = next(iter_batches(log.read(offset, 1)))
        assert first.base_offset <= offset <= first.last_offset
    assert offsets_of(log) == list(range(600))
    # a read never spans segments and stays within max_bytes (beyond the first batch)
    data = log.read(0, 1 << 20)
    assert len(data) <= 4_000


def test_roll_by_segment_ms(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", segment_ms=1_000)
    log.append(batch(), 10_000)
    log.append(batch(), 10_500)
    assert len(log.segments) == 1
    log.append(batch(), 11_000)
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_reopen_keeps_data_indexes_and_offsets(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", **SMALL)
    fill(log, 100)
    before = [(list(s.idx_offsets), list(s.idx_positions), list(s.time_ts)) for s in log.segments]
    log.close()
    for clean in (False, True):
        log = open_log(tmp_path / "t-0", clean=clean, **SMALL)
        assert log.log_end_offset == 300 and log.recovered_truncations == 0
        after = [
            (list(s.idx_offsets), list(s.idx_positions), list(s.time_ts)) for s in log.segments
        ]
        assert after == before
        assert offsets_of(log) == list(range(300))
        log.close()
    log = open_log(tmp_path / "t-0", **SMALL)
    assert log.append(batch(2), 0).base_offset == 300


def offsets_of(log: SegmentLog) -> list[int]:
    out: list[int] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20)
        out.extend(r.offset for r in iter_records(data))  # type: ignore[misc]
        offset = out[-1] + 1
    return out


def last_segment_file(path: Path) -> Path:
    return sorted(path.glob("*.log"))[-1]


@pytest.mark.parametrize(
    "damage",
    ["half_batch", "garbage", "flipped_byte", "zeros"],
)
def test_recovery_truncates_a_torn_tail(tmp_path: Path, damage: str) -> None:
    d = tmp_path / "t-0"
    log = open_log(d, **SMALL)
    fill(log, 50)
    log.flush()
    end = log.log_end_offset
    log.close()
    f = last_segment_file(d)
    good = f.stat().st_size
    with open(f, "r+b") as fh:
        if damage == "half_batch":
            fh.seek(good)
            fh.write(batch(3)[:70])
        elif damage == "garbage":
            fh.seek(good)
            fh.write(os.urandom(5_000))
        elif damage == "flipped_byte":  # a bit rot in the last stored batch
            fh.seek(good - 5)
            b = fh.read(1)
            fh.seek(good - 5)
            fh.write(bytes([b[0] ^ 0xFF]))
        else:
            fh.seek(good)
            fh.write(b"\x00" * 4096)
    log = open_log(d, **SMALL)
    assert log.recovered_truncations == 1
    expected_end = end - 3 if damage == "flipped_byte" else end
    assert log.log_end_offset == expected_end
    assert offsets_of(log) == list(range(expected_end))
    info = log.append(batch(2), 0)
    assert info.base_offset == expected_end
    log.close()
    log = open_log(d, **SMALL)
    assert log.log_end_offset == expected_end + 2 and log.recovered_truncations == 0


def test_recovery_of_a_torn_closed_segment_drops_later_segments(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = open_log(d, **SMALL)
    fill(log, 60)
    segs = log.segments
    victim = segs[2]
    log.close()
    with open(victim.log_path, "r+b") as fh:
        fh.truncate(victim.size - 10)
    log = open_log(d, **SMALL)
    assert [s.base_offset for s in log.segments] == [s.base_offset for s in segs[:3]]
    assert offsets_of(log) == list(range(log.log_end_offset))
    assert log.log_end_offset < segs[3].base_offset


def test_recovery_rebuilds_missing_or_corrupt_indexes(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = open_log(d, **SMALL)
    fill(log, 100)
    before = [(list(s.idx_offsets), list(s.idx_positions), list(s.time_ts)) for s in log.segments]
    log.close()
    files = sorted(d.glob("*.index"))
    files[0].unlink()
    sorted(d.glob("*.timeindex"))[1].unlink()
    files[2].write_bytes(os.urandom(13))
    files[3].write_bytes(b"\x00\x00\x00\x05\x7f\xff\xff\xf0")  # points past the end
    for clean in (True, False):
        log = open_log(d, clean=clean, **SMALL)
        after = [
            (list(s.idx_offsets), list(s.idx_positions), list(s.time_ts)) for s in log.segments
        ]
        assert after == before
        assert offsets_of(log) == list(range(300))
        log.close()
    assert files[0].exists()  # written again


def test_retention_by_time(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", retention_ms=1_000, **SMALL)
    fill(log, 30, ts=0)  # timestamps 0..31
    fill(log, 30, ts=10_000)
    n_before = len(log.segments)
    assert log.run_retention(now_ms=10_500) > 0
    assert log.log_start_offset > 0
    assert all(s.max_ts >= 10_000 for s in log.segments)
    assert len(log.segments) < n_before
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 100)
    assert next(iter_batches(log.read(log.log_start_offset, 100))).base_offset == (
        log.log_start_offset
    )
    # nothing left to delete except the active segment, which stays
    log.run_retention(now_ms=10**9)
    assert len(log.segments) == 1 and log.log_end_offset == 180
    assert log.append(batch(), 10**9).log_start_offset == log.segments[0].base_offset
    assert not any(p.name.startswith("00000000000000000000") for p in log.directory.iterdir())


def test_retention_by_size(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", retention_bytes=10_000, **SMALL)
    fill(log, 100)
    assert log.size_in_bytes > 10_000
    assert log.run_retention(now_ms=0) > 0
    # like Kafka: delete the oldest segments while what remains is >= retention.bytes
    assert log.size_in_bytes >= 10_000
    assert log.size_in_bytes - log.segments[0].size < 10_000
    assert offsets_of(log) == list(range(log.log_start_offset, 300))


def test_retention_is_off_for_compacted_topics(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", retention_bytes=0, cleanup_policy="compact", **SMALL)
    fill(log, 50)
    assert log.run_retention(now_ms=10**12) == 0


@pytest.mark.parametrize("how", ["clean", "crash", "stale_snapshot"])
def test_producer_state_survives_reopen(tmp_path: Path, how: str) -> None:
    d = tmp_path / "t-0"
    log = open_log(d, segment_bytes=600)
    log.append(batch(2, producer_id=4, producer_epoch=1, base_sequence=0), 0)
    log.append(batch(2, producer_id=4, producer_epoch=1, base_sequence=2), 0)
    log.append(batch(2, producer_id=5, producer_epoch=2, base_sequence=0), 0)
    if how == "crash":
        log.flush()
    else:
        log.close()
        assert (d / "producer-state.json").exists()
    if how == "stale_snapshot":  # appended after the snapshot, then crashed
        log = open_log(d, clean=True, segment_bytes=600)
        assert not (d / "producer-state.json").exists()
        log.append(batch(1, producer_id=4, producer_epoch=1, base_sequence=4), 0)
        log.flush()
        log = open_log(d, segment_bytes=600)
        assert log.append(batch(1, producer_id=4, producer_epoch=1, base_sequence=4), 0).duplicate
        return
    log = open_log(d, clean=how == "clean", segment_bytes=600)
    dup = log.append(batch(2, producer_id=4, producer_epoch=1, base_sequence=2), 0)
    assert dup.duplicate and dup.base_offset == 2
    with pytest.raises(InvalidProducerEpochError):
        log.append(batch(1, producer_id=5, producer_epoch=1, base_sequence=2), 0)  # fenced
    assert (
        log.append(batch(1, producer_id=4, producer_epoch=1, base_sequence=4), 0).base_offset == 6
    )


def test_flush_concurrent_with_appends_loses_nothing(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = open_log(d, segment_bytes=20_000, index_interval_bytes=1_000)
    stop = threading.Event()
    seen: list[int] = []
    errors: list[BaseException] = []

    def flusher() -> None:
        try:
            while not stop.is_set():
                log.flush()
                seen.append(log.flushed_offset)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    t = threading.Thread(target=flusher)
    t.start()
    try:
        for i in range(2_000):
            log.append(batch(2, ts=i), i)
    finally:
        stop.set()
        t.join()
    log.flush()
    assert not errors
    assert seen == sorted(seen) and log.flushed_offset == 4_000
    assert all(s.flushed_size == s.size for s in log.segments)
    log.close()
    log = open_log(d, segment_bytes=20_000, index_interval_bytes=1_000)
    assert log.recovered_truncations == 0
    assert offsets_of(log) == list(range(4_000))


def test_flushed_offset_never_passes_data_on_disk(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", **SMALL)
    fill(log, 30)
    log.flush()
    fill(log, 5)
    assert log.flushed_offset == 90 < log.log_end_offset == 105
    rolled = [s for s in log.segments if s.flushed_size < s.size]
    assert rolled  # a segment rolled since the flush still awaits fsync
    log.flush()
    assert all(s.flushed_size == s.size for s in log.segments)


def test_time_index_lookups_across_segments_and_reopen(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = open_log(d, **SMALL)
    for i in range(150):  # batch i holds offsets 3i..3i+2 with timestamps 10i..10i+2
        log.append(batch(3, ts=10 * i), 0)
    assert len(log.segments) > 10 and any(len(s.time_ts) > 1 for s in log.segments)

    def check(log: SegmentLog) -> None:
        for i in range(0, 150, 7):
            assert log.offset_for_timestamp(10 * i) == (3 * i, 10 * i)
            assert log.offset_for_timestamp(10 * i + 2) == (3 * i + 2, 10 * i + 2)
            assert log.offset_for_timestamp(10 * i + 3) == (3 * i + 3, 10 * i + 10)
        assert log.offset_for_timestamp(10 * 149 + 3) is None
        assert log.max_timestamp() == (449, 1_492)

    check(log)
    log.close()
    check(open_log(d, clean=True, **SMALL))
    check(open_log(d, **SMALL))


def test_retention_cleaner_and_flush_threads_with_appends_and_reads(tmp_path: Path) -> None:
    """The broker runs flush, retention and the cleaner in worker threads while
    the event loop appends, rolls and reads; nothing may break or tear."""
    from muster.records.batch import validate_batches

    d = tmp_path / "t-0"
    cfg = {
        "segment_bytes": 3_000,
        "index_interval_bytes": 500,
        "cleanup_policy": "compact,delete",
        "retention_bytes": 30_000,
        "delete_retention_ms": 0,
    }
    log = open_log(d, **cfg)
    stop = threading.Event()
    errors: list[BaseException] = []

    def loop(job) -> None:  # type: ignore[no-untyped-def]
        try:
            while not stop.is_set():
                job()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [
        threading.Thread(target=loop, args=(log.flush,)),
        threading.Thread(target=loop, args=(lambda: log.run_retention(10**12),)),
        threading.Thread(target=loop, args=(lambda: log.compact(10**12),)),
    ]
    for t in threads:
        t.start()
    try:
        for i in range(3_000):
            recs = [Record(b"key-%d" % (i % 37), b"v%d" % i * 10, (), i)]
            log.append(build_batch(recs, compression_type=i % 5), i)
            if i % 10 == 0:
                start = log.log_start_offset
                data = log.read(start + (log.log_end_offset - start) // 2, 5_000)
                validate_batches(data)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors
    log.close()
    end = log.log_end_offset
    log = open_log(d, **cfg)
    assert log.log_end_offset == end == 3_000 and log.recovered_truncations == 0
    got = offsets_of(log)
    assert got == sorted(set(got)) and got[-1] == 2_999
    kinds = (".log", ".index", ".timeindex", ".snapshot")
    leftovers = [p.name for p in d.iterdir() if p.suffix not in kinds]
    assert leftovers == []
    logs = {p.stem for p in d.glob("*.log")}
    assert {p.stem for p in d.iterdir()} == logs  # no index without its segment


def test_time_index_pointing_past_the_data_is_rebuilt(tmp_path: Path) -> None:
    import struct

    d = tmp_path / "t-0"
    log = open_log(d, **SMALL)
    fill(log, 100)
    before = [list(s.time_ts) for s in log.segments]
    log.close()
    tidx = sorted(d.glob("*.timeindex"))[1]
    with open(tidx, "ab") as fh:
        fh.write(struct.pack(">qi", 10**12, 10**6))  # far-future entry, offset beyond the data
    log = open_log(d, clean=True, **SMALL)
    assert [list(s.time_ts) for s in log.segments] == before
    assert log.max_timestamp() == (299, 1_101)


def test_index_flush_between_the_two_appends_of_an_entry_writes_whole_entries(
    tmp_path: Path,
) -> None:
    # The flusher thread can run write_indexes while the loop thread is inside
    # _track, after time_ts.append and before time_offsets.append.
    from muster.log.segment import Segment

    seg = Segment(tmp_path, 0, index_interval=0)
    seg.idx_offsets.append(9)
    seg.time_ts.append(5_000)
    seg.write_indexes()  # must not fail; the half entries wait
    assert seg.idx_written == 0 and seg.time_written == 0
    seg.idx_positions.append(0)
    seg.time_offsets.append(9)
    seg.write_indexes()
    assert seg.index_path.stat().st_size == 8
    assert seg.timeindex_path.stat().st_size == 12
    assert (seg.idx_written, seg.time_written) == (1, 1)
