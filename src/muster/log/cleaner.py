"""Log compaction (cleanup.policy=compact), Kafka's log cleaner in small.

For the closed segments older than min.compaction.lag.ms: build key -> latest
offset, then rewrite each segment keeping only the latest record per key,
dropping tombstones (null value) whose segment is older than
delete.retention.ms. Batches are decompressed, filtered and recompressed with
their own codec; their base offset, last offset delta, producer fields and
timestamps are kept, so offsets never change. An emptied batch is dropped.

Transactional batches and control batches (markers) are neither entered into
the key map nor filtered: they are kept exactly as written. So a record of a
transaction, committed or aborted, never removes an earlier record of its key
(an aborted write must not delete the committed value before it), and the
log keeps every record and marker a read_committed consumer needs to tell
them apart. The price is that transactional records are never compacted.

A rewritten segment is written to `<base>.log.cleaned`, fsynced, and renamed
over the original under the log's lock; the active segment is never touched.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from muster.records.batch import (
    CONTROL_MASK,
    TRANSACTIONAL_MASK,
    batch_payload,
    build_batch,
    decode_records,
    read_header,
)

if TYPE_CHECKING:  # the segment log imports this module
    from muster.log.segment import Segment
    from muster.log.segment_log import SegmentLog


@dataclass
class CleanStats:
    segments_rewritten: int = 0
    records_removed: int = 0
    bytes_before: int = 0
    bytes_after: int = 0

    def add(self, other: CleanStats) -> None:
        self.segments_rewritten += other.segments_rewritten
        self.records_removed += other.records_removed
        self.bytes_before += other.bytes_before
        self.bytes_after += other.bytes_after


_KEPT_AS_IS = TRANSACTIONAL_MASK | CONTROL_MASK


def add_to_map(latest: dict[bytes, int], batches: Iterable[bytes]) -> None:
    for raw in batches:
        header = read_header(raw, 0)
        if header.attributes & _KEPT_AS_IS:
            continue
        for r in decode_records(header, batch_payload(raw, header)):
            if r.key is not None and r.offset is not None:
                latest[r.key] = r.offset


def filter_batch(
    raw: bytes, latest: dict[bytes, int], drop_tombstones: bool
) -> tuple[bytes | None, int]:
    """(the batch to keep — `raw` itself if unchanged, None if emptied, number
    of records removed)."""
    header = read_header(raw, 0)
    if header.attributes & _KEPT_AS_IS:
        return raw, 0
    records = decode_records(header, batch_payload(raw, header))
    kept = [
        r
        for r in records
        if r.key is None
        or (latest.get(r.key, r.offset) == r.offset and not (drop_tombstones and r.value is None))
    ]
    removed = len(records) - len(kept)
    if removed == 0:
        return raw, 0
    if not kept:
        return None, removed
    rebuilt = build_batch(
        kept,
        base_offset=header.base_offset,
        compression_type=header.compression,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        transactional=header.is_transactional,
        log_append_time=bool(header.timestamp_type),
        partition_leader_epoch=header.partition_leader_epoch,
        last_offset_delta=header.last_offset_delta,
        base_timestamp=header.base_timestamp,
        max_timestamp=header.max_timestamp,
    )
    return rebuilt, removed


def _segment_batches(seg: Segment) -> Iterator[bytes]:
    for h in seg.iter_headers(0):
        yield seg.read_range(h.position, h.end)


def clean_segment_log(log: SegmentLog, now_ms: int) -> CleanStats:
    """Compacts a SegmentLog's closed segments; safe against concurrent appends
    (the active segment and segments rolled meanwhile are not touched)."""
    cfg = log.config
    stats = CleanStats()
    if not cfg.compact:
        return stats
    cleanable = []
    for seg in log.segments[:-1]:
        if cfg.min_compaction_lag_ms > 0 and (
            seg.max_ts < 0 or now_ms - seg.max_ts < cfg.min_compaction_lag_ms
        ):
            break
        cleanable.append(seg)
    if not cleanable:
        return stats
    latest: dict[bytes, int] = {}
    for seg in cleanable:
        add_to_map(latest, _segment_batches(seg))
    horizon = now_ms - cfg.delete_retention_ms
    for seg in cleanable:
        if log.closed:
            break
        try:
            stats.add(_clean_segment(log, seg, latest, seg.max_ts < horizon))
        except OSError:
            if log.closed:  # the topic was deleted under us
                break
            raise
    return stats


def _clean_segment(
    log: SegmentLog, seg: Segment, latest: dict[bytes, int], drop_tombstones: bool
) -> CleanStats:
    out: list[bytes] = []
    removed = 0
    for raw in _segment_batches(seg):
        kept, n = filter_batch(raw, latest, drop_tombstones)
        removed += n
        if kept is not None:
            out.append(kept)
    if removed == 0:
        return CleanStats()
    data = b"".join(out)
    tmp = seg.log_path.with_name(seg.log_path.name + ".cleaned")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    if log.swap_cleaned(seg, tmp):
        return CleanStats(1, removed, seg.size, len(data))
    return CleanStats()
