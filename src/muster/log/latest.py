"""The last record of each key in a whole partition log: what the group and
transaction coordinators replay when they load (`collect_log`)."""

from __future__ import annotations

from muster.log.port import PartitionLog
from muster.records.latest import Latest, TxnReplay, collect_latest

LOAD_CHUNK = 8 << 20


def collect_log(plog: PartitionLog, txns: TxnReplay | None = None) -> Latest:
    """The last record of each key in a whole partition log, read in chunks
    of LOAD_CHUNK bytes (a coordinator's load path)."""
    latest: Latest = {}
    offset, end = plog.log_start_offset, plog.log_end_offset
    while offset < end:
        # batches whose records were all compacted away still move us on
        after = collect_latest(plog.read(offset, LOAD_CHUNK), offset, latest, txns)
        if after <= offset:
            break  # nothing whole to read (a read returns at least one batch)
        offset = after
    return latest
