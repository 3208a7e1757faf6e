"""Record batches (v2, as a Fetch answer carries them) straight into one Arrow
record batch of the source's schema.

The one record-batch reader (`muster.records.v2.read_batches`) appends each
record's fields straight to the column lists held here, and Arrow builds each
column from its list in C. Topic and partition are constant and
never materialised per record in Python. Control batches
(transaction markers) and records outside [start, end) are skipped; for
read_committed, so are the records of the aborted transactions a Fetch answer
lists (Kafka's Java consumer's rule, `committed_batches`), only ever looked at
when it lists some.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from muster.client.core.decode import Aborted, committed_batches
from muster.records.errors import CorruptRecordError
from muster.records.v2 import read_batches
from muster.spark.schema import arrow_schema

_TS_US = pa.timestamp("us", tz="UTC")


class CorruptBatchError(ValueError):
    """A fetched record batch that does not decode."""


class Columns:
    """Column buffers for one Arrow record batch of one topic-partition: the
    columns `read_batches` fills (`muster.records.v2.COLUMNS`). Offsets and
    timestamp types are `array`s, whose memory Arrow takes as it is
    (`from_buffers`): the reader fills them a batch at a time (a range, a
    repeated type), where Arrow converting Python int lists doubled the
    Arrow build. Timestamps come one per record, and `array.append` costs
    more than `list.append` and Arrow's conversion of the list together."""

    __slots__ = ("columns", "with_headers")

    def __init__(self, with_headers: bool) -> None:
        # offset, key, value, headers (None: not wanted), timestamp (ms), type
        self.columns: list[Any] = [
            array("q"),
            [],
            [],
            [] if with_headers else None,
            [],
            array("i"),
        ]
        self.with_headers = with_headers

    def __len__(self) -> int:
        return len(self.columns[0])

    @property
    def offsets(self) -> array[int]:
        return self.columns[0]

    def to_arrow(self, topic: str, partition: int) -> pa.RecordBatch:
        offsets, keys, values, headers, stamps, types = self.columns
        n = len(offsets)
        millis = pa.array(stamps, pa.int64())
        arrays: list[pa.Array] = [
            pa.array(keys, pa.binary()),
            pa.array(values, pa.binary()),
            pa.repeat(pa.scalar(topic, pa.string()), n),
            pa.repeat(pa.scalar(partition, pa.int32()), n),
            pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(offsets)]),
            pc.multiply(millis, 1000).cast(_TS_US),
            pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(types)]),
        ]
        schema = arrow_schema(self.with_headers)
        if self.with_headers:
            # a record without headers has null, as in Spark's Kafka source
            rows = [list(h) if h else None for h in headers]
            arrays.append(pa.array(rows, schema.field("headers").type))
        return pa.RecordBatch.from_arrays(arrays, schema=schema)


def decode_into(
    cols: Columns,
    data: bytes | memoryview,
    start: int,
    end: int,
    aborted: Iterable[Aborted] | None = None,
) -> int:
    """Appends the records of `data` with start <= offset < end to `cols`,
    less those of `aborted` transactions (read_committed: the (producer id,
    first offset) pairs its Fetch answer listed); returns the offset after the
    last whole batch in `data` (the next fetch position), which can exceed the
    last record's offset + 1 (control batches, aborted batches, compaction)."""
    try:
        batches = committed_batches(data, aborted) if aborted else None
        return read_batches(cols.columns, data, start, end, batches=batches, cls=None)
    except (IndexError, ValueError, CorruptRecordError) as exc:
        raise CorruptBatchError(f"corrupt record batch: {exc}") from exc
