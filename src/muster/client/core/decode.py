"""The consumer's hot path: record batches of a Fetch answer to records.

Two steps, so that the driver can put the next Fetch on the wire between
them: `scan_batches` reads only batch headers (where the answer ends, a few
field reads per batch), `decode_records` then builds the records with the
one record-batch reader, `muster.records.v2.read_batches`.

read_committed: a Fetch answer lists the aborted transactions overlapping
it; `committed_batches` drops their records as Kafka's Java consumer does
(and only runs when that list is not empty: with none, read_committed
decodes exactly as read_uncommitted, the broker having cut the answer at the
last stable offset).
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator

from muster.client.errors import ProtocolError
from muster.client.types import ConsumerRecord, TopicPartition
from muster.records.control import ABORT, control_type
from muster.records.errors import CorruptRecordError
from muster.records.v2 import (
    CONTROL_MASK,
    TRANSACTIONAL_MASK,
    BatchHeader,
    iter_batches,
    next_offset_after,
    read_batches,
)

# (producer_id, first_offset) of one aborted transaction, as a Fetch answer lists it
Aborted = tuple[int, int]


def scan_batches(data: bytes, fetch_offset: int) -> int:
    """The offset after the last whole batch of `data` (a trailing partial
    batch, as a Fetch answer may end with, does not count), or `fetch_offset`
    when there is none past it. Raises ProtocolError on a garbled length."""
    try:
        return next_offset_after(data, fetch_offset)
    except CorruptRecordError as exc:
        raise ProtocolError(f"corrupt record batch: {exc}") from exc


def committed_batches(
    data: bytes | memoryview, aborted: Iterable[Aborted]
) -> Iterator[BatchHeader]:
    """The batch headers of `data` as read_committed sees them, given the
    aborted transactions its Fetch answer listed: every batch, in order, but
    the data batches of aborted transactions flagged as control batches, so
    a decoder skips them as it skips the markers (the position still moves
    past them).

    Kafka's Java consumer (CompletedFetch): the aborted transactions are
    taken in first-offset order; at each batch with a producer id, those
    starting at or before the batch's last offset put their producer into
    the aborted set; a transactional data batch of a producer in the set is
    aborted; an ABORT marker of that producer takes it out again (so its
    later transactions are read)."""
    pending = sorted((first, pid) for pid, first in aborted)
    i, n = 0, len(pending)
    producers: set[int] = set()
    for header in iter_batches(data):
        pid = header.producer_id
        if pid >= 0:
            last = header.base_offset + header.last_offset_delta
            while i < n and pending[i][0] <= last:
                producers.add(pending[i][1])
                i += 1
            attrs = header.attributes
            if pid in producers:
                if attrs & CONTROL_MASK:
                    marker = memoryview(data)[header.position : header.end]
                    if control_type(marker) == ABORT:
                        producers.discard(pid)
                elif attrs & TRANSACTIONAL_MASK:
                    header = header._replace(attributes=attrs | CONTROL_MASK)
        yield header


def decode_records(
    tp: TopicPartition,
    data: bytes,
    fetch_offset: int,
    aborted: Iterable[Aborted] | None = None,
) -> tuple[list[ConsumerRecord], int]:
    """Records at or after `fetch_offset` from a Fetch answer's record
    batches, and the offset after the last whole batch (control batches and
    records before `fetch_offset` are skipped; with `aborted`, the aborted
    transactions a read_committed answer listed, their records too). Raises
    ProtocolError on a corrupt batch."""
    out: list[ConsumerRecord] = []
    topic, partition = tp
    # Records are tuple subclasses, which the cyclic GC tracks for life (it
    # only untracks exact tuples). Collections while thousands of them are
    # built promote the live ones to older generations, and with them come
    # full collections of the whole heap; paused here, the records meet one
    # young collection after the answer and are mostly gone (handed out,
    # processed, dropped) before the next. The pause never outlives the
    # call; a collector the application disabled stays disabled.
    gc_was_enabled = gc.isenabled()
    if gc_was_enabled:
        gc.disable()
    try:
        # read_committed's filter only when the answer lists aborted transactions
        batches = committed_batches(data, aborted) if aborted else None
        next_offset = read_batches(
            out,
            data,
            fetch_offset,
            batches=batches,
            cls=ConsumerRecord,
            topic=topic,
            partition=partition,
        )
    except (IndexError, ValueError, CorruptRecordError) as exc:
        raise ProtocolError(f"corrupt record batch in {topic}-{partition}: {exc}") from exc
    finally:
        if gc_was_enabled:
            gc.enable()
    return out, next_offset
