"""The client's hand-rolled record batch encoder/decoder agree with the
reference codec in muster.records.batch for every varint width, null keys and
values, headers, timestamps before the batch's first one and compression."""

from __future__ import annotations

import struct
from typing import Any

import pytest

from muster.client.core.fetcher import decode_records
from muster.client.errors import KafkaError
from muster.client.futures import settle_many
from muster.client.producer import RecordMetadata, _Pending, encode_batch
from muster.client.types import ConsumerRecord, TopicPartition
from muster.protocol.client_codec import encode_request_view
from muster.protocol.codec import request_schema
from muster.protocol.entities import schema_reader
from muster.records import compression
from muster.records.batch import Record, build_batch, iter_records

TP = TopicPartition("t", 3)


def sample_records() -> list[Record]:
    out = []
    for i, size in enumerate((0, 1, 63, 64, 127, 128, 1024, 8191, 8192, 70_000)):
        out.append(Record(b"k" * (size % 200), b"v" * size, [], 1_000 + i * 37))
    out.append(Record(None, None, [], 5_000))
    out.append(Record(b"", b"x", [("h1", b"a"), ("h2", None), ("h" * 70, b"b" * 300)], 999))
    out.append(Record(b"key", b"y" * 200, [], 1_000 + 10_000_000))
    return out


@pytest.mark.parametrize("codec", [compression.NONE, compression.GZIP, compression.ZSTD])
def test_decode_records_matches_reference(codec: int) -> None:
    records = sample_records()
    data = build_batch(records, base_offset=500, compression_type=codec)
    data += build_batch(records[:3], base_offset=500 + len(records), compression_type=codec)
    want = [
        ConsumerRecord(
            TP.topic, TP.partition, 500 + i, r.key, r.value, tuple(r.headers), r.timestamp
        )
        for i, r in enumerate(records + records[:3])
    ]
    got, next_offset = decode_records(TP, data, 500)
    assert got == want
    assert next_offset == 500 + len(records) + 3
    got, _ = decode_records(TP, data, 505)
    assert got == want[5:]
    assert all(type(r) is ConsumerRecord for r in got)
    assert [r.topic_partition() for r in got[:1]] == [TP]


def test_reference_roundtrip_sanity() -> None:
    records = sample_records()
    back = list(iter_records(build_batch(records)))
    assert [(r.key, r.value) for r in back] == [(r.key, r.value) for r in records]


def pending(record: Record) -> Any:
    return _Pending("t", None, record.key, record.value, record.headers, record.timestamp, 0.0)


@pytest.mark.parametrize("codec", [compression.NONE, compression.GZIP, compression.LZ4])
def test_encode_batch_matches_build_batch(codec: int) -> None:
    records = sample_records()
    many = [Record(b"%d" % i, b"v" * (i % 300), [], 10_000 + i % 9000) for i in range(9000)]
    for recs in (records, records[:1], many):
        entries = [pending(r) for r in recs]
        got = encode_batch(entries, codec, 7, 2, 11)
        want = build_batch(
            recs, compression_type=codec, producer_id=7, producer_epoch=2, base_sequence=11
        )
        assert got == want


def test_pending_future_builds_metadata_lazily() -> None:
    entries = [pending(Record(b"k", b"v", [], 5)) for _ in range(3)]
    for i, e in enumerate(entries):
        e.index = i
    seen: list[Any] = []
    entries[0].add_done_callback(lambda f: seen.append(f.result()))
    settle_many(entries, same=(2, 10, 7))
    assert seen == [RecordMetadata("t", 2, 10, 7)]
    assert entries[2].result() == RecordMetadata("t", 2, 12, 7)
    assert entries[2].exception() is None
    acks0 = [pending(Record(b"k", b"v", [], 5)), pending(Record(b"k", b"v", [], 0))]
    acks0[1].index = 1
    settle_many(acks0, same=(1, -1, -1))  # no offsets, no log append time
    assert [f.result() for f in acks0] == [
        RecordMetadata("t", 1, -1, 5),
        RecordMetadata("t", 1, -1, -1),
    ]
    plain = [pending(Record(None, b"v", [], 1)) for _ in range(2)]
    settle_many(plain, ["a", "b"])
    assert [f._value for f in plain] == ["a", "b"]
    failed = pending(Record(None, None, [], 1))
    settle_many([failed], error=KafkaError("boom"))
    settle_many([failed], [(0, 0, 0)])  # already settled: left alone
    assert isinstance(failed.exception(), KafkaError)
    with pytest.raises(KafkaError):
        failed.result()


def test_request_view_frames_a_produce_request() -> None:
    body = {
        "transactional_id": None,
        "acks": -1,
        "timeout": 1000,
        "topic_data": [
            {"name": "t", "partition_data": [{"index": 0, "records": bytearray(b"abc")}]}
        ],
    }
    frame = encode_request_view(0, 9, 17, "cid", body)
    assert struct.unpack_from(">i", frame)[0] == len(frame) - 4
    assert struct.unpack_from(">hhi", frame, 4) == (0, 9, 17)
    header_end = 4 + 8 + 2 + len("cid") + 1  # v2 header: client id, no tags
    request, _size = schema_reader(request_schema(0, 9))(bytes(frame), header_end)
    assert request.acks == -1
    assert bytes(request.topic_data[0].partition_data[0].records) == b"abc"


def test_decode_records_long_batch() -> None:
    records = [Record(b"%d" % i, b"v" * (i % 300), [], 10_000 + i * 3) for i in range(9000)]
    got, next_offset = decode_records(TP, build_batch(records, base_offset=7), 100)
    assert next_offset == 9007
    assert [(r.offset, r.key, r.value, r.timestamp) for r in got] == [
        (7 + i, r.key, r.value, r.timestamp) for i, r in enumerate(records) if 7 + i >= 100
    ]
