"""Log consistency check of a data directory, as a crash left it.

Every partition directory is opened the way the broker opens it after a
crash (SegmentLog, unclean), then checked: every batch CRC-valid and in
offset order (contiguous unless the topic is compacted), every index entry
pointing at the batch it names, the producer state the broker loaded (its
snapshot plus the batches after it) equal to a replay of the whole log, and
the high watermark at or past every acknowledged offset.
"""

from __future__ import annotations

from pathlib import Path

from muster.log.producer_state import ProducerStateManager
from muster.log.segment_log import SegmentLog
from muster.records.batch import HEADER, crc_ok, read_header

COMPACTED = ("__consumer_offsets", "__transaction_state", "__muster_group_events")


def _partition_dirs(data_dir: Path) -> list[tuple[Path, str, int]]:
    out = []
    for path in sorted(data_dir.iterdir()):
        topic, sep, index = path.name.rpartition("-")
        if path.is_dir() and sep and index.isdigit():
            out.append((path, topic, int(index)))
    return out


def check_partition(plog: SegmentLog, compacted: bool) -> list[str]:
    where = f"{plog.topic}-{plog.partition}"
    problems: list[str] = []
    expected = None
    for seg in plog.segments:
        for h in seg.iter_headers(0):
            batch = seg.read_range(h.position, h.end)
            if not crc_ok(batch, read_header(batch)):
                problems.append(f"{where}: batch at offset {h.base_offset} fails its CRC")
            if expected is not None and (
                h.base_offset < expected or (not compacted and h.base_offset != expected)
            ):
                problems.append(f"{where}: batch at {h.base_offset}, expected {expected}")
            expected = h.base_offset + h.last_offset_delta + 1
        for offset, position in zip(seg.idx_offsets, seg.idx_positions, strict=True):
            if position + HEADER.size > seg.size:
                problems.append(f"{where}: index entry {offset} past the segment end")
                continue
            h = read_header(seg.read_range(position, position + HEADER.size))
            if h.base_offset + h.last_offset_delta != offset:
                problems.append(f"{where}: index entry {offset} points at batch {h.base_offset}")
    if expected is not None and expected != plog.log_end_offset:
        problems.append(f"{where}: log end {plog.log_end_offset}, last batch ends at {expected}")
    loaded = plog.producers
    replayed = ProducerStateManager()
    plog.producers = replayed
    try:
        for seg in plog.segments:
            plog._replay(seg)  # the same replay recovery uses, over the whole log
        replayed.prune(plog.log_start_offset)
        replayed.settle(plog.log_end_offset)
    finally:
        plog.producers = loaded
    if replayed.to_json() != loaded.to_json():
        problems.append(f"{where}: producer state loaded differs from a full replay")
    return problems


def check_data_dir(
    data_dir: Path, acked: dict[tuple[str, int, int], bytes]
) -> tuple[list[str], int]:
    """(problems, partitions checked)."""
    ends: dict[tuple[str, int], int] = {}
    for topic, partition, offset in acked:
        ends[(topic, partition)] = max(ends.get((topic, partition), 0), offset + 1)
    problems: list[str] = []
    checked = 0
    for path, topic, index in _partition_dirs(data_dir):
        plog = SegmentLog(path, topic, index, clean_shutdown=False)
        try:
            problems += check_partition(plog, topic in COMPACTED)
            if plog.log_end_offset < ends.get((topic, index), 0):
                problems.append(
                    f"{topic}-{index}: high watermark {plog.log_end_offset} below "
                    f"acknowledged offset {ends[(topic, index)] - 1}"
                )
        finally:
            plog.close()
        checked += 1
    return problems, checked
