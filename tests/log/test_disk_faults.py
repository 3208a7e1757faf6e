"""Disk faults in the segment log: a refused write (ENOSPC, EIO) or a failed
fsync is a StorageError (KAFKA_STORAGE_ERROR), nothing refused surfaces later
(not after the next write, not after a reopen), and the log takes writes again
as soon as the disk does, without a restart."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from muster.log import producer_recovery, segment, segment_log
from muster.log.port import StorageError
from muster.log.segment_log import SegmentLog
from muster.records.batch import batch_payload, build_batch, decode_records, iter_batches

PID = 11


def _batch(seq: int, n: int = 3, tag: str = "v") -> bytes:
    records = [(b"k", f"{tag}{seq + i}".encode()) for i in range(n)]
    return build_batch(records, producer_id=PID, producer_epoch=0, base_sequence=seq)


def _values(plog: SegmentLog) -> list[bytes]:
    out: list[bytes] = []
    offset = plog.log_start_offset
    while offset < plog.log_end_offset:
        data = plog.read(offset, 1 << 30)
        if not data:
            break
        for header in iter_batches(data):
            records = decode_records(header, batch_payload(data, header))
            out += [r.value for r in records if r.value is not None]
            offset = header.base_offset + header.last_offset_delta + 1
    return out


class _Faults:
    """Makes the next os.pwrite/os.fsync/os.ftruncate of the log fail."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.pwrite_fail: int | None = None  # errno; a write gets half through first
        self.fsync_fail: int | None = None
        self.ftruncate_fail: int | None = None
        real_pwrite, real_fsync, real_ftruncate = os.pwrite, os.fsync, os.ftruncate

        def pwrite(fd: int, data: Any, pos: int) -> int:
            if self.pwrite_fail is None:
                return real_pwrite(fd, data, pos)
            if len(data) > 1:
                return real_pwrite(fd, memoryview(data)[: len(data) // 2], pos)
            raise OSError(self.pwrite_fail, os.strerror(self.pwrite_fail))

        def fsync(fd: int) -> None:
            if self.fsync_fail is not None:
                raise OSError(self.fsync_fail, os.strerror(self.fsync_fail))
            real_fsync(fd)

        def ftruncate(fd: int, size: int) -> None:
            if self.ftruncate_fail is not None:
                raise OSError(self.ftruncate_fail, os.strerror(self.ftruncate_fail))
            real_ftruncate(fd, size)

        for module in (segment, segment_log):
            monkeypatch.setattr(module.os, "pwrite", pwrite)
            monkeypatch.setattr(module.os, "fsync", fsync)
            monkeypatch.setattr(module.os, "ftruncate", ftruncate)


@pytest.fixture
def faults(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Faults]:
    yield _Faults(monkeypatch)


def _active_file(plog: SegmentLog) -> Path:
    return plog.segments[-1].log_path


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EIO])
def test_refused_write_is_a_storage_error_and_leaves_no_bytes(
    tmp_path: Path, faults: _Faults, code: int
) -> None:
    plog = SegmentLog(tmp_path / "t-0", "t", 0)
    plog.append(_batch(0), 1)
    plog.flush()
    size = _active_file(plog).stat().st_size
    faults.pwrite_fail = code
    with pytest.raises(StorageError) as refused:
        plog.append(_batch(3), 1)
    assert refused.value.error_code == 56  # KAFKA_STORAGE_ERROR
    assert _active_file(plog).stat().st_size == size  # the half written is cut
    assert plog.log_end_offset == 3
    faults.pwrite_fail = None
    # the producer's retry of the refused batch is in sequence, not a duplicate
    info = plog.append(_batch(3), 1)
    assert (info.base_offset, info.duplicate) == (3, False)
    plog.close()
    reopened = SegmentLog(tmp_path / "t-0", "t", 0, clean_shutdown=False)
    assert _values(reopened) == [f"v{i}".encode() for i in range(6)]
    assert reopened.recovered_truncations == 0


def test_refused_write_whose_bytes_cannot_be_cut_is_cut_before_the_next(
    tmp_path: Path, faults: _Faults
) -> None:
    plog = SegmentLog(tmp_path / "t-0", "t", 0)
    plog.append(_batch(0), 1)
    faults.pwrite_fail = errno.EIO
    faults.ftruncate_fail = errno.EIO
    with pytest.raises(StorageError):
        plog.append(_batch(3, n=40), 1)
    size = plog.segments[-1].size
    assert _active_file(plog).stat().st_size > size  # junk past the end for now
    faults.pwrite_fail = None
    with pytest.raises(StorageError):  # the disk still refuses: still refused
        plog.append(_batch(3), 1)
    faults.ftruncate_fail = None
    plog.append(_batch(3), 1)  # shorter than the junk: no junk may stay behind it
    plog.flush()
    assert _active_file(plog).stat().st_size == plog.segments[-1].size
    plog.close()
    again = SegmentLog(tmp_path / "t-0", "t", 0, clean_shutdown=False)
    assert _values(again) == [f"v{i}".encode() for i in range(6)]


def _failed_fsync(plog: SegmentLog, faults: _Faults) -> None:
    """The next flush fails with EIO, then the disk is fine again."""
    faults.fsync_fail = errno.EIO
    with pytest.raises(OSError):
        plog.flush()
    faults.fsync_fail = None


def _durable_then(tmp_path: Path, *lost_segments: int) -> SegmentLog:
    """A log with v0..v2 durable, then one batch ("lost") per segment base
    given (a roll before each but the first), not yet flushed."""
    plog = SegmentLog(tmp_path / "t-0", "t", 0)
    plog.append(_batch(0), 1)
    plog.flush()
    for i, seq in enumerate(lost_segments):
        if i:
            plog.roll(1)
        plog.append(_batch(seq, tag="lost"), 1)
    return plog


def test_failed_fsync_is_never_reported_durable_and_the_log_heals(
    tmp_path: Path, faults: _Faults
) -> None:
    plog = _durable_then(tmp_path, 3)  # answered with an error: its fsync fails
    _failed_fsync(plog, faults)
    # Linux may have dropped the pages and report the next fsync clean: the
    # log must not take that fsync's word for the data the failed one had
    with pytest.raises(OSError):
        plog.flush()
    assert plog.flushed_offset == 3
    # the next write cuts what was never durable, then goes on from there:
    # the producer's retry of the failed batch is in sequence again
    info = plog.append(_batch(3), 1)
    assert (info.base_offset, info.duplicate) == (3, False)
    plog.flush()
    assert plog.flushed_offset == 6
    assert _values(plog) == [f"v{i}".encode() for i in range(6)]
    plog.close()
    again = SegmentLog(tmp_path / "t-0", "t", 0, clean_shutdown=True)
    assert _values(again) == [f"v{i}".encode() for i in range(6)]


def test_failed_fsync_across_a_roll_rewinds_to_the_last_durable_segment(
    tmp_path: Path, faults: _Faults
) -> None:
    plog = _durable_then(tmp_path, 3, 6)
    plog.roll(1)  # the failed flush spans two rolls
    plog.append(_batch(9, tag="lost"), 1)
    _failed_fsync(plog, faults)
    plog.append(_batch(3), 1)
    plog.flush()
    assert _values(plog) == [f"v{i}".encode() for i in range(6)]
    assert [s.base_offset for s in plog.segments][-1] <= 3
    assert not any(p.name.startswith("00000000000000000006") for p in plog.directory.iterdir())
    plog.close()
    again = SegmentLog(tmp_path / "t-0", "t", 0, clean_shutdown=False)
    assert _values(again) == [f"v{i}".encode() for i in range(6)]


def test_close_after_a_failed_fsync_is_not_a_clean_shutdown(
    tmp_path: Path, faults: _Faults
) -> None:
    plog = _durable_then(tmp_path, 3)
    _failed_fsync(plog, faults)
    with pytest.raises(OSError):
        plog.close()
    assert not (plog.directory / producer_recovery.PRODUCER_SNAPSHOT).exists()
