"""The sink: `df.write.format("muster")` and `writeStream`, read back with
confluent-kafka."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.spark.kafka import consume_all, create_topic, produce_to, records


def test_write_round_trip(spark: Any, broker: Any, topic: str) -> None:
    create_topic(broker.bootstrap, topic, 2)
    rows = [(f"k{i}", f"v{i}".encode(), topic, i % 2, [("h", f"{i}".encode())]) for i in range(20)]
    df = spark.createDataFrame(
        rows,
        "key string, value binary, topic string, partition int, "
        "headers array<struct<key:string,value:binary>>",
    )
    writer = df.write.format("muster").mode("append")
    writer.option("kafka.bootstrap.servers", broker.bootstrap).save()

    got = consume_all(broker.bootstrap, topic, 2, expect=20)
    assert sorted((m.partition(), m.key(), m.value(), tuple(m.headers())) for m in got) == sorted(
        (i % 2, f"k{i}".encode(), f"v{i}".encode(), (("h", f"{i}".encode()),)) for i in range(20)
    )


def test_topic_option_and_string_values(spark: Any, shared_muster: Any, topic: str) -> None:
    create_topic(shared_muster.bootstrap, topic, 1)
    df = spark.createDataFrame([("a",), ("b",), (None,)], "value string")
    (
        df.write.format("muster")
        .mode("append")
        .option("kafka.bootstrap.servers", shared_muster.bootstrap)
        .option("topic", topic)
        # as a job written for format("kafka") sets them: Java-only ones are ignored
        .option("kafka.key.serializer", "org.apache.kafka.common.serialization.StringSerializer")
        .option("kafka.max.block.ms", "5000")
        .option("kafka.linger.ms", "1")
        .save()
    )
    got = consume_all(shared_muster.bootstrap, topic, 1, expect=3)
    assert sorted((m.value() or b"") for m in got) == [b"", b"a", b"b"]
    assert all(m.key() is None for m in got)


def test_failed_delivery_fails_the_write(spark: Any, shared_muster: Any, topic: str) -> None:
    create_topic(shared_muster.bootstrap, topic, 1)
    df = spark.createDataFrame([(b"x", 7)], "value binary, partition int")  # no partition 7
    with pytest.raises(Exception, match="not delivered"):
        (
            df.write.format("muster")
            .mode("append")
            .option("kafka.bootstrap.servers", shared_muster.bootstrap)
            .option("topic", topic)
            .save()
        )


def test_missing_value_column_is_refused(spark: Any, shared_muster: Any) -> None:
    df = spark.createDataFrame([("k",)], "key string")
    with pytest.raises(Exception, match="Required attribute 'value' not found"):
        (
            df.write.format("muster")
            .mode("append")
            .option("kafka.bootstrap.servers", shared_muster.bootstrap)
            .option("topic", "t")
            .save()
        )


def test_write_stream_copies_a_topic(spark: Any, broker: Any, topic: str, tmp_path: Path) -> None:
    source, sink = f"{topic}-in", f"{topic}-out"
    create_topic(broker.bootstrap, source, 2)
    create_topic(broker.bootstrap, sink, 2)
    produce_to(broker, source, records(10, 2))
    query = (
        spark.readStream.format("muster")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .load()
        .selectExpr("key", "upper(CAST(value AS STRING)) AS value", "partition")
        .writeStream.format("muster")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("topic", sink)
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None
    got = consume_all(broker.bootstrap, sink, 2, expect=10)
    assert sorted((m.partition(), m.key(), m.value()) for m in got) == sorted(
        (i % 2, f"k{i}".encode(), f"V{i}".encode()) for i in range(10)
    )
