"""Batch reads with `spark.read.format("muster")`, checked against what
confluent-kafka produced, on muster and on Tansu."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest

from tests.spark.kafka import Produced, create_topic, produce, produce_to, read_sorted, records


def _read(spark: Any, bootstrap: str, topic: str, **options: str) -> list[Any]:
    return read_sorted(spark, bootstrap, topic, **options)


def _by_position(produced: list[Produced]) -> list[Produced]:
    return sorted(produced, key=lambda p: (p.partition, p.offset))


def test_read_equals_what_was_produced(spark: Any, broker: Any, topic: str) -> None:
    create_topic(broker.bootstrap, topic, 3)
    data = records(30, 3)
    for i, r in enumerate(data):
        if i % 3 == 0:
            r["headers"] = [("trace", f"t{i}".encode()), ("empty", None)]
        if i == 7:
            r["key"] = None
    produced = _by_position(produce_to(broker, topic, data))

    rows = _read(spark, broker.bootstrap, topic, includeHeaders="true")

    assert len(rows) == 30
    for row, p in zip(rows, produced, strict=True):
        assert (row.topic, row.partition, row.offset) == (p.topic, p.partition, p.offset)
        assert (row.key, row.value) == (p.key, p.value)
        assert row.timestamp == dt.datetime.fromtimestamp(p.timestamp_ms / 1000, dt.UTC).replace(
            tzinfo=None
        )
        assert row.timestampType == 0
        got = None if row.headers is None else tuple((h.key, h.value) for h in row.headers)
        assert got == p.headers


def test_compressed_batches_read_back(spark: Any, shared_muster: Any, topic: str) -> None:
    create_topic(shared_muster.bootstrap, topic, 4)
    produced: list[Produced] = []
    for codec in ("gzip", "snappy", "lz4", "zstd"):
        data = records(25, 4, prefix=codec)
        produced += produce(shared_muster.bootstrap, topic, data, compression=codec)
    # a small fetch size: each range takes many Fetch requests to read
    rows = _read(
        spark, shared_muster.bootstrap, topic, **{"kafka.max.partition.fetch.bytes": "200"}
    )
    got = [(r.partition, r.offset, r.key, r.value) for r in rows]
    assert got == [(p.partition, p.offset, p.key, p.value) for p in _by_position(produced)]


def test_starting_and_ending_offsets(spark: Any, broker: Any, topic: str) -> None:
    create_topic(broker.bootstrap, topic, 2)
    produce_to(broker, topic, records(20, 2))  # offsets 0..9 in each partition
    bounds = {
        "startingOffsets": json.dumps({topic: {"0": 3, "1": -2}}),
        "endingOffsets": json.dumps({topic: {"0": 5, "1": -1}}),
    }
    rows = _read(spark, broker.bootstrap, topic, **bounds)
    assert [(r.partition, r.offset) for r in rows] == [(0, 3), (0, 4)] + [(1, o) for o in range(10)]

    explicit = _read(
        spark, broker.bootstrap, topic, startingOffsets="earliest", endingOffsets="latest"
    )
    assert len(explicit) == 20

    partial = {"startingOffsets": json.dumps({topic: {"0": 3}})}
    with pytest.raises(Exception, match="you must specify all TopicPartitions"):
        _read(spark, broker.bootstrap, topic, **partial)


def test_max_records_per_partition_cuts_input_partitions(
    spark: Any, broker: Any, topic: str
) -> None:
    create_topic(broker.bootstrap, topic, 2)
    produce_to(broker, topic, records(25, 2))  # 13 records in partition 0, 12 in 1

    def load(**options: str) -> Any:
        reader = (
            spark.read.format("muster")
            .option("kafka.bootstrap.servers", broker.bootstrap)
            .option("subscribe", topic)
        )
        return reader.options(**options).load()

    whole, cut = load(), load(maxRecordsPerPartition="5")
    assert whole.rdd.getNumPartitions() == 2
    assert cut.rdd.getNumPartitions() == 3 + 3  # ceil(13 / 5) + ceil(12 / 5)
    assert load(maxRecordsPerPartition="5", minPartitions="8").rdd.getNumPartitions() == 8
    # the same rows, each topic-partition's still in offset order
    got = [(r.partition, r.offset, r.key, r.value) for r in cut.collect()]
    expected = [(r.partition, r.offset, r.key, r.value) for r in whole.collect()]
    assert sorted(got) == sorted(expected) and len(got) == 25
    for p in (0, 1):
        offsets = [o for part, o, _k, _v in got if part == p]
        assert offsets == sorted(offsets) == list(range(len(offsets)))
    with pytest.raises(Exception, match="option 'maxRecordsPerPartition'"):
        load(maxRecordsPerPartition="0").collect()


def test_batch_refuses_latest_start_and_earliest_end(spark: Any, shared_muster: Any) -> None:
    base = {"kafka.bootstrap.servers": shared_muster.bootstrap, "subscribe": "whatever"}
    with pytest.raises(Exception, match="starting offset can't be latest"):
        spark.read.format("muster").options(**base, startingOffsets="latest").load().collect()
    with pytest.raises(Exception, match="ending offset can't be earliest"):
        spark.read.format("muster").options(**base, endingOffsets="earliest").load().collect()


def test_starting_offsets_by_timestamp(spark: Any, shared_muster: Any, topic: str) -> None:
    create_topic(shared_muster.bootstrap, topic, 1)
    base_ts = 1_700_000_000_000
    data = [
        {"key": None, "value": f"v{i}".encode(), "partition": 0, "timestamp": base_ts + i * 1000}
        for i in range(10)
    ]
    produce(shared_muster.bootstrap, topic, data)
    rows = _read(
        spark,
        shared_muster.bootstrap,
        topic,
        startingOffsetsByTimestamp=json.dumps({topic: {"0": base_ts + 6500}}),
    )
    assert [r.value for r in rows] == [b"v7", b"v8", b"v9"]


def test_a_kafka_format_job_runs_with_only_the_format_changed(
    spark: Any, broker: Any, topic: str
) -> None:
    create_topic(broker.bootstrap, topic, 2)
    produce_to(broker, topic, records(10, 2))
    # A typical job written for format("kafka"), consumer settings included.
    df = (
        spark.read.format("muster")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("kafka.security.protocol", "PLAINTEXT")
        .option("kafka.session.timeout.ms", "10000")
        .option("kafka.group.id", "ignored")
        .load()
        .selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)")
    )
    assert sorted(tuple(r) for r in df.collect()) == sorted((f"k{i}", f"v{i}") for i in range(10))


def test_assign_reads_only_the_given_partitions(spark: Any, broker: Any, topic: str) -> None:
    create_topic(broker.bootstrap, topic, 3)
    produce_to(broker, topic, records(9, 3))
    rows = (
        spark.read.format("muster")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("assign", json.dumps({topic: [0, 2]}))
        .load()
        .collect()
    )
    assert sorted(r.partition for r in rows) == [0, 0, 0, 2, 2, 2]


def test_internal_group_topics_are_readable(spark: Any, shared_muster: Any, topic: str) -> None:
    from confluent_kafka import Consumer

    create_topic(shared_muster.bootstrap, topic, 1)
    produce(shared_muster.bootstrap, topic, records(3, 1))
    group = f"g-{topic}"
    consumer = Consumer(
        {
            "bootstrap.servers": shared_muster.bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])  # a join: a rebalance event, then an offset commit
    seen = 0
    for _ in range(40):
        seen += len(consumer.consume(10, timeout=0.5))
        if seen >= 3:
            break
    consumer.commit(asynchronous=False)
    consumer.close()

    rows = (
        spark.read.format("muster")
        .option("kafka.bootstrap.servers", shared_muster.bootstrap)
        .option("subscribe", "__consumer_offsets,__muster_group_events")
        .load()
        .collect()
    )
    mentions = {r.topic for r in rows if group.encode() in (r.key or b"") + (r.value or b"")}
    assert mentions == {"__consumer_offsets", "__muster_group_events"}


def test_fail_on_data_loss(spark: Any, shared_muster: Any, topic: str) -> None:
    create_topic(shared_muster.bootstrap, topic, 1)
    produce(shared_muster.bootstrap, topic, records(5, 1))
    # offsets the log does not hold (as after retention, or a recreated topic)
    beyond = {"startingOffsets": json.dumps({topic: {"0": 50}})}
    with pytest.raises(Exception, match="failOnDataLoss"):
        _read(spark, shared_muster.bootstrap, topic, **beyond)
    assert _read(spark, shared_muster.bootstrap, topic, failOnDataLoss="false", **beyond) == []


def test_missing_subscription_is_refused(spark: Any, shared_muster: Any) -> None:
    reader = spark.read.format("muster").option("kafka.bootstrap.servers", shared_muster.bootstrap)
    with pytest.raises(Exception, match="One of the following options must be specified"):
        reader.load().collect()
