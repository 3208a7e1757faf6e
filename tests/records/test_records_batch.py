"""Record batch v2 codec: wire compatibility with third-party encoders, CRC,
validation errors, offsets rewrite, every compression codec."""

from __future__ import annotations

import struct
import warnings

import cramjam
import pytest
from aiokafka.record.default_records import DefaultRecordBatch as AioBatch
from aiokafka.record.default_records import DefaultRecordBatchBuilder as AioBuilder
from crc32c import crc32c

from muster.records import compression
from muster.records.batch import (
    HEADER_SIZE,
    Record,
    assign_offsets,
    build_batch,
    crc_ok,
    decode_batch,
    iter_batches,
    iter_records,
    read_header,
    set_base_offset,
    set_log_append_time,
    validate_batches,
    zigzag_decode,
    zigzag_encode,
)
from muster.records.errors import CorruptRecordError, InvalidRecordError, RecordTooLargeError

with warnings.catch_warnings():  # kafka-python's schema loader warns on import
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.record.default_records import DefaultRecordBatch as KpBatch
    from kafka.record.default_records import DefaultRecordBatchBuilder as KpBuilder

CODECS = [compression.NONE, compression.GZIP, compression.SNAPPY, compression.LZ4, compression.ZSTD]


def third_party_batch(builder_cls, codec: int, n: int = 5, **kw) -> bytes:
    b = builder_cls(
        magic=2,
        compression_type=codec,
        is_transactional=False,
        producer_id=kw.get("producer_id", -1),
        producer_epoch=kw.get("producer_epoch", -1),
        base_sequence=kw.get("base_sequence", -1),
        batch_size=1 << 20,
    )
    for i in range(n):
        b.append(i, 1_000 + i, b"key-%d" % i, b"v" * (i * 300), [("h", b"x%d" % i)])
    return bytes(b.build())


@pytest.mark.parametrize("codec", CODECS)
def test_decodes_aiokafka_batches_for_every_codec(codec: int) -> None:
    buf = third_party_batch(AioBuilder, codec, producer_id=9, producer_epoch=2, base_sequence=40)
    (h,) = validate_batches(buf)
    assert (h.compression, h.record_count, h.last_offset_delta) == (codec, 5, 4)
    assert (h.producer_id, h.producer_epoch, h.base_sequence, h.last_sequence) == (9, 2, 40, 44)
    assert (h.base_timestamp, h.max_timestamp, h.size) == (1_000, 1_004, len(buf))
    _, records = decode_batch(buf)
    assert [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in records] == [
        (i, 1_000 + i, b"key-%d" % i, b"v" * (i * 300), [("h", b"x%d" % i)]) for i in range(5)
    ]


@pytest.mark.parametrize("codec", [compression.NONE, compression.GZIP])
def test_decodes_kafka_python_batches(codec: int) -> None:
    buf = third_party_batch(KpBuilder, codec)
    validate_batches(buf)
    assert [r.key for r in iter_records(buf)] == [b"key-%d" % i for i in range(5)]


@pytest.mark.parametrize("codec", CODECS)
def test_builder_output_is_read_by_aiokafka(codec: int) -> None:
    recs = [
        Record(b"k1", b"hello" * 100, [("a", b"1"), ("b", None)], 5_000),
        Record(None, None, (), 5_007),
        Record(b"k3", b"", (), 4_999),
    ]
    buf = build_batch(
        recs,
        base_offset=100,
        compression_type=codec,
        producer_id=3,
        producer_epoch=0,
        base_sequence=7,
    )
    theirs = AioBatch(buf)
    assert theirs.validate_crc()
    assert theirs.base_offset == 100 and theirs.compression_type == codec
    got = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in theirs]
    assert got == [
        (100, 5_000, b"k1", b"hello" * 100, [("a", b"1"), ("b", None)]),
        (101, 5_007, None, None, []),
        (102, 4_999, b"k3", b"", []),
    ]
    h = read_header(buf)
    assert (h.base_timestamp, h.max_timestamp, h.last_offset_delta) == (4_999, 5_007, 2)


def test_builder_output_is_read_by_kafka_python() -> None:
    buf = build_batch([(b"a", b"1"), (b"b", b"2")], timestamp_ms=77, compression_type=1)
    theirs = KpBatch(buf)
    assert theirs.validate_crc()
    assert [(r.offset, r.key, r.value, r.timestamp) for r in theirs] == [
        (0, b"a", b"1", 77),
        (1, b"b", b"2", 77),
    ]


@pytest.mark.parametrize("codec", CODECS)
def test_every_codec_round_trips_through_the_record_decoder(codec: int) -> None:
    recs = [Record(b"k%d" % i, bytes(range(256)) * i, (), 10 + i) for i in range(50)]
    buf = build_batch(recs, compression_type=codec)
    validate_batches(buf)
    assert [(r.key, r.value, r.offset, r.timestamp) for r in iter_records(buf)] == [
        (b"k%d" % i, bytes(range(256)) * i, i, 10 + i) for i in range(50)
    ]


def test_snappy_decodes_raw_xerial_and_framed() -> None:
    data = b"abc" * 50_000  # > one 32 KiB xerial block
    xerial = compression.compress(compression.SNAPPY, data)
    assert xerial.startswith(compression.XERIAL_MAGIC)
    assert compression.decompress(compression.SNAPPY, xerial) == data
    raw = bytes(cramjam.snappy.compress_raw(data))  # what librdkafka writes
    assert compression.decompress(compression.SNAPPY, raw) == data
    framed = bytes(cramjam.snappy.compress(data))
    assert compression.decompress(compression.SNAPPY, framed) == data


def test_lz4_uses_the_frame_format_with_independent_blocks() -> None:
    data = bytes(range(256)) * 1000  # several 64 KiB blocks
    out = compression.compress(compression.LZ4, data)
    assert out[:4] == b"\x04\x22\x4d\x18"  # LZ4 frame magic
    assert out[4] & 0x20  # FLG block independence: Kafka's Java reader needs it (KIP-57)
    assert compression.decompress(compression.LZ4, out) == data


def test_garbled_compressed_payload_is_corrupt() -> None:
    buf = bytearray(build_batch([(b"k", b"v" * 100)], compression_type=compression.GZIP))
    buf[HEADER_SIZE + 12] ^= 0xFF
    struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:])))  # keep the CRC valid
    validate_batches(buf)
    with pytest.raises(CorruptRecordError):
        decode_batch(bytes(buf))


def test_crc_mismatch_is_corrupt() -> None:
    buf = bytearray(build_batch([(b"k", b"value")]))
    buf[-1] ^= 0x01
    with pytest.raises(CorruptRecordError, match="CRC"):
        validate_batches(buf)


def test_wrong_magic_is_invalid_record() -> None:
    buf = bytearray(build_batch([(b"k", b"value")]))
    buf[16] = 1
    with pytest.raises(InvalidRecordError):
        validate_batches(buf)


@pytest.mark.parametrize("cut", [1, 20, HEADER_SIZE, HEADER_SIZE + 3])
def test_truncated_record_set_is_corrupt(cut: int) -> None:
    buf = build_batch([(b"k", b"value" * 10)]) * 2
    with pytest.raises(CorruptRecordError):
        validate_batches(buf[: len(buf) - cut])


def test_garbled_length_is_corrupt() -> None:
    buf = bytearray(build_batch([(b"k", b"value")]))
    struct.pack_into(">i", buf, 8, 3)
    with pytest.raises(CorruptRecordError):
        validate_batches(buf)
    with pytest.raises(CorruptRecordError):
        validate_batches(b"")


def test_oversized_batch_is_rejected() -> None:
    buf = build_batch([(b"k", b"x" * 2000)])
    with pytest.raises(RecordTooLargeError):
        validate_batches(buf, max_batch_bytes=1000)
    assert validate_batches(buf, max_batch_bytes=len(buf))


def test_idempotent_batch_needs_a_sequence() -> None:
    with pytest.raises(InvalidRecordError):
        validate_batches(build_batch([(b"k", b"v")], producer_id=5, producer_epoch=0))


def test_set_base_offset_keeps_crc_valid() -> None:
    buf = bytearray(build_batch([(b"a", b"1"), (b"b", b"2"), (b"c", b"3")]))
    set_base_offset(buf, 0, 1_000_000)
    (h,) = validate_batches(buf)
    assert (h.base_offset, h.last_offset, h.next_offset) == (1_000_000, 1_000_002, 1_000_003)
    assert [r.offset for r in iter_records(buf)] == [1_000_000, 1_000_001, 1_000_002]


def test_set_log_append_time_rewrites_timestamps_and_crc() -> None:
    buf = bytearray(build_batch([(b"a", b"1"), (b"b", b"2")], timestamp_ms=5))
    set_log_append_time(buf, read_header(buf), 9_999)
    (h,) = validate_batches(buf)
    assert h.timestamp_type == 1 and h.max_timestamp == 9_999 and crc_ok(buf, h)
    assert [r.timestamp for r in iter_records(buf)] == [9_999, 9_999]
    assert [r.timestamp for r in AioBatch(bytes(buf))] == [9_999, 9_999]


def test_iter_batches_positions_and_partial_tail() -> None:
    a = build_batch([(b"a", b"1")] * 3, base_offset=0)
    b = build_batch([(b"b", b"2")], base_offset=3, compression_type=compression.ZSTD)
    buf = a + b + a[:30]
    hs = list(iter_batches(buf))
    assert [(h.position, h.size, h.base_offset, h.next_offset) for h in hs] == [
        (0, len(a), 0, 3),
        (len(a), len(b), 3, 4),
    ]
    with pytest.raises(CorruptRecordError):
        list(iter_batches(buf, strict=True))
    assert [h.base_offset for h in iter_batches(a + b, strict=True)] == [0, 3]


def test_control_and_transactional_flags() -> None:
    buf = build_batch(
        [(b"\x00\x00\x00\x00", b"")],
        producer_id=1,
        producer_epoch=0,
        transactional=True,
        control=True,
    )
    h = read_header(buf)
    assert h.is_control and h.is_transactional
    assert AioBatch(buf).is_control_batch


@pytest.mark.parametrize(
    "value", [0, 1, -1, 63, -64, 64, 300, -301, 1 << 31, -(1 << 31), (1 << 63) - 1, -(1 << 63)]
)
def test_zigzag_varint_round_trip(value: int) -> None:
    out = bytearray()
    zigzag_encode(value, out)
    assert zigzag_decode(bytes(out), 0) == (value, len(out))


def test_assign_offsets_over_several_batches() -> None:
    buf = bytearray(build_batch([(b"a", b"1")] * 3) + build_batch([(b"b", b"2")] * 2))
    assert assign_offsets(buf, 40) == 45
    assert [r.offset for r in iter_records(buf)] == [40, 41, 42, 43, 44]
    assert all(crc_ok(buf, h) for h in validate_batches(buf))


def test_record_decoder_only_raises_corrupt_on_garbage() -> None:
    import random

    rng = random.Random(7)
    good = build_batch([Record(b"key", b"value" * 20, [("h", b"x")], 5)] * 4)
    for _ in range(2_000):
        buf = bytearray(good)
        for _ in range(rng.randint(1, 6)):
            buf[rng.randrange(HEADER_SIZE, len(buf))] = rng.randrange(256)
        try:
            decode_batch(bytes(buf))
        except CorruptRecordError:
            pass


def test_zeroed_header_is_corrupt_not_wrong_magic() -> None:
    # Kafka checks a batch's length before its magic: 70 zero bytes are
    # CORRUPT_MESSAGE (kafka-diff)
    with pytest.raises(CorruptRecordError):
        validate_batches(b"\x00" * 70)
