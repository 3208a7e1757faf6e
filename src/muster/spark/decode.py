"""Record batches (v2, as a Fetch answer carries them) straight into one Arrow
record batch of the source's schema.

The one record-batch reader (`muster.records.v2.read_batches`) lays the
records out flat, six items each; each column is then one slice of that list
(cut in C) and Arrow builds it in C. Topic and partition are constant and
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
from muster.records.v2 import FLAT, read_batches
from muster.spark.schema import arrow_schema

_TS_US = pa.timestamp("us", tz="UTC")


class CorruptBatchError(ValueError):
    """A fetched record batch that does not decode."""


class Columns:
    """Column buffers for one Arrow record batch of one topic-partition."""

    __slots__ = ("headers", "keys", "offsets", "stamps", "types", "values", "with_headers")

    def __init__(self, with_headers: bool) -> None:
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.offsets = array("q")
        self.stamps = array("q")  # milliseconds
        self.types = array("i")
        self.headers: list[list[tuple[str, bytes | None]] | None] = []
        self.with_headers = with_headers

    def __len__(self) -> int:
        return len(self.offsets)

    def add(self, flat: list[Any]) -> None:
        """Records as `read_records` lays them out flat (FLAT items each):
        each column is one slice, cut in C."""
        self.offsets.extend(flat[0::FLAT])
        self.keys.extend(flat[1::FLAT])
        self.values.extend(flat[2::FLAT])
        if self.with_headers:  # a record without headers has null, as in Spark's Kafka source
            self.headers.extend([list(h) if h else None for h in flat[3::FLAT]])
        self.stamps.extend(flat[4::FLAT])
        self.types.extend(flat[5::FLAT])

    def to_arrow(self, topic: str, partition: int) -> pa.RecordBatch:
        n = len(self.offsets)
        offsets = pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(self.offsets)])
        stamps = pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(self.stamps)])
        micros = pc.multiply(stamps, 1000).cast(_TS_US)
        arrays: list[pa.Array] = [
            pa.array(self.keys, pa.binary()),
            pa.array(self.values, pa.binary()),
            pa.repeat(pa.scalar(topic, pa.string()), n),
            pa.repeat(pa.scalar(partition, pa.int32()), n),
            offsets,
            micros,
            pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(self.types)]),
        ]
        schema = arrow_schema(self.with_headers)
        if self.with_headers:
            arrays.append(pa.array(self.headers, schema.field("headers").type))
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
    flat: list[Any] = []
    try:
        batches = committed_batches(data, aborted) if aborted else None
        next_offset = read_batches(flat, data, start, end, batches=batches, cls=None)
    except (IndexError, ValueError, CorruptRecordError) as exc:
        raise CorruptBatchError(f"corrupt record batch: {exc}") from exc
    cols.add(flat)
    return next_offset
