"""A coordinator write too big for one batch goes out as several, each within
max.message.bytes, in one append: an expiry of 100,000 offsets used to build
one 9.6 MB batch that the log refused, so nothing ever expired."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from muster.records.batch import iter_records, validate_batches
from muster.server.group_runtime.runtime import _batches


@settings(max_examples=25, deadline=None)
@given(
    sizes=st.lists(st.tuples(st.integers(1, 300), st.integers(-1, 300)), min_size=1, max_size=200),
    limit=st.integers(800, 4000),
)
def test_every_batch_fits_and_the_records_stay_in_order(
    sizes: list[tuple[int, int]], limit: int
) -> None:
    records = [
        (i.to_bytes(4, "big") * (k // 4 + 1), None if v < 0 else b"v" * v)
        for i, (k, v) in enumerate(sizes)
    ]
    out = _batches(records, limit, timestamp_ms=1)
    headers = validate_batches(out, limit)  # raises when a batch is over the limit
    assert len(headers) >= sum(len(k) + len(v or b"") for k, v in records) // limit
    assert [(r.key, r.value) for r in iter_records(out)] == records


def test_a_small_write_stays_one_batch() -> None:
    out = _batches([(b"k", b"v"), (b"k2", None)], 1_048_588, timestamp_ms=1)
    assert len(validate_batches(out)) == 1
