"""collect_latest (the coordinator's load scanner) against the full record
decoder: the last record of each key, in the log order of those records."""

from __future__ import annotations

import pytest

from muster.records import compression
from muster.records.batch import Record, build_batch, iter_batches, iter_records
from muster.records.errors import CorruptRecordError
from muster.records.latest import collect_latest

CODECS = [compression.NONE, compression.GZIP, compression.SNAPPY, compression.LZ4, compression.ZSTD]


def _reference(buf: bytes, from_offset: int) -> dict[bytes, tuple[int, bytes | None]]:
    out: dict[bytes, tuple[int, bytes | None]] = {}
    for header in iter_batches(buf):
        if header.is_control:
            continue
        for r in iter_records(buf[header.position : header.end]):
            assert r.offset is not None
            if r.key is None or r.offset < from_offset:
                continue
            out.pop(r.key, None)
            out[r.key] = (r.offset, r.value)
    return out


def _log(codec: int) -> tuple[bytes, int]:
    """Batches exercising every varint width the scanner reads inline or not:
    long keys and values, offset deltas past one and two bytes, negative and
    large timestamp deltas, headers, tombstones, keyless records, a control
    batch, and keys written again later."""
    batches = []
    base = 0
    batches.append(
        build_batch(
            [(b"k1", b"v1"), (b"k2", b"v2"), (None, b"no key"), (b"k3", None)],
            base_offset=base,
            timestamp_ms=1000,
            compression_type=codec,
        )
    )
    base += 4
    long_key = b"K" * 70  # two-byte length
    huge_value = bytes(range(256)) * 40  # 10,240 bytes: three-byte length
    sparse = [
        Record(b"k1", b"v1-again", timestamp=5, offset=base),
        Record(long_key, huge_value, headers=[("h", b"x"), ("h2", None)], offset=base + 70),
        Record(b"k6", b"v6", offset=base + 100),  # two-byte delta, never superseded
        Record(b"k4", b"x" * 64, timestamp=10**12, offset=base + 9000),  # three-byte delta
        Record(b"k2", None, offset=base + 9001),
    ]
    batches.append(build_batch(sparse, base_offset=base, timestamp_ms=1000, compression_type=codec))
    base += 9002
    batches.append(
        build_batch(
            [(b"\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00\x00")],
            base_offset=base,
            control=True,
            transactional=True,
            producer_id=7,
            producer_epoch=0,
        )
    )
    base += 1
    batches.append(
        build_batch(
            [(b"k3", b"v3"), (long_key, b"short now"), (b"k5", b"")],
            base_offset=base,
            timestamp_ms=900,
            compression_type=codec,
        )
    )
    base += 3
    return b"".join(batches), base


@pytest.mark.parametrize("codec", CODECS)
def test_matches_the_full_decoder(codec: int) -> None:
    buf, end = _log(codec)
    latest: dict[bytes, tuple[int, bytes | None]] = {}
    assert collect_latest(buf, 0, latest) == end
    assert list(latest.items()) == list(_reference(buf, 0).items())
    assert latest[b"k2"] == (9005, None)  # a tombstone wins over the earlier value
    assert latest[b"k6"] == (104, b"v6")
    assert list(latest)[-3:] == [b"k3", b"K" * 70, b"k5"]  # re-written keys move last


@pytest.mark.parametrize("from_offset", [1, 4, 74, 104, 9006, 9008])
def test_skips_records_before_the_start_offset(from_offset: int) -> None:
    buf, end = _log(compression.NONE)
    latest: dict[bytes, tuple[int, bytes | None]] = {}
    assert collect_latest(buf, from_offset, latest) == end
    assert list(latest.items()) == list(_reference(buf, from_offset).items())
    assert all(offset >= from_offset for offset, _v in latest.values())


def test_control_batches_are_skipped_but_move_the_offset_on() -> None:
    marker = build_batch(
        [(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00")],
        base_offset=10,
        control=True,
        transactional=True,
        producer_id=7,
        producer_epoch=0,
    )
    latest: dict[bytes, tuple[int, bytes | None]] = {}
    assert collect_latest(marker, 10, latest) == 11
    assert latest == {}


def test_partial_trailing_batch_is_left_for_the_next_read() -> None:
    first = build_batch([(b"a", b"1")], base_offset=0)
    second = build_batch([(b"b", b"2")], base_offset=1)
    latest: dict[bytes, tuple[int, bytes | None]] = {}
    assert collect_latest(first + second[:-3], 0, latest) == 1
    assert latest == {b"a": (0, b"1")}
    assert collect_latest(b"", 5, latest) == 5


def test_garbled_record_length_is_corrupt() -> None:
    buf = bytearray(build_batch([(b"key", b"value")]))
    buf[61] = 0x7E  # zigzag 63: the record claims more bytes than the batch has
    with pytest.raises(CorruptRecordError):
        collect_latest(bytes(buf), 0, {})


def test_value_overrunning_its_record_is_corrupt() -> None:
    buf = bytearray(build_batch([(b"key", b"value")]))
    # record: length, attributes, ts delta, offset delta, key length, key, value length
    value_len_at = 61 + 1 + 1 + 1 + 1 + 1 + 3
    assert buf[value_len_at] == 10  # zigzag 5
    buf[value_len_at] = 20
    with pytest.raises(CorruptRecordError):
        collect_latest(bytes(buf), 0, {})
