"""Reading topics into DataFrames of the Kafka source's schema.

`source_loader` goes through the `muster` Spark source (the normal path);
`kafka_loader` through Spark's own Kafka connector, where its jars are on the
session's classpath (muster.spark.connector); `client_loader` reads with
confluent-kafka on the driver and is kept for brokers or set-ups where the
source cannot be used. Both read each topic from
its log start to its high watermark at the time of the call.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

from pyspark.sql import DataFrame, SparkSession

from muster.analytics.schema import KAFKA_SCHEMA

# topics -> one DataFrame of their records (KAFKA_SCHEMA)
Loader = Callable[[list[str]], DataFrame]


def source_loader(spark: SparkSession, bootstrap: str) -> Loader:
    """Batch reads through `spark.read.format("muster")` (registers the source)."""
    from muster.spark import register

    register(spark)

    def load(topics: list[str]) -> DataFrame:
        if not topics:
            return spark.createDataFrame([], KAFKA_SCHEMA)
        return (
            spark.read.format("muster")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", ",".join(topics))
            .option("startingOffsets", "earliest")
            .option("endingOffsets", "latest")
            .load()
            .select(*KAFKA_SCHEMA.fieldNames())
        )

    load.description = "muster Spark source"  # type: ignore[attr-defined]
    return load


def kafka_loader(spark: SparkSession, bootstrap: str) -> Loader:
    """Batch reads through Spark's own `spark.read.format("kafka")`; raises
    muster.spark.connector.ConnectorMissing (one line) when the session lacks it.

    The connector drops internal topics (__consumer_offsets,
    __muster_group_events: the metadata marks them so) from `subscribe` and
    `assign` alike, so those two are read through the muster source."""
    from muster.spark.connector import require_kafka_connector

    require_kafka_connector(spark)
    internal = source_loader(spark, bootstrap)

    def load(topics: list[str]) -> DataFrame:
        data = [t for t in topics if not t.startswith("__")]
        frames = [internal(sorted(set(topics) - set(data)))] if len(data) < len(topics) else []
        if data:
            frames.append(
                spark.read.format("kafka")
                .option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", ",".join(data))
                .option("startingOffsets", "earliest")
                .option("endingOffsets", "latest")
                .option("failOnDataLoss", "false")  # deleted records leave gaps: not a loss here
                .load()
                .select(*KAFKA_SCHEMA.fieldNames())
            )
        if not frames:
            return spark.createDataFrame([], KAFKA_SCHEMA)
        out = frames[0]
        for frame in frames[1:]:
            out = out.unionByName(frame)
        return out

    load.description = "Spark Kafka connector (internal topics: muster Spark source)"  # type: ignore[attr-defined]
    return load


def loader_for(spark: SparkSession, bootstrap: str, source: str) -> Loader:
    """The Spark loader of `source`: "muster" (format("muster"), no JVM jars) or
    "kafka" (Spark's connector)."""
    if source == "kafka":
        return kafka_loader(spark, bootstrap)
    if source == "muster":
        return source_loader(spark, bootstrap)
    raise ValueError(f"unknown source {source!r}: muster or kafka")


def client_loader(spark: SparkSession, bootstrap: str, timeout: float = 30.0) -> Loader:
    """Reads on the driver with confluent-kafka (one consumer, assign mode)."""

    def load(topics: list[str]) -> DataFrame:
        rows = [row for topic in topics for row in _read_topic(bootstrap, topic, timeout)]
        return spark.createDataFrame(rows, KAFKA_SCHEMA)

    load.description = "confluent-kafka on the driver"  # type: ignore[attr-defined]
    return load


def _read_topic(bootstrap: str, topic: str, timeout: float) -> list[tuple[object, ...]]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "muster-analyze",  # required by librdkafka; never joined or committed
            "enable.auto.commit": False,
            "enable.partition.eof": False,
        }
    )
    try:
        meta = consumer.list_topics(topic, timeout=timeout).topics.get(topic)
        if meta is None or meta.error is not None:
            return []
        ends: dict[int, int] = {}
        for p in meta.partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout)
            if high > low:
                ends[p] = high
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in ends])
        rows: list[tuple[object, ...]] = []
        positions = dict.fromkeys(ends, -1)
        deadline = time.monotonic() + timeout
        while any(positions[p] + 1 < ends[p] for p in ends):
            if time.monotonic() > deadline:
                raise TimeoutError(f"reading {topic} stalled")
            for msg in consumer.consume(500, 0.2):
                if msg.error() is not None:
                    continue
                p, offset = msg.partition(), msg.offset()
                if offset >= ends[p]:
                    continue
                positions[p] = offset
                kind, stamp = msg.timestamp()
                rows.append(
                    (
                        msg.key(),
                        msg.value(),
                        topic,
                        p,
                        offset,
                        datetime.fromtimestamp(stamp / 1000, tz=UTC),
                        kind - 1 if kind > 0 else -1,
                    )
                )
                deadline = time.monotonic() + timeout  # the timeout is for a stall
        return rows
    finally:
        consumer.close()


def data_topics(commit_topics: list[str]) -> list[str]:
    """The topics to read for lag: those groups committed to, internal ones aside."""
    return sorted({t for t in commit_topics if not t.startswith("__")})
