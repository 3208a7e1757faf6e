"""Streaming reads: checkpointed exactly-once into Parquet across a failure,
rate limits (maximum, minimum and trigger delay), discovery of new topics and
partitions, group commits."""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType

from tests.spark.kafka import (
    add_partitions,
    committed,
    create_topic,
    produce,
    produce_to,
    records,
)


def _stream(spark: Any, bootstrap: str, **options: str) -> Any:
    reader = spark.readStream.format("muster").option("kafka.bootstrap.servers", bootstrap)
    for k, v in {"startingOffsets": "earliest", **options}.items():
        reader = reader.option(k, v)
    return reader.load()


def _fail_once_on(marker: Path) -> Any:
    """A UDF that raises on the value b"boom" the first time only (the marker
    file records that it did), like a task lost mid-batch."""

    def check(value: bytes) -> bytes:
        if value == b"boom" and not marker.exists():
            marker.touch()
            raise RuntimeError("injected failure")
        return value

    return F.udf(check, BinaryType())


def test_available_now_is_exactly_once_into_parquet_across_a_failure(
    spark: Any, broker: Any, topic: str, tmp_path: Path
) -> None:
    create_topic(broker.bootstrap, topic, 3)
    checkpoint, out, marker = tmp_path / "ckpt", tmp_path / "out", tmp_path / "failed-once"
    fail_once = _fail_once_on(marker)

    def run() -> Any:
        df = _stream(spark, broker.bootstrap, subscribe=topic)
        query = (
            df.select("partition", "offset", fail_once("value").alias("value"))
            .writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(120)
        return query

    produce_to(broker, topic, records(12, 3, prefix="a"))
    assert run().exception() is None
    first = spark.read.parquet(str(out)).count()
    assert first == 12

    produce_to(broker, topic, [*records(6, 3, prefix="b"), {"value": b"boom", "partition": 1}])
    with pytest.raises(StreamingQueryException, match="injected failure"):
        run()
    assert marker.exists()

    assert run().exception() is None  # restart from the checkpoint: the batch replays
    rows = spark.read.parquet(str(out)).collect()
    got = sorted((r.partition, r.offset) for r in rows)
    assert len(got) == len(set(got)) == 19
    assert sorted(r.value for r in rows).count(b"boom") == 1
    # the checkpoint's offsets are Spark's Kafka JSON with string partition keys
    logs = [p for p in (checkpoint / "offsets").iterdir() if p.name.isdigit()]
    last = max(logs, key=lambda p: int(p.name))
    offsets = json.loads(last.read_text().splitlines()[-1])
    assert offsets == {topic: {"0": 6, "1": 7, "2": 6}}


def test_max_offsets_per_trigger_splits_batches(spark: Any, broker: Any, topic: str) -> None:
    create_topic(broker.bootstrap, topic, 2)
    produce_to(broker, topic, records(30, 2))
    query = (
        _stream(spark, broker.bootstrap, subscribe=topic, maxOffsetsPerTrigger="10")
        .writeStream.format("memory")
        .queryName(topic.replace("-", "_"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    assert sizes == [10, 10, 10]
    assert spark.table(topic.replace("-", "_")).count() == 30


def _batches_into(batches: list[tuple[list[tuple[int, int]], int]]) -> Any:
    """A foreachBatch function keeping each batch's (partition, offset) rows and
    how many input partitions it was read with."""

    def keep(df: Any, _batch_id: int) -> None:
        rows = [(r.partition, r.offset) for r in df.select("partition", "offset").collect()]
        if rows:
            batches.append((sorted(rows), df.rdd.getNumPartitions()))

    return keep


def test_min_offsets_per_trigger_waits_for_enough_new_offsets(
    spark: Any, broker: Any, topic: str
) -> None:
    create_topic(broker.bootstrap, topic, 2)
    batches: list[tuple[list[tuple[int, int]], int]] = []
    limits = {"minOffsetsPerTrigger": "5", "maxOffsetsPerTrigger": "8"}
    query = (
        _stream(spark, broker.bootstrap, subscribe=topic, maxRecordsPerPartition="3", **limits)
        .writeStream.foreachBatch(_batches_into(batches))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    try:
        query.processAllAvailable()  # the first trigger, which no minimum holds back
        produce_to(broker, topic, records(4, 2, prefix="a"))
        query.processAllAvailable()
        assert batches == []  # 4 new offsets over both partitions: fewer than 5

        produce_to(broker, topic, records(8, 2, prefix="b"))
        query.processAllAvailable()
        # 12 new: a batch of at most 8, then the 4 left wait again
        assert [(len(rows), parts) for rows, parts in batches] == [(8, 4)]

        produce_to(broker, topic, records(2, 2, prefix="c"))
        query.processAllAvailable()
    finally:
        query.stop()
    # 4 offsets of each partition cut by maxRecordsPerPartition=3 into 2 + 2 input
    # partitions; the 3 of each in the second batch fit in one each
    assert [(len(rows), parts) for rows, parts in batches] == [(8, 4), (6, 2)]
    got = [row for rows, _parts in batches for row in rows]
    assert sorted(got) == [(p, o) for p in (0, 1) for o in range(7)]


def test_max_trigger_delay_runs_a_small_batch_anyway(
    spark: Any, shared_muster: Any, topic: str
) -> None:
    create_topic(shared_muster.bootstrap, topic, 1)
    produce(shared_muster.bootstrap, topic, records(103, 1))
    limits = {"minOffsetsPerTrigger": "100", "maxOffsetsPerTrigger": "100"}
    query = (
        _stream(spark, shared_muster.bootstrap, subscribe=topic, maxTriggerDelay="2s", **limits)
        .writeStream.format("memory")
        .queryName(topic.replace("-", "_"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    try:
        deadline = time.monotonic() + 60
        while spark.table(topic.replace("-", "_")).count() < 103:
            assert time.monotonic() < deadline, query.recentProgress
            time.sleep(0.2)
        # A batch's rows reach the memory table before its progress is reported.
        progress = [p for p in query.recentProgress if p["numInputRows"]]
        while sum(p["numInputRows"] for p in progress) < 103 and time.monotonic() < deadline:
            time.sleep(0.1)
            progress = [p for p in query.recentProgress if p["numInputRows"]]
    finally:
        query.stop()
    # 100, then the 3 left, which no more data joined, once 2 s had passed
    assert [p["numInputRows"] for p in progress] == [100, 3]
    first, second = (dt.datetime.fromisoformat(p["timestamp"]) for p in progress)
    assert (second - first).total_seconds() >= 1.5


def test_available_now_ignores_min_offsets_per_trigger(spark: Any, broker: Any, topic: str) -> None:
    create_topic(broker.bootstrap, topic, 1)
    produce_to(broker, topic, records(25, 1))
    limits = {"minOffsetsPerTrigger": "8", "maxOffsetsPerTrigger": "10"}
    query = (
        _stream(spark, broker.bootstrap, subscribe=topic, **limits)
        .writeStream.format("memory")
        .queryName(topic.replace("-", "_"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    # the last 5 are fewer than the minimum, and read all the same
    assert [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]] == [10, 10, 5]


def test_pattern_picks_up_a_new_topic_and_new_partitions(
    spark: Any, shared_muster: Any, topic: str
) -> None:
    bootstrap = shared_muster.bootstrap
    first, second = f"{topic}-a", f"{topic}-b"
    create_topic(bootstrap, first, 1)
    produce(bootstrap, first, records(3, 1))
    table = topic.replace("-", "_")
    query = (
        _stream(spark, bootstrap, subscribePattern=f"{topic}-.*")
        .writeStream.format("memory")
        .queryName(table)
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    try:
        query.processAllAvailable()
        assert spark.table(table).count() == 3

        create_topic(bootstrap, second, 1)
        produce(bootstrap, second, records(4, 1, prefix="n"))
        add_partitions(bootstrap, first, 2)
        produce(bootstrap, first, [{"value": b"p1", "partition": 1}])
        query.processAllAvailable()
        rows = spark.table(table).collect()
    finally:
        query.stop()
    got = sorted((r.topic, r.partition, r.offset) for r in rows)
    assert got == sorted(
        [(first, 0, o) for o in range(3)] + [(second, 0, o) for o in range(4)] + [(first, 1, 0)]
    )


def test_commit_to_group_records_the_batch_end(spark: Any, broker: Any, topic: str) -> None:
    create_topic(broker.bootstrap, topic, 2)
    produce_to(broker, topic, records(10, 2))
    group = f"spark-{topic}"
    query = (
        _stream(spark, broker.bootstrap, subscribe=topic, commitToGroup=group)
        .writeStream.format("memory")
        .queryName(topic.replace("-", "_"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert committed(broker.bootstrap, group, topic, 2) == {0: 5, 1: 5}
