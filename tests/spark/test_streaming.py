"""Streaming reads: checkpointed exactly-once into Parquet across a failure,
rate limits, discovery of new topics and partitions, group commits."""

from __future__ import annotations

import json
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
