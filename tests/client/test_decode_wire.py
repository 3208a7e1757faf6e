"""The consumer's batch decoder (core/decode.py) on record batches written by
confluent-kafka (librdkafka) through a muster broker, every codec, with
headers, null keys and values and every varint width, checked against the
reference decoder of muster.records.batch; plus control batches, LogAppendTime
and truncated answers spliced into those bytes, and the fetch manager's
raw-then-decoded buffer."""

from __future__ import annotations

import asyncio
import gc
import struct
from typing import Any

import pytest

from muster.client.core.decode import decode_records, scan_batches
from muster.client.core.fetcher import EARLIEST, FetchManager
from muster.client.errors import ProtocolError
from muster.client.net import Cluster
from muster.client.types import TopicPartition
from muster.protocol.codec import build, response_schema
from muster.records.batch import Record, build_batch, iter_batches, iter_records
from tests.wire.clients import confluent_produce, create_topic

FETCH = 1
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def messages() -> list[tuple[int, bytes | None, bytes | None, list[tuple[str, bytes]]]]:
    out: list[tuple[int, bytes | None, bytes | None, list[tuple[str, bytes]]]] = []
    for i, size in enumerate((0, 1, 63, 64, 100, 1024, 8191, 8192, 70_000)):
        out.append((0, b"k%d" % i, b"v" * size, []))
    out.append((0, None, b"null key", []))
    out.append((0, b"tombstone", None, []))
    out.append((0, None, None, [("only", b"headers")]))
    out.append((0, b"h", b"with headers", [("a", b"1"), ("b" * 70, b"x" * 300), ("c", b"")]))
    out += [(0, None, b"m%d" % i, []) for i in range(300)]  # offset deltas past 63
    return out


def fetch_raw(bootstrap: str, topic: str, offset: int = 0) -> bytes:
    """The record bytes of one Fetch answer for partition 0, as the consumer gets them."""

    async def run() -> bytes:
        cluster = Cluster(bootstrap)
        try:
            await cluster.refresh_metadata([topic])
            leader = cluster.leader_for(topic, 0)
            assert leader is not None
            conn = await cluster.connection(leader)
            body = {
                "replica_id": -1,
                "max_wait": 0,
                "min_bytes": 1,
                "max_bytes": 52_428_800,
                "isolation_level": 0,
                "session_id": 0,
                "session_epoch": -1,
                "topics": [
                    {
                        "topic": topic,
                        "partitions": [
                            {
                                "partition": 0,
                                "current_leader_epoch": -1,
                                "fetch_offset": offset,
                                "last_fetched_epoch": -1,
                                "log_start_offset": -1,
                                "partition_max_bytes": 52_428_800,
                            }
                        ],
                    }
                ],
                "forgotten_topics_data": [],
                "rack_id": "",
            }
            response = await conn.send(FETCH, body)
            part = response.responses[0].partitions[0]
            assert int(part.error_code) == 0
            return bytes(part.records)
        finally:
            await cluster.close()

    return asyncio.run(run())


@pytest.fixture(scope="module", params=CODECS)
def confluent_batches(request: pytest.FixtureRequest, muster_broker: Any) -> tuple[str, bytes]:
    codec = request.param
    topic = f"decode-{codec}"
    create_topic(muster_broker.bootstrap, topic, 1)
    # two produce calls: at least two batches, so offsets past the first count
    msgs = messages()
    confluent_produce(muster_broker.bootstrap, topic, msgs[:20], **{"compression.type": codec})
    confluent_produce(muster_broker.bootstrap, topic, msgs[20:], **{"compression.type": codec})
    data = fetch_raw(muster_broker.bootstrap, topic)
    return codec, data


def reference(data: bytes, topic: str = "t") -> list[tuple[Any, ...]]:
    out = []
    offset = 0
    for header in iter_batches(data):
        for i, r in enumerate(iter_records(data[header.position : header.end])):
            offset = header.base_offset + i
            out.append((topic, 0, offset, r.key, r.value, tuple(r.headers), r.timestamp, 0))
    return out


TP = TopicPartition("t", 0)


def test_decoder_matches_reference_on_confluent_batches(confluent_batches):
    codec, data = confluent_batches
    headers = list(iter_batches(data))
    assert len(headers) >= 2
    if codec != "none":
        # librdkafka sends a batch uncompressed when compressing does not shrink it
        assert any(h.attributes & 0x07 for h in headers)
    want = reference(data)
    assert len(want) == len(messages())
    got, next_offset = decode_records(TP, data, 0)
    assert [tuple(r) for r in got] == want
    assert next_offset == len(want) == scan_batches(data, 0)
    sent = messages()
    assert [(r.key, r.value, r.headers) for r in got] == [(k, v, tuple(h)) for _p, k, v, h in sent]
    assert got[11].key is None and got[11].value is None
    # a fetch from the middle of a batch: the records before it are skipped
    middle = headers[1].base_offset + 5
    later, end = decode_records(TP, data, middle)
    assert [r.offset for r in later] == list(range(middle, len(want)))
    assert end == scan_batches(data, middle) == len(want)


def test_control_batch_between_confluent_batches_is_skipped(confluent_batches):
    _codec, data = confluent_batches
    n = len(reference(data))
    marker = build_batch([Record(b"\x00\x00\x00\x00", b"\x00" * 6)], base_offset=n, control=True)
    after = build_batch([Record(None, b"after", [], 42)], base_offset=n + 1)
    got, next_offset = decode_records(TP, data + marker + after, 0)
    assert [r.offset for r in got] == [*range(n), n + 1]
    assert got[-1].value == b"after" and got[-1].timestamp == 42
    assert next_offset == n + 2 == scan_batches(data + marker + after, 0)
    # an answer ending in a control batch still moves the position past it
    assert decode_records(TP, data + marker, n) == ([], n + 1)


def test_truncated_answer_decodes_whole_batches_only(confluent_batches):
    _codec, data = confluent_batches
    headers = list(iter_batches(data))
    cut = data[: headers[-1].position + 70]  # the last batch arrives partly
    got, next_offset = decode_records(TP, cut, 0)
    assert next_offset == headers[-1].base_offset == scan_batches(cut, 0)
    assert [r.offset for r in got] == list(range(next_offset))
    assert scan_batches(data[:30], 0) == 0 and decode_records(TP, data[:30], 0) == ([], 0)


def test_log_append_time_batches_use_the_broker_time():
    records = [Record(None, b"v%d" % i, [], 1_000 + i) for i in range(3)]
    data = build_batch(records, base_offset=7, log_append_time=True, max_timestamp=99_999)
    got, _ = decode_records(TP, data, 8)
    assert [(r.offset, r.timestamp, r.timestamp_type) for r in got] == [
        (8, 99_999, 1),
        (9, 99_999, 1),
    ]


def test_garbled_lengths_are_protocol_errors():
    data = bytearray(build_batch([Record(b"k", b"v", [], 5)] * 3))
    struct.pack_into(">i", data, 8, 10)  # batch length below the header's size
    with pytest.raises(ProtocolError):
        scan_batches(bytes(data), 0)
    with pytest.raises(ProtocolError):
        decode_records(TP, bytes(data), 0)


# ---------------------------------------------------------------- the fetch manager


def fetch_response(records: bytes, high_watermark: int) -> Any:
    return build(
        response_schema(1, 12),
        {
            "responses": [
                {
                    "topic": "t",
                    "partitions": [
                        {
                            "partition_index": 0,
                            "records": records,
                            "high_watermark": high_watermark,
                        }
                    ],
                }
            ]
        },
    )


def leaders(topic: str, partition: int) -> int | None:
    return 1


def batch(base: int, n: int) -> bytes:
    return build_batch(
        [Record(None, b"v%d" % (base + i), [], 10) for i in range(n)], base_offset=base
    )


def test_accept_buffers_raw_and_the_next_fetch_needs_no_decoding():
    f = FetchManager(default_reset=EARLIEST, use_committed=False)
    f.assign([TP])
    f.seek(TP, 0)
    (fetch,), _ = f.poll(0, leaders)
    f.accept(fetch, fetch_response(batch(0, 4) + batch(4, 3), 20), 0)
    assert f.buffer[0].records is None  # nothing decoded yet
    (prefetch,), _ = f.poll(0, leaders)
    assert prefetch.body["topics"][0]["partitions"][0]["fetch_offset"] == 7
    assert f.buffer[0].records is None
    assert [r.value for r in f.take_records()] == [b"v%d" % i for i in range(7)]
    assert f.position(TP) == 7


def test_corrupt_answer_found_at_take_keeps_the_position_and_drops_the_prefetch():
    f = FetchManager(default_reset=EARLIEST, use_committed=False)
    f.assign([TP])
    f.seek(TP, 0)
    (fetch,), _ = f.poll(0, leaders)
    bad = bytearray(batch(0, 3))
    bad[-2:] = b"\xff\xff"  # garble the last record, not the batch header
    f.accept(fetch, fetch_response(bytes(bad), 10), 0)
    assert not f.errors  # the headers are fine: found when decoded
    (prefetch,), _ = f.poll(0, leaders)
    assert prefetch.tag == {TP: 3}
    assert f.take_records() == []
    assert "corrupt" in str(f.errors.popleft())
    assert f.position(TP) == 0
    f.accept(prefetch, fetch_response(batch(3, 2), 10), 0)  # behind the dropped answer
    assert f.take_records() == []
    (again,), _ = f.poll(0, leaders)
    assert again.tag == {TP: 0}  # asked for again, as before the pipelining


def test_decoding_leaves_the_collector_as_it_found_it():
    good = batch(0, 3)
    bad = bytearray(good)
    bad[-2:] = b"\xff\xff"
    was = gc.isenabled()
    try:
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            assert len(decode_records(TP, good, 0)[0]) == 3
            assert gc.isenabled() is enabled
            with pytest.raises(ProtocolError):
                decode_records(TP, bytes(bad), 0)
            assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
