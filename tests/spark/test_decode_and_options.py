"""No-broker checks: record batches into Arrow (codecs, control batches, range
bounds, read_committed's aborted transactions, the schema Spark demands),
option checking, rate limiting, cutting ranges into input partitions, holding
back small micro-batches."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, ReadMinRows

from muster.client.types import TopicPartition
from muster.records import compression
from muster.records.batch import Record, build_batch
from muster.spark import source
from muster.spark.decode import Columns, decode_into
from muster.spark.offsets import from_json, rate_limit, split_ranges, to_json
from muster.spark.options import parse_source
from muster.spark.schema import arrow_schema
from muster.spark.source import StreamReader

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


def _txn(base: int, n: int, pid: int, codec: int = compression.NONE) -> bytes:
    """n records of producer `pid`'s transaction at base.."""
    return _batch(base, n, codec, producer_id=pid, producer_epoch=0, transactional=True)


def _marker(offset: int, pid: int, commit: bool) -> bytes:
    key = b"\x00\x00\x00\x01" if commit else b"\x00\x00\x00\x00"  # COMMIT / ABORT
    return build_batch(
        [Record(key, b"\x00\x00\x00\x00\x00\x00")],
        base_offset=offset,
        producer_id=pid,
        producer_epoch=0,
        transactional=True,
        control=True,
    )


def _transactions(codec: int = compression.NONE) -> bytes:
    """Producer 7's transaction at 0..2 and 6..7, aborted (marker 8), with
    producer 8's committed one at 3..5 between (marker 9); then producer 7's
    next transaction at 10..11, committed (marker 12), and a plain batch at 13."""
    return b"".join(
        [
            _txn(0, 3, 7, codec),
            _txn(3, 3, 8, codec),
            _txn(6, 2, 7, codec),
            _marker(8, 7, commit=False),
            _marker(9, 8, commit=True),
            _txn(10, 2, 7, codec),
            _marker(12, 7, commit=True),
            _batch(13, 2, codec),
        ]
    )


@pytest.mark.parametrize("codec", [compression.NONE, compression.LZ4])
@pytest.mark.parametrize("with_headers", [True, False])  # False: the whole-batch fast path
def test_read_committed_drops_aborted_transactions(codec: int, with_headers: bool) -> None:
    data = _transactions(codec)
    cols = Columns(with_headers=with_headers)
    # read_committed with the aborted list of the Fetch answer: (producer, first offset)
    assert decode_into(cols, data, 0, 100, [(7, 0)]) == 15
    committed = [3, 4, 5, 10, 11, 13, 14]  # producer 7's later transaction is read
    assert list(cols.offsets) == committed
    rb = cols.to_arrow("t", 0)
    assert rb.schema.equals(arrow_schema(with_headers))
    assert rb.column("value").to_pylist() == [b"v" * (200 + o % 3) for o in [3, 4, 5]] + [
        b"v" * 200,
        b"v" * 201,
        b"v" * 200,
        b"v" * 201,
    ]
    # read_uncommitted (no aborted list, or an empty one): every data record
    for aborted in (None, []):
        cols = Columns(with_headers=with_headers)
        assert decode_into(cols, data, 0, 100, aborted) == 15
        assert list(cols.offsets) == [0, 1, 2, 3, 4, 5, 6, 7, 10, 11, 13, 14]


def test_read_committed_within_range_bounds() -> None:
    data = _transactions()
    # an answer starting inside the aborted transaction (its first offset is
    # before the range), a range ending inside producer 7's committed one
    tail = data[data.index(_txn(6, 2, 7)) :]
    cols = Columns(with_headers=False)
    assert decode_into(cols, tail, 6, 11, [(7, 0)]) == 15  # past every whole batch
    assert list(cols.offsets) == [10]
    cols = Columns(with_headers=False)
    assert decode_into(cols, data, 4, 100, [(7, 0)]) == 15
    assert list(cols.offsets) == [4, 5, 10, 11, 13, 14]


def test_isolation_level_option() -> None:
    base = {"kafka.bootstrap.servers": "h:1", "subscribe": "t"}
    assert parse_source(base, streaming=False).isolation_level == 0  # Spark's default
    opts = parse_source({**base, "Kafka.Isolation.Level": "read_committed"}, streaming=True)
    assert opts.isolation_level == 1
    assert (
        parse_source({**base, "kafka.isolation.level": "read_uncommitted"}, False).isolation_level
        == 0
    )
    with pytest.raises(ValueError, match="read_committed, read_uncommitted"):
        parse_source({**base, "kafka.isolation.level": "serializable"}, streaming=False)
    ranges = source.plan_ranges(opts, {TopicPartition("t", 0): 0}, {TopicPartition("t", 0): 10})
    assert [r.fetch.isolation_level for r in ranges] == [1]


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


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"maxRecordsPerPartition": "0"}, "'0' for option 'maxRecordsPerPartition', must be a pos"),
        ({"maxRecordsPerPartition": "ten"}, "option 'maxRecordsPerPartition'"),
        ({"minOffsetsPerTrigger": "-1"}, "'-1' for option 'minOffsetsPerTrigger', must be a pos"),
        ({"minOffsetsPerTrigger": "1.5"}, "option 'minOffsetsPerTrigger'"),
        ({"maxOffsetsPerTrigger": "x"}, "option 'maxOffsetsPerTrigger'"),
        ({"minPartitions": "0"}, "option 'minPartitions'"),
        (
            {"minOffsetsPerTrigger": "20", "maxOffsetsPerTrigger": "15"},
            r"minOffsetPerTrigger\(20\) is higher than the maxOffsetsPerTrigger\(15\)",
        ),
        ({"maxTriggerDelay": "soon"}, "'soon' for option 'maxTriggerDelay', must be a duration"),
        ({"maxTriggerDelay": "-5s"}, "option 'maxTriggerDelay'"),
        ({"maxTriggerDelay": "5 parsecs"}, "option 'maxTriggerDelay'"),
    ],
)
@pytest.mark.parametrize("streaming", [True, False])
def test_limits_must_be_positive_and_delays_durations(
    options: dict[str, str], message: str, streaming: bool
) -> None:
    base = {"kafka.bootstrap.servers": "h:1", "subscribe": "t"}
    with pytest.raises(ValueError, match=message):
        parse_source({**base, **options}, streaming=streaming)


def test_limits_and_delays_parse_as_spark_reads_them() -> None:
    base = {"kafka.bootstrap.servers": "h:1", "subscribe": "t"}
    default = parse_source(base, streaming=True)
    assert default.max_trigger_delay_ms == 15 * 60 * 1000
    assert default.min_offsets_per_trigger is None
    assert default.max_records_per_partition is None
    delays = {"30s": 30_000, "500ms": 500, "2": 2, "1H": 3_600_000, "1500us": 1, "2min": 120_000}
    for text, ms in delays.items():
        assert parse_source({**base, "maxTriggerDelay": text}, True).max_trigger_delay_ms == ms
    opts = parse_source(
        {
            **base,
            "MINOFFSETSPERTRIGGER": "5",
            "maxOffsetsPerTrigger": "5",
            "maxrecordsperpartition": " 7",
        },
        streaming=True,
    )
    assert (opts.min_offsets_per_trigger, opts.max_offsets_per_trigger) == (5, 5)
    assert opts.max_records_per_partition == 7


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


def _spans(tp: TopicPartition, *bounds: tuple[int, int]) -> list[tuple[TopicPartition, int, int]]:
    return [(tp, b, e) for b, e in bounds]


def test_max_records_per_partition_cuts_ranges_evenly() -> None:
    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    spans = [(a, 0, 10), (b, 100, 103)]
    # ceil(10 / 3) = 4 pieces of 2, 2, 3, 3 (the later ones take the remainder); 3 fits
    assert split_ranges(spans, None, 3) == [
        *_spans(a, (0, 2), (2, 4), (4, 7), (7, 10)),
        (b, 100, 103),
    ]
    assert split_ranges(spans, None, 1) == [
        *[(a, o, o + 1) for o in range(10)],
        *[(b, o, o + 1) for o in range(100, 103)],
    ]
    assert split_ranges(spans, None, 1000) == spans
    # empty ranges are no partitions at all
    assert split_ranges([(a, 5, 5), (b, 0, 4)], None, 2) == _spans(b, (0, 2), (2, 4))


def test_min_partitions_cuts_after_max_records() -> None:
    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    # 3 pieces from maxRecordsPerPartition are fewer than 6: cut again by size. b
    # stays whole, the two halves of a share the other 5 (2.5 rounds up to 3 each).
    cut = split_ranges([(a, 0, 90), (b, 0, 10)], 6, 50)
    assert cut == [*[(a, o, o + 15) for o in range(0, 90, 15)], (b, 0, 10)]
    # enough pieces already: minPartitions changes nothing
    assert split_ranges([(a, 0, 90), (b, 0, 10)], 2, 50) == [
        *_spans(a, (0, 45), (45, 90)),
        (b, 0, 10),
    ]
    # minPartitions alone: the small range stays whole, the large one takes the rest
    assert split_ranges([(a, 0, 100), (b, 0, 5)], 4, None) == [
        *_spans(a, (0, 33), (33, 66), (66, 100)),
        (b, 0, 5),
    ]


class _Log:
    """Stands in for the broker behind a StreamReader: one partition whose end moves."""

    tp = TopicPartition("t", 0)

    def __init__(self) -> None:
        self.end = 0

    def partitions(self) -> list[TopicPartition]:
        return [self.tp]

    def latest(self, tps: Any) -> dict[TopicPartition, int]:
        return dict.fromkeys(tps, self.end)

    def earliest(self, tps: Any) -> dict[TopicPartition, int]:
        return dict.fromkeys(tps, 0)


def _reader(monkeypatch: pytest.MonkeyPatch, **options: str) -> tuple[StreamReader, _Log, Any]:
    base = {"kafka.bootstrap.servers": "h:1", "subscribe": "t"}
    reader = StreamReader(parse_source({**base, **options}, streaming=True))
    log = _Log()
    reader.resolver = log  # type: ignore[assignment]
    clock = [0.0]
    monkeypatch.setattr(source, "_now", lambda: clock[0])
    return reader, log, clock


def _end(reader: StreamReader, start: int, limit: Any = None) -> int:
    limit = reader.getDefaultReadLimit() if limit is None else limit
    return reader.latestOffset({"t": {"0": start}}, limit)["t"]["0"]


def test_min_offsets_per_trigger_holds_back_until_enough_or_the_delay(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reader, log, clock = _reader(monkeypatch, minOffsetsPerTrigger="5", maxTriggerDelay="2s")
    assert reader.getDefaultReadLimit() == ReadMinRows(5)
    log.end = 3
    assert _end(reader, 0) == 3  # the first trigger is never held back
    clock[0], log.end = 0.5, 5
    assert _end(reader, 3) == 3  # 2 new offsets: the same end, no batch
    clock[0], log.end = 1.0, 8
    assert _end(reader, 3) == 8  # 5 new: the batch runs, and the delay restarts
    clock[0], log.end = 2.9, 9
    assert _end(reader, 8) == 8
    clock[0] = 3.0
    assert _end(reader, 8) == 9  # 2 s since the last batch: however few, it runs
    clock[0], log.end = 3.1, 10
    assert _end(reader, 9) == 9
    assert _end(reader, 9, ReadAllAvailable()) == 10  # Trigger.Once lifts the minimum
    reader.target = {log.tp: 12}  # Trigger.AvailableNow reads all it has
    assert _end(reader, 10) == 12


def test_min_and_max_offsets_per_trigger_bound_a_batch_from_both_sides(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reader, log, clock = _reader(monkeypatch, minOffsetsPerTrigger="5", maxOffsetsPerTrigger="8")
    assert reader.getDefaultReadLimit() == ReadMaxRows(8)
    log.end = 20
    assert _end(reader, 0) == 8
    assert _end(reader, 8) == 16
    assert _end(reader, 16) == 16  # 4 left: fewer than the minimum
    clock[0], log.end = 1.0, 21
    assert _end(reader, 16) == 21
