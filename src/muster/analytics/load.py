"""Reading topics into DataFrames of the Kafka source's schema.

`source_loader` goes through the `muster` Spark source (the normal path);
`kafka_loader` through Spark's own Kafka connector, where its jars are on the
session's classpath (muster.spark.connector); `client_loader` reads with
muster's own client on the driver and is kept for brokers or set-ups where the
source cannot be used. Both read each topic from
its log start to its high watermark at the time of the call.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime

from pyspark.sql import DataFrame, SparkSession

from muster.analytics.schema import KAFKA_SCHEMA

# topics -> one DataFrame of their records (KAFKA_SCHEMA)
Loader = Callable[[list[str]], DataFrame]


def source_loader(
    spark: SparkSession, bootstrap: str, props: Mapping[str, str] | None = None
) -> Loader:
    """Batch reads through `spark.read.format("muster")` (registers the source);
    `props` (security.protocol, sasl.*, ssl.*) go to it as `kafka.` options."""
    from muster.spark import register

    register(spark)

    def load(topics: list[str]) -> DataFrame:
        if not topics:
            return spark.createDataFrame([], KAFKA_SCHEMA)
        reader = spark.read.format("muster")
        for key, value in (props or {}).items():
            reader = reader.option(f"kafka.{key}", value)
        return (
            reader.option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", ",".join(topics))
            .option("startingOffsets", "earliest")
            .option("endingOffsets", "latest")
            .load()
            .select(*KAFKA_SCHEMA.fieldNames())
        )

    load.description = "muster Spark source"  # type: ignore[attr-defined]
    return load


def kafka_loader(
    spark: SparkSession, bootstrap: str, props: Mapping[str, str] | None = None
) -> Loader:
    """Batch reads through Spark's own `spark.read.format("kafka")`; raises
    muster.spark.connector.ConnectorMissing (one line) when the session lacks it.

    The connector drops internal topics (__consumer_offsets,
    __muster_group_events: the metadata marks them so) from `subscribe` and
    `assign` alike, so those two are read through the muster source."""
    from muster.spark.connector import require_kafka_connector

    require_kafka_connector(spark)
    internal = source_loader(spark, bootstrap, props)

    def load(topics: list[str]) -> DataFrame:
        data = [t for t in topics if not t.startswith("__")]
        frames = [internal(sorted(set(topics) - set(data)))] if len(data) < len(topics) else []
        if data:
            frames.append(
                spark.read.format("kafka")
                .option("kafka.bootstrap.servers", bootstrap)
                .options(**{f"kafka.{k}": v for k, v in (props or {}).items()})
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


def loader_for(
    spark: SparkSession, bootstrap: str, source: str, props: Mapping[str, str] | None = None
) -> Loader:
    """The Spark loader of `source`: "muster" (format("muster"), no JVM jars) or
    "kafka" (Spark's connector)."""
    if source == "kafka":
        return kafka_loader(spark, bootstrap, props)
    if source == "muster":
        return source_loader(spark, bootstrap, props)
    raise ValueError(f"unknown source {source!r}: muster or kafka")


def client_loader(
    spark: SparkSession,
    bootstrap: str,
    timeout: float = 30.0,
    props: Mapping[str, str] | None = None,
) -> Loader:
    """Reads on the driver with muster's own client (one consumer, assign mode)."""

    def load(topics: list[str]) -> DataFrame:
        rows = [row for topic in topics for row in _read_topic(bootstrap, topic, timeout, props)]
        return spark.createDataFrame(rows, KAFKA_SCHEMA)

    load.description = "muster's client on the driver"  # type: ignore[attr-defined]
    return load


def _read_topic(
    bootstrap: str, topic: str, timeout: float, props: Mapping[str, str] | None = None
) -> list[tuple[object, ...]]:
    from muster.client import Admin, Consumer, TopicPartition

    conf = {
        **dict(props or {}),
        "bootstrap.servers": bootstrap,
        "request.timeout.ms": int(timeout * 1000),
    }
    with Admin(conf) as admin:
        count = admin.list_topics().get(topic, 0)
        parts = [TopicPartition(topic, p) for p in range(count)]
        if not parts:
            return []
        lows = admin.list_offsets(dict.fromkeys(parts, "earliest"))
        highs = admin.list_offsets(dict.fromkeys(parts, "latest"))
    ends = {tp: highs[tp] for tp in parts if highs[tp] > lows[tp]}
    if not ends:
        return []
    consumer = Consumer(
        {**conf, "enable.auto.commit": False, "isolation.level": "read_uncommitted"}
    )
    try:
        consumer.assign(list(ends))
        consumer.seek_to_beginning(list(ends))
        rows: list[tuple[object, ...]] = []
        deadline = time.monotonic() + timeout
        while any((consumer.position(tp) or 0) < end for tp, end in ends.items()):
            if time.monotonic() > deadline:
                raise TimeoutError(f"reading {topic} stalled")
            for r in consumer.poll(0.2):
                if r.offset >= ends[TopicPartition(topic, r.partition)]:
                    continue
                rows.append(
                    (
                        r.key,
                        r.value,
                        topic,
                        r.partition,
                        r.offset,
                        datetime.fromtimestamp(r.timestamp / 1000, tz=UTC),
                        r.timestamp_type,
                    )
                )
                deadline = time.monotonic() + timeout  # the timeout is for a stall
        return rows
    finally:
        consumer.close(autocommit=False)


def data_topics(commit_topics: list[str]) -> list[str]:
    """The topics to read for lag: those groups committed to, internal ones aside."""
    return sorted({t for t in commit_topics if not t.startswith("__")})
