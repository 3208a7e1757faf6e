"""Big batches (librdkafka's hold ~9,000 records) through both read paths of
the one decoder: offset and timestamp deltas of every varint width, read by
the inline one-, two- and three-byte paths and the general decoder, and the
offset column a gapless batch fills whole."""

from __future__ import annotations

import pytest

from muster.client.core.decode import decode_records
from muster.records.batch import Record, build_batch
from muster.spark.decode import Columns, decode_into

T0 = 1_700_000_000_000


def _spark(data: bytes, start: int, end: int) -> tuple[list[int], list[int], list[bytes]]:
    cols = Columns(with_headers=False)
    decode_into(cols, data, start, end)
    rb = cols.to_arrow("t", 0)
    stamps = [us // 1000 for us in rb.column("timestamp").cast("int64").to_pylist()]
    return rb.column("offset").to_pylist(), stamps, rb.column("value").to_pylist()


def _client(data: bytes, start: int) -> tuple[list[int], list[int], list[bytes]]:
    records, _ = decode_records(("t", 0), data, start)
    return [r[2] for r in records], [r[6] for r in records], [r[4] for r in records]


# deltas of 1 to 5 bytes: i * i * 10 ms reaches 4e9 at the last record
N = 20_000
GAPLESS = build_batch(
    [Record(None, b"v%d" % i, timestamp=T0 + i * i * 10) for i in range(N)],
    base_offset=100,
    timestamp_ms=T0,
)


@pytest.mark.parametrize(("start", "end"), [(0, 1 << 40), (100, 100 + N), (9_000, 15_000)])
def test_every_delta_width_decodes_on_both_paths(start: int, end: int) -> None:
    kept = [i for i in range(N) if start <= 100 + i < end]
    want = ([100 + i for i in kept], [T0 + i * i * 10 for i in kept], [b"v%d" % i for i in kept])
    assert _spark(GAPLESS, start, end) == want
    if end > 100 + N:  # the client reads to the end of the answer
        assert _client(GAPLESS, start) == want


def test_a_compacted_batch_keeps_its_own_offsets() -> None:
    # gaps of every width, as compaction leaves them: each record's offset
    # comes from its delta, not from its position in the batch
    offsets = [0, 5, 63, 64, 8_191, 8_192, 9_001, 1_048_575, 1_048_576, 3_000_000]
    data = build_batch(
        [Record(b"k%d" % o, b"v%d" % o, timestamp=T0 + o, offset=o) for o in offsets],
        base_offset=0,
        timestamp_ms=T0,
    )
    want = (offsets, [T0 + o for o in offsets], [b"v%d" % o for o in offsets])
    assert _spark(data, 0, 1 << 40) == want
    assert _client(data, 0) == want
    inside = [o for o in offsets if 64 <= o < 1_048_576]
    assert _spark(data, 64, 1_048_576)[0] == inside
