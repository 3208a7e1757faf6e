"""DeleteRecords on a partition log: the log start moves up, whole segments
below it go, reads below it are out of range, and the new start survives a
crash (the segment log keeps it in a file of its own)."""

from __future__ import annotations

from pathlib import Path

import pytest

from muster.log.port import OffsetOutOfRangeError, UnreadableLogError
from muster.log.segment_log import START_OFFSET_FILE, SegmentLog
from muster.records.batch import iter_records
from tests.log.conftest import MakeLog
from tests.log.test_log_contract import batch


def test_delete_records_moves_the_log_start(make_log: MakeLog) -> None:
    log = make_log()
    for i in range(4):
        log.append(batch(5), i)
    assert log.delete_records(7) == 7
    assert log.log_start_offset == 7 and log.log_end_offset == 20
    with pytest.raises(OffsetOutOfRangeError):
        log.read(3, 1 << 20)
    # the batch holding offset 7 is still whole; a consumer skips below the start
    first = [r.offset for r in iter_records(log.read(7, 1 << 20))]
    assert first[0] <= 7 and first[-1] == 19
    assert log.delete_records(5) == 7  # never moves back
    assert log.delete_records(99) == 20  # at most the log end
    assert log.log_start_offset == 20
    log.append(batch(2), 9)
    assert log.log_end_offset == 22 and log.log_start_offset == 20


def test_delete_records_drops_whole_segments_and_survives_a_crash(tmp_path: Path) -> None:
    from muster.log.config import LogConfig

    cfg = LogConfig(segment_bytes=300)
    log = SegmentLog(tmp_path / "t-0", "t", 0, cfg)
    for i in range(12):
        log.append(batch(2, size=40), i)
    segments_before = len(list((tmp_path / "t-0").glob("*.log")))
    assert segments_before > 3
    start = log.delete_records(15)
    assert start == 15
    remaining = sorted(int(p.stem) for p in (tmp_path / "t-0").glob("*.log"))
    assert len(remaining) < segments_before and remaining[0] <= 15
    # an unclean reopen (no close): the start offset is not lost
    again = SegmentLog(tmp_path / "t-0", "t", 0, cfg, clean_shutdown=False)
    assert again.log_start_offset == 15 and again.log_end_offset == 24


@pytest.mark.parametrize("damage", ["truncated", "garbled", "negative"])
def test_a_damaged_log_start_file_refuses_the_open_not_serves_deleted_records(
    tmp_path: Path, damage: str
) -> None:
    # found by the torn-writes campaign: an unreadable file read as "no
    # DeleteRecords", so deleted records were served again after a restart
    log = SegmentLog(tmp_path / "t-0", "t", 0)
    for i in range(4):
        log.append(batch(5), i)
    log.delete_records(7)
    log.close()
    path = tmp_path / "t-0" / START_OFFSET_FILE
    text = path.read_text()
    path.write_text(
        {
            "truncated": text[:-3],
            "garbled": "\x00" * len(text),
            "negative": '{"log_start_offset": -4}',
        }[damage]
    )
    with pytest.raises(UnreadableLogError, match=r"log-start-offset\.json is damaged"):
        SegmentLog(tmp_path / "t-0", "t", 0, clean_shutdown=False)
    path.unlink()  # what the message says to do when no copy exists
    reopened = SegmentLog(tmp_path / "t-0", "t", 0, clean_shutdown=False)
    assert reopened.log_start_offset == 0 and reopened.log_end_offset == 20
