"""Compaction: latest record per key, old tombstones dropped, offsets kept,
codecs kept, active segment untouched; the same rules for the memory log."""

from __future__ import annotations

from pathlib import Path

import pytest

from muster.log.config import LogConfig
from muster.log.memory_log import MemoryLog
from muster.log.segment_log import SegmentLog
from muster.records.batch import Record, build_batch, iter_batches, iter_records, read_header

COMPACT = {
    "cleanup_policy": "compact",
    "segment_bytes": 2_000,
    "index_interval_bytes": 300,
    "delete_retention_ms": 1_000,
}


def rec(key: str, value: str | None, ts: int) -> Record:
    return Record(key.encode(), None if value is None else value.encode(), (), ts)


def all_records(log) -> list[tuple[int, bytes | None, bytes | None]]:  # type: ignore[no-untyped-def]
    out = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20)
        if not data:
            break
        recs = list(iter_records(data))
        out.extend((r.offset, r.key, r.value) for r in recs)
        offset = list(iter_batches(data))[-1].next_offset
    return out


def write_history(log, codec: int = 0) -> dict[bytes, tuple[int, bytes | None]]:  # type: ignore[no-untyped-def]
    """Writes keys k0..k9 several times, deletes k3; returns key -> (offset, value)."""
    latest: dict[bytes, tuple[int, bytes | None]] = {}
    ts = 0
    for round_ in range(6):
        for k in range(10):
            value = None if (k == 3 and round_ == 4) else f"v{round_}-{k}" * 5
            recs = [rec(f"k{k}", value, ts)]
            info = log.append(build_batch(recs, compression_type=codec), ts)
            latest[f"k{k}".encode()] = (info.base_offset, value.encode() if value else None)
            ts += 1
    return latest


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_compaction_keeps_latest_per_key_and_offsets(tmp_path: Path, codec: int) -> None:
    log = SegmentLog(tmp_path / "c-0", "c", 0, LogConfig(**COMPACT))  # type: ignore[arg-type]
    write_history(log, codec)
    log.append(build_batch([rec("k3", "back", 100)], compression_type=codec), 100)
    log.roll(100)
    before = all_records(log)
    end = log.log_end_offset
    stats = log.compact(now_ms=200)  # tombstone of k3 younger than delete.retention.ms
    assert stats.segments_rewritten > 0 and stats.records_removed > 0
    after = all_records(log)
    assert log.log_end_offset == end
    # exactly the latest record per key survives, at its original offset
    latest: dict[bytes, tuple[int, bytes | None]] = {}
    for off, key, value in before:
        latest[key] = (off, value)  # type: ignore[index]
    assert sorted((off, key, v) for key, (off, v) in latest.items()) == after
    for h in iter_batches(log.read(log.log_start_offset, 1 << 20)):
        assert h.compression == codec
    # reopening sees the compacted segments, offsets continue
    log.close()
    log = SegmentLog(tmp_path / "c-0", "c", 0, LogConfig(**COMPACT))  # type: ignore[arg-type]
    assert all_records(log) == after and log.recovered_truncations == 0
    assert log.append(build_batch([rec("k1", "x", 300)]), 300).base_offset == end


def test_old_tombstones_are_dropped_young_ones_kept(tmp_path: Path) -> None:
    log = SegmentLog(tmp_path / "c-0", "c", 0, LogConfig(**COMPACT))  # type: ignore[arg-type]
    latest = write_history(log)
    log.roll(100)
    log.compact(now_ms=500)
    keys = {k: v for _, k, v in all_records(log)}
    assert keys[b"k3"] == latest[b"k3"][1]  # k3 rewritten after its tombstone
    log.append(build_batch([rec("k5", None, 600)]), 600)
    log.roll(600)
    log.compact(now_ms=700)
    assert {k: v for _, k, v in all_records(log)}[b"k5"] is None  # young tombstone kept
    log.append(build_batch([rec("zz", "later", 5_000)]), 5_000)
    log.roll(5_000)
    log.compact(now_ms=5_000)
    assert b"k5" not in {k for _, k, _ in all_records(log)}  # old tombstone gone


def test_min_compaction_lag_and_active_segment_untouched(tmp_path: Path) -> None:
    cfg = LogConfig(**{**COMPACT, "min_compaction_lag_ms": 1_000})  # type: ignore[arg-type]
    log = SegmentLog(tmp_path / "c-0", "c", 0, cfg)
    write_history(log)
    active_before = log.segments[-1]
    before = all_records(log)
    assert log.compact(now_ms=100).records_removed == 0
    assert all_records(log) == before
    stats = log.compact(now_ms=10_000)
    assert stats.records_removed > 0
    assert log.segments[-1] is active_before  # active segment never rewritten
    tail = [r for r in before if r[0] >= active_before.base_offset]
    assert [r for r in all_records(log) if r[0] >= active_before.base_offset] == tail


def test_emptied_batches_are_dropped_and_header_fields_kept(tmp_path: Path) -> None:
    log = SegmentLog(tmp_path / "c-0", "c", 0, LogConfig(**COMPACT))  # type: ignore[arg-type]
    b = build_batch(
        [rec("a", "1", 10), rec("b", "1", 11), rec("c", "1", 12)],
        producer_id=8,
        producer_epoch=2,
        base_sequence=0,
    )
    log.append(b, 10)
    log.append(build_batch([rec("a", "2", 20), rec("c", "2", 21)]), 20)
    log.append(build_batch([rec("a", "3", 30), rec("b", "3", 31)]), 30)
    log.roll(40)
    log.compact(now_ms=50)
    assert all_records(log) == [(4, b"c", b"2"), (5, b"a", b"3"), (6, b"b", b"3")]
    data = log.read(0, 1 << 20)
    first = read_header(data)
    assert (first.base_offset, first.last_offset_delta, first.max_timestamp) == (3, 1, 21)


def test_cleaner_swap_survives_concurrent_appends(tmp_path: Path) -> None:
    log = SegmentLog(tmp_path / "c-0", "c", 0, LogConfig(**COMPACT))  # type: ignore[arg-type]
    write_history(log)
    import threading

    t = threading.Thread(target=log.compact, args=(10_000,))
    t.start()
    for i in range(200):
        log.append(build_batch([rec(f"n{i}", "x", 10_000 + i)]), 10_000 + i)
    t.join()
    log.flush()
    end = log.log_end_offset
    log.close()
    log = SegmentLog(tmp_path / "c-0", "c", 0, LogConfig(**COMPACT))  # type: ignore[arg-type]
    assert log.log_end_offset == end and log.recovered_truncations == 0
    recs = all_records(log)
    assert [r[1] for r in recs[-200:]] == [f"n{i}".encode() for i in range(200)]


def test_memory_log_compaction_matches() -> None:
    log = MemoryLog("c", 0, LogConfig(**COMPACT))  # type: ignore[arg-type]
    latest = write_history(log)
    log.compact(now_ms=200)
    got = all_records(log)
    assert got == sorted((off, k, v) for k, (off, v) in latest.items())
    log.compact(now_ms=10_000)
    assert b"k3" in {k for _, k, _ in all_records(log)}  # latest k3 value is not a tombstone
