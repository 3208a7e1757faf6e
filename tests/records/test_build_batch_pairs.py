"""`build_batch` of plain (key, value) pairs (the coordinators' records, one
batch per sync commit) takes a path without Record objects; it writes exactly
the bytes the general path writes for the same records as `Record`s (what the
log, replay and every client read), for commits, tombstones, long keys and
values (multi-byte varints) and transactional offset batches."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from muster.records.batch import Record, build_batch, build_one, iter_records, validate_batches

_records = st.lists(
    st.tuples(st.binary(min_size=1, max_size=300), st.none() | st.binary(max_size=20_000)),
    min_size=1,
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(records=_records, timestamp=st.integers(0, 2**62))
def test_same_bytes_as_build_batch(
    records: list[tuple[bytes, bytes | None]], timestamp: int
) -> None:
    lean = build_batch(records, timestamp_ms=timestamp)
    assert lean == build_batch(_general(records), timestamp_ms=timestamp)
    validate_batches(lean)  # CRC and lengths hold
    assert [(r.key, r.value) for r in iter_records(lean)] == records


@settings(max_examples=100, deadline=None)
@given(
    records=_records,
    producer_id=st.integers(0, 2**63 - 1),
    epoch=st.integers(0, 32767),
)
def test_transactional_batch_same_bytes(
    records: list[tuple[bytes, bytes | None]], producer_id: int, epoch: int
) -> None:
    kw = {"producer_id": producer_id, "producer_epoch": epoch, "transactional": True}
    assert build_batch(records, timestamp_ms=1_700_000_000_000, **kw) == build_batch(
        _general(records), timestamp_ms=1_700_000_000_000, **kw
    )


def test_one_commit_record() -> None:
    record = (b"\x00\x01\x00\x02g1\x00\x01t\x00\x00\x00\x00", b"\x00\x03" + b"\x00" * 30)
    assert build_batch([record], timestamp_ms=1234) == build_batch(
        _general([record]), timestamp_ms=1234
    )


def test_pairs_keep_the_header_overrides() -> None:
    records = [(b"k1", b"v"), (b"k2", None)]
    kw = {"timestamp_ms": 5000, "base_timestamp": 4000, "max_timestamp": 6000}
    assert build_batch(records, **kw) == build_batch(_general(records), **kw)


def _general(records: list[tuple[bytes, bytes | None]]) -> list[Record]:
    """The same records as Record objects: build_batch's general path."""
    return [Record(key, value) for key, value in records]


@settings(max_examples=200, deadline=None)
@given(
    key=st.none() | st.binary(max_size=300),
    value=st.none() | st.binary(max_size=20_000),
    timestamp=st.integers(0, 2**62),
)
def test_one_record_builder_same_bytes(
    key: bytes | None, value: bytes | None, timestamp: int
) -> None:
    """The runtime's builder of a one-partition commit (and tombstone) writes
    what build_batch writes."""
    assert build_one(key, value, timestamp) == build_batch([(key, value)], timestamp_ms=timestamp)
