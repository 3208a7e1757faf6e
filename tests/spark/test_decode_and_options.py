"""No-broker checks: record batches into Arrow (codecs, control batches, range
bounds, the schema Spark demands), option checking, rate limiting."""

from __future__ import annotations

import pyarrow as pa
import pytest

from muster.client.types import TopicPartition
from muster.records import compression
from muster.records.batch import Record, build_batch
from muster.spark.decode import Columns, decode_into
from muster.spark.offsets import from_json, rate_limit, to_json
from muster.spark.options import parse_source
from muster.spark.schema import arrow_schema

T0 = 1_700_000_000_000


def _batch(base: int, n: int, codec: int = compression.NONE, **kw: object) -> bytes:
    recs = [
        Record(
            f"k{base + i}".encode() if i % 3 else None,
            b"v" * (200 + i),  # two-byte value lengths and record lengths
            headers=[("h", b"x")] if i % 2 else [],
            timestamp=T0 + (base + i) * 70_000,  # three-byte timestamp deltas
        )
        for i in range(n)
    ]
    return build_batch(recs, base_offset=base, compression_type=codec, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("codec", sorted(compression.CODEC_NAMES))
@pytest.mark.parametrize("with_headers", [True, False])  # False: the whole-batch fast path
def test_batches_decode_into_arrow_with_sparks_schema(codec: int, with_headers: bool) -> None:
    data = _batch(0, 5, codec) + _batch(5, 5, codec)
    cols = Columns(with_headers=with_headers)
    assert decode_into(cols, data, 0, 100) == 10
    rb = cols.to_arrow("t", 3)
    assert rb.schema.equals(arrow_schema(with_headers))
    assert rb.column("offset").to_pylist() == list(range(10))
    assert rb.column("key").to_pylist()[:4] == [None, b"k1", b"k2", None]
    assert rb.column("value").to_pylist()[9] == b"v" * 204
    assert rb.column("partition").to_pylist() == [3] * 10
    assert rb.column("topic").to_pylist() == ["t"] * 10
    stamps = rb.column("timestamp").cast(pa.int64()).to_pylist()
    assert stamps == [(T0 + i * 70_000) * 1000 for i in range(10)]
    assert rb.column("timestampType").to_pylist() == [0] * 10
    if with_headers:
        assert rb.column("headers").to_pylist()[:2] == [None, [{"key": "h", "value": b"x"}]]


def test_control_batches_are_skipped_and_bounds_respected() -> None:
    marker = build_batch([Record(b"\x00\x00\x00\x00", b"")], base_offset=5, control=True)
    data = _batch(0, 5) + marker + _batch(6, 5)
    cols = Columns(with_headers=False)
    # the next fetch position passes the whole last batch, even beyond `end`
    assert decode_into(cols, data, 2, 9) == 11
    assert list(cols.offsets) == [2, 3, 4, 6, 7, 8]
    assert cols.to_arrow("t", 0).schema.equals(arrow_schema(False))


def test_log_append_time_batches_use_the_batch_time() -> None:
    data = _batch(0, 3, log_append_time=True, max_timestamp=T0 + 5)
    cols = Columns(with_headers=False)
    decode_into(cols, data, 0, 10)
    rb = cols.to_arrow("t", 0)
    assert rb.column("timestampType").to_pylist() == [1, 1, 1]
    assert rb.column("timestamp").cast(pa.int64()).to_pylist() == [(T0 + 5) * 1000] * 3


@pytest.mark.parametrize(
    ("options", "streaming", "message"),
    [
        ({"subscribe": "t"}, True, "'kafka.bootstrap.servers' must be specified"),
        ({"kafka.bootstrap.servers": "h:1"}, True, "One of the following options must be"),
        (
            {"kafka.bootstrap.servers": "h:1", "subscribe": "t", "assign": '{"t":[0]}'},
            True,
            "Only one of the following options",
        ),
        (
            {"kafka.bootstrap.servers": "h:1", "subscribe": "t", "endingOffsets": "latest"},
            True,
            "ending offset not valid in streaming queries",
        ),
        (
            {
                "kafka.bootstrap.servers": "h:1",
                "subscribe": "t",
                "startingOffsets": '{"t":{"0":-1}}',
            },
            False,
            "starting offset can't be latest for batch queries",
        ),
        (
            {"kafka.bootstrap.servers": "h:1", "subscribe": "t", "endingOffsets": '{"t":{"0":-2}}'},
            False,
            "ending offset can't be earliest for batch queries",
        ),
    ],
)
def test_options_are_checked_like_sparks_kafka_source(
    options: dict[str, str], streaming: bool, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        parse_source(options, streaming=streaming)


def test_defaults_and_case_insensitive_names() -> None:
    base = {"Kafka.Bootstrap.Servers": "h:1", "SUBSCRIBE": "a, b"}
    stream = parse_source({**base, "failondataloss": "false"}, streaming=True)
    batch = parse_source(base, streaming=False)
    assert stream.topics == ("a", "b") and not stream.fail_on_data_loss
    assert (stream.starting.kind, batch.starting.kind, batch.ending.kind) == (
        "latest",
        "earliest",
        "latest",
    )


def test_rate_limit_spreads_the_limit_by_what_each_partition_has() -> None:
    a, b, c = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 2)
    start = {a: 0, b: 100, c: 5}
    latest = {a: 30, b: 110, c: 5}
    assert rate_limit(start, latest, 20) == {a: 15, b: 105, c: 5}
    assert rate_limit(start, latest, 1000) == latest


def test_offsets_json_has_string_partition_keys_and_round_trips() -> None:
    offsets = {TopicPartition("t", 10): 7, TopicPartition("t", 2): 3}
    data = to_json(offsets)
    assert data == {"t": {"2": 3, "10": 7}}
    assert from_json(data) == offsets


def test_patterns_leave_out_kafkas_internal_topics() -> None:
    opts = parse_source(
        {"kafka.bootstrap.servers": "h:1", "subscribePattern": "_*[a-z].*"}, streaming=True
    )
    assert opts.matches("events") and opts.matches("__muster_group_events")
    assert not opts.matches("__consumer_offsets")
    explicit = parse_source(
        {"kafka.bootstrap.servers": "h:1", "subscribe": "__consumer_offsets"}, streaming=True
    )
    assert explicit.matches("__consumer_offsets")
