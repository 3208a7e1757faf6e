"""Spark's own Kafka connector (format("kafka"), spark-sql-kafka-0-10) against
muster and against Apache Kafka 4.4: batch write and read, a checkpointed
Structured Streaming query stopped and restarted into a file sink,
`kafka.group.id` and `startingOffsetsByTimestamp`; each job runs on both
brokers and the last test holds their rows against each other.

The connector's jars are on the shared session's classpath
(tests/support/spark.py, resolved by tests/support/spark_kafka.py)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import functions as F

from muster.spark.connector import has_kafka_connector
from tests.spark.kafka import batch_reader, create_topic, produce

# job name -> broker name -> the job's rows, broker-neutral (no topic names)
RESULTS: dict[str, dict[str, Any]] = {}

# record timestamps the tests set start here: an hour ago, whole seconds. Not a fixed
# date: Kafka's time retention (7 days) deletes records that old within minutes.
BASE_MS = (int(time.time()) - 3600) * 1000


@pytest.fixture
def connector(spark: Any) -> Any:
    from tests.support import spark as support

    if not has_kafka_connector(spark):
        pytest.fail(support.CONNECTOR_ERROR or "format('kafka') is not on the session classpath")
    return spark


@pytest.fixture(params=["muster", "kafka"])
def target(request: pytest.FixtureRequest) -> tuple[str, Any]:
    """(name, broker): the same test against muster and against Kafka 4.4."""
    name = "shared_muster" if request.param == "muster" else "kafka_broker"
    return request.param, request.getfixturevalue(name)


def _record(job: str, broker: str, rows: Any) -> None:
    RESULTS.setdefault(job, {})[broker] = rows


def _read(spark: Any, bootstrap: str, topic: str, **options: str) -> Any:
    return batch_reader(spark, bootstrap, topic, "kafka", **options)


def test_batch_write_then_read(connector: Any, target: tuple[str, Any], topic: str) -> None:
    name, broker = target
    spark = connector
    create_topic(broker.bootstrap, topic, 3)
    rows = [
        (f"k{i}", f"v{i}", i % 3, [("h", f"x{i}".encode())] if i % 2 else []) for i in range(30)
    ]
    df = spark.createDataFrame(
        rows,
        "key STRING, value STRING, partition INT, headers ARRAY<STRUCT<key STRING, value BINARY>>",
    )
    (  # one task, so each partition's records are written in the list's order
        df.coalesce(1)
        .write.format("kafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("topic", topic)
        .save()
    )
    got = (
        _read(spark, broker.bootstrap, topic, includeHeaders="true")
        .orderBy("partition", "offset")
        .collect()
    )
    seen = [
        (
            r.partition,
            r.offset,
            r.key.decode(),
            r.value.decode(),
            [(h.key, bytes(h.value)) for h in r.headers or []],
        )
        for r in got
    ]
    expected = []
    for p in range(3):
        mine = [row for row in rows if row[2] == p]
        expected += [(p, o, k, v, h) for o, (k, v, _p, h) in enumerate(mine)]
    assert seen == expected
    assert {r.topic for r in got} == {topic}
    assert {r.timestampType for r in got} == {0}  # CreateTime
    # a bounded read by offsets: -2 earliest, -1 latest (an end only, in a batch)
    sub = _read(
        spark,
        broker.bootstrap,
        topic,
        startingOffsets=json.dumps({topic: {"0": 9, "1": 2, "2": -2}}),
        endingOffsets=json.dumps({topic: {"0": -1, "1": 5, "2": 3}}),
    ).collect()
    assert sorted((r.partition, r.offset) for r in sub) == [
        (0, 9), (1, 2), (1, 3), (1, 4), (2, 0), (2, 1), (2, 2)
    ]  # fmt: skip
    _record("batch", name, seen)


def _timestamped(n: int, partitions: int, prefix: str) -> list[dict[str, Any]]:
    """Records i with timestamp BASE_MS + i seconds, round-robin over partitions."""
    return [
        {
            "key": f"{prefix}{i}".encode(),
            "value": f"{prefix}-value-{i}".encode(),
            "partition": i % partitions,
            "timestamp": BASE_MS + i * 1000,
        }
        for i in range(n)
    ]


def test_group_id_and_starting_offsets_by_timestamp(
    connector: Any, target: tuple[str, Any], topic: str
) -> None:
    name, broker = target
    spark = connector
    create_topic(broker.bootstrap, topic, 2)
    produce(broker.bootstrap, topic, _timestamped(20, 2, "t"))
    # partition 0 holds i = 0, 2, ..., 18; partition 1 holds 1, 3, ..., 19
    by_ts = {
        topic: {"0": BASE_MS + 10_000, "1": BASE_MS + 4_500}  # from i=10 / from i=5
    }
    ending = {topic: {"0": BASE_MS + 16_000, "1": BASE_MS + 99_000}}  # i<16 / to the end
    got = _read(
        spark,
        broker.bootstrap,
        topic,
        **{
            "kafka.group.id": f"spark-fixed-{topic}",
            "startingOffsetsByTimestamp": json.dumps(by_ts),
            "endingOffsetsByTimestamp": json.dumps(ending),
        },
    ).collect()
    seen = sorted(
        (r.partition, r.offset, r.key.decode(), int(r.timestamp.timestamp() * 1000)) for r in got
    )
    expected = sorted(
        [(0, i // 2, f"t{i}", BASE_MS + i * 1000) for i in (10, 12, 14)]
        + [(1, i // 2, f"t{i}", BASE_MS + i * 1000) for i in (5, 7, 9, 11, 13, 15, 17, 19)]
    )
    assert seen == expected

    # one timestamp for every partition, Spark 3.3's startingTimestamp
    everywhere = _read(
        spark,
        broker.bootstrap,
        topic,
        startingTimestamp=str(BASE_MS + 15_500),
        **{"kafka.group.id": f"spark-fixed-{topic}"},
    ).collect()
    assert sorted(r.key.decode() for r in everywhere) == ["t16", "t17", "t18", "t19"]
    _record("by_timestamp", name, (seen, sorted(r.key for r in everywhere)))


def test_streaming_checkpoint_stop_and_restart_is_exactly_once(
    connector: Any, target: tuple[str, Any], topic: str, tmp_path: Path
) -> None:
    """A query with a fixed kafka.group.id, started at a timestamp, writes JSON
    files; it is stopped while records keep coming and restarted from its
    checkpoint: every record after the timestamp lands once."""
    name, broker = target
    spark = connector
    create_topic(broker.bootstrap, topic, 2)
    produce(broker.bootstrap, topic, _timestamped(10, 2, "old"))  # before the start
    checkpoint, out = tmp_path / "ckpt", tmp_path / "out"

    # no record is that new when the query starts: "latest" is where it begins then
    start_at = json.dumps({topic: {"0": BASE_MS + 60_000, "1": BASE_MS + 60_000}})

    def start(trigger: dict[str, Any]) -> Any:
        stream = (
            spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", broker.bootstrap)
            .option("subscribe", topic)
            .option("kafka.group.id", f"spark-stream-{topic}")
            .option("startingOffsetsByTimestamp", start_at)
            .option("startingOffsetsByTimestampStrategy", "latest")
            .option("maxOffsetsPerTrigger", "7")
            .load()
        )
        return (
            stream.select("partition", "offset", F.col("key").cast("string").alias("key"))
            .writeStream.format("json")
            .option("path", str(out))
            .option("checkpointLocation", str(checkpoint))
            .trigger(**trigger)
            .start()
        )

    def later(prefix: str, first: int, n: int) -> list[dict[str, Any]]:
        recs = _timestamped(first + n, 2, prefix)[first:]
        for r in recs:
            r["timestamp"] += 60_000
        return recs

    query = start({"processingTime": "200 milliseconds"})
    try:
        produce(broker.bootstrap, topic, later("a", 0, 12))
        query.processAllAvailable()
        produce(broker.bootstrap, topic, later("b", 12, 9))
    finally:
        query.stop()  # whatever of "b" it had not taken is for the next run
    assert query.exception() is None
    produce(broker.bootstrap, topic, later("c", 21, 5))
    again = start({"availableNow": True})
    again.awaitTermination(120)
    assert again.exception() is None

    rows = spark.read.schema("partition INT, offset LONG, key STRING").json(str(out)).collect()
    keys = sorted(r.key for r in rows)
    expected = sorted([f"a{i}" for i in range(12)] + [f"b{i}" for i in range(12, 21)]
                      + [f"c{i}" for i in range(21, 26)])  # fmt: skip
    assert keys == expected  # none lost, none twice
    assert not [k for k in keys if k.startswith("old")]
    _record("streaming", name, sorted((r.partition, r.offset, r.key) for r in rows))


def test_demo_revenue_job_through_the_kafka_connector(
    connector: Any, shared_muster: Any, tmp_path: Path
) -> None:
    """The demo's streaming job as `muster demo --source kafka` runs it, on a
    few orders (its format("muster") run is the demo's own test's)."""
    from muster.demo.pipeline import run_revenue_job
    from muster.demo.settings import TOPIC

    create_topic(shared_muster.bootstrap, TOPIC, 2)
    orders = [
        {"value": json.dumps({"order": i, "customer": f"c{i % 3}", "amount": i}).encode()}
        for i in range(30)
    ]
    produce(shared_muster.bootstrap, TOPIC, orders)
    result = run_revenue_job(connector, shared_muster.bootstrap, tmp_path, "kafka")
    assert result.orders == 30
    assert result.top_customers == [(f"c{c}", 10, sum(range(c, 30, 3))) for c in (2, 1, 0)]


def test_same_rows_on_muster_and_kafka() -> None:
    """Each job above, run on both brokers, yielded the same rows (offsets,
    keys, values, headers, timestamps)."""
    both = {job: runs for job, runs in RESULTS.items() if {"muster", "kafka"} <= set(runs)}
    if not both:
        pytest.skip("the jobs did not run on both brokers in this session")
    assert set(both) == {"batch", "by_timestamp", "streaming"}
    for job, runs in both.items():
        assert runs["muster"] == runs["kafka"], job
