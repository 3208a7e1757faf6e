"""Read throughput of the Spark source (`format("muster")`) against Spark's own
Kafka connector (`format("kafka")`) and a raw confluent-kafka consumer, on the
same data, in the same run.

One muster broker; N records of 100 B spread over P partitions, produced once
with confluent-kafka. Then, for each run (the order alternates between runs):

* spark: a batch read of the whole topic through `spark.read.format("muster")`
  on local[2], materialised with `selectExpr("count(*)", "sum(length(value))")`;
  timed from `load()` to the answer (planning included, Spark start-up not);
* spark-kafka: the same read through Spark's own Kafka connector
  (spark-sql-kafka-0-10, its jars from .cache/spark-kafka/lib, which
  tests/support/spark_kafka.py resolves; the test session has them);
* confluent: one assign-mode consumer reads every partition from offset 0 with
  `consume(num_messages=10000)` batches (prefetch unbounded, as in
  produce_fetch.py) until it has seen N records.

Prints rows/s (median over --runs) and the spark/confluent and
spark/spark-kafka ratios.

    .venv/bin/python bench/spark_source.py               # 1M records, 4 partitions, 5 runs
    .venv/bin/python bench/spark_source.py --records 200000 --runs 3
    .venv/bin/python bench/spark_source.py --readers spark,spark-kafka   # the two Spark sources
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
from common import RDK_LOGGER, create_topic
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

SIZE = 100
TIMEOUT_S = 600.0


def produce(bootstrap: str, topic: str, count: int, partitions: int) -> None:
    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 20,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 2_000_000,
            "logger": RDK_LOGGER,
        }
    )
    value = b"x" * SIZE
    for i in range(count):
        while True:
            try:
                p.produce(topic, value, key=b"%d" % i, partition=i % partitions)
                break
            except BufferError:
                p.poll(0.05)
    if p.flush(120) != 0:
        raise RuntimeError("produce did not complete")


def confluent_read(bootstrap: str, topic: str, count: int, partitions: int) -> float:
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-spark-{uuid.uuid4().hex}",  # required; nothing is committed
            "enable.auto.commit": False,
            "enable.partition.eof": False,
            "queued.min.messages": 10_000_000,
            "queued.max.messages.kbytes": 2_097_151,
            "logger": RDK_LOGGER,
        }
    )
    try:
        c.list_topics(topic, timeout=10)
        seen = 0
        total = 0
        t0 = time.perf_counter()
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        while seen < count:
            if time.perf_counter() - t0 > TIMEOUT_S:
                raise RuntimeError(f"confluent read timed out at {seen}/{count}")
            for m in c.consume(num_messages=10_000, timeout=1.0):
                if m.error() is not None:
                    raise KafkaException(m.error())
                total += len(m.value())
                seen += 1
        elapsed = time.perf_counter() - t0
    finally:
        c.close()
    if total != count * SIZE:
        raise RuntimeError(f"confluent read {total} bytes, expected {count * SIZE}")
    return elapsed


def tree_cpu(exclude: int) -> float:
    """CPU seconds so far of this process and its descendants (Spark's JVM and
    its Python workers, which Spark reuses between reads), less the broker
    `exclude`: the read's cost, which a loaded machine moves far less than
    its wall time."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # exited meanwhile
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    total, todo = 0.0, [os.getpid()]
    while todo:
        pid = todo.pop()
        if pid == exclude:
            continue
        try:
            total += common.cpu_seconds(pid)
        except OSError:
            continue
        todo += children.get(pid, [])
    return total


def spark_read(spark: object, bootstrap: str, topic: str, count: int, fmt: str = "muster") -> float:
    t0 = time.perf_counter()
    df = (
        spark.read.format(fmt)  # type: ignore[attr-defined]
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .load()
    )
    rows, total = df.selectExpr("count(*)", "sum(length(value))").first()
    elapsed = time.perf_counter() - t0
    if rows != count or total != count * SIZE:
        raise RuntimeError(f"{fmt} read {rows} rows / {total} bytes, expected {count}")
    return elapsed


READERS = ("spark", "spark-kafka", "confluent")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument(
        "--readers",
        default=",".join(READERS),
        help="which of spark (format muster), spark-kafka (format kafka), confluent",
    )
    args = ap.parse_args()
    readers = [r for r in args.readers.split(",") if r]
    if not readers or set(readers) - set(READERS):
        ap.error(f"--readers: some of {', '.join(READERS)}")

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    sys.path.insert(0, str(common.REPO_ROOT))
    import muster.spark
    from tests.support.spark import start_spark_session

    common.install_signal_handlers()
    spark = start_spark_session("muster-bench-spark")
    muster.spark.register(spark)
    if "spark-kafka" in readers:
        from muster.spark.connector import require_kafka_connector

        require_kafka_connector(spark)
    results: dict[str, list[float]] = {name: [] for name in readers}
    cpu: dict[str, list[float]] = {name: [] for name in readers}
    with common.running("muster") as broker:
        topic = "spark-bench"
        create_topic(broker.bootstrap, topic, args.partitions)
        t0 = time.perf_counter()
        produce(broker.bootstrap, topic, args.records, args.partitions)
        common.console.print(
            f"produced {args.records} x {SIZE} B over {args.partitions} partitions "
            f"in {time.perf_counter() - t0:.1f}s"
        )
        for name, fmt in (("spark", "muster"), ("spark-kafka", "kafka")):
            if name in readers:  # warm-up: workers, JIT, the connector's consumers
                spark_read(spark, broker.bootstrap, topic, args.records, fmt)
        for run in range(args.runs):
            # each reader goes first in turn: the order moves one place a run
            shift = run % len(readers)
            for name in readers[shift:] + readers[:shift]:
                cpu0 = tree_cpu(broker.proc.pid)  # type: ignore[union-attr]
                if name == "spark":
                    secs = spark_read(spark, broker.bootstrap, topic, args.records)
                elif name == "spark-kafka":
                    secs = spark_read(spark, broker.bootstrap, topic, args.records, "kafka")
                else:
                    secs = confluent_read(broker.bootstrap, topic, args.records, args.partitions)
                rate = args.records / secs
                results[name].append(rate)
                cpu[name].append(tree_cpu(broker.proc.pid) - cpu0)  # type: ignore[union-attr]
                common.console.print(
                    f"run {run}: {name:9s} {rate:12,.0f} rows/s ({secs:.2f}s, "
                    f"CPU {cpu[name][-1]:.2f}s)"
                )
    spark.stop()  # type: ignore[attr-defined]
    med = {name: common.median(rates) for name, rates in results.items()}
    figures = ", ".join(f"{name} {common.fmt_num(rate)} rows/s" for name, rate in med.items())
    ratios = "".join(
        f"; ratio spark/{other} {common.fmt_num(common.ratio(med['spark'], med[other]), 2)}"
        for other in ("spark-kafka", "confluent")
        if "spark" in med and other in med
    )
    cpus = ", ".join(f"{name} {common.median(secs):.2f}" for name, secs in cpu.items())
    common.console.print(
        f"median over {args.runs} runs: {figures}{ratios}; CPU seconds (this process, "
        f"the JVM, the Python workers): {cpus}"
    )


if __name__ == "__main__":
    main()
