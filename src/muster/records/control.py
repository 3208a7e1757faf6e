"""Transaction markers: the control batches that end a transaction.

A marker is a batch with the transactional and control attributes holding one
record: key = int16 version (0) + int16 type (0 ABORT, 1 COMMIT), value =
int16 version (0) + int32 coordinator epoch (Kafka's EndTransactionMarker).
"""

from __future__ import annotations

import struct

from muster.records.batch import (
    NO_SEQUENCE,
    Record,
    batch_payload,
    build_batch,
    decode_records,
    read_header,
)
from muster.records.errors import CorruptRecordError

ABORT = 0
COMMIT = 1

_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")


def end_txn_marker(
    producer_id: int,
    producer_epoch: int,
    commit: bool,
    coordinator_epoch: int,
    timestamp_ms: int,
) -> bytes:
    key = _KEY.pack(0, COMMIT if commit else ABORT)
    value = _VALUE.pack(0, coordinator_epoch)
    return build_batch(
        [Record(key, value, (), timestamp_ms)],
        timestamp_ms=timestamp_ms,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=NO_SEQUENCE,
        transactional=True,
        control=True,
    )


def control_type(raw: bytes | bytearray | memoryview) -> int | None:
    """The control record type of the batch at the start of `raw` (ABORT,
    COMMIT or another type), or None for a batch with no records left."""
    header = read_header(raw, 0)
    records = decode_records(header, batch_payload(raw, header))
    if not records:
        return None
    key = records[0].key
    if key is None or len(key) < _KEY.size:
        raise CorruptRecordError("control record without a type key")
    return int(_KEY.unpack_from(key)[1])
