"""The demo's Spark stage: a Structured Streaming job over the orders topic.

It reads `demo.orders` through muster's data source (the same options as
Spark's Kafka source), writes the parsed orders to Parquet with the file
sink (exactly once, through its checkpoint), commits its progress to a
consumer group so that `muster groups describe` shows its lag, then
aggregates revenue per customer into a second Parquet table. With
source="kafka" the same job reads through Spark's own Kafka connector, which
commits nothing: its consumers only carry the group id (`kafka.group.id`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from muster.demo.settings import SPARK_GROUP, TOPIC

ORDER_SCHEMA = "order LONG, customer STRING, amount LONG"


@dataclass(frozen=True)
class RevenueResult:
    orders_path: Path
    revenue_path: Path
    orders: int
    batches: int
    top_customers: list[tuple[str, int, int]]  # customer, orders, revenue


def run_revenue_job(
    spark: Any, bootstrap: str, out_dir: Path, source: str = "muster"
) -> RevenueResult:
    from pyspark.sql import functions as F

    import muster.spark

    orders_path = out_dir / "orders.parquet"
    revenue_path = out_dir / "revenue_by_customer.parquet"
    if source == "kafka":
        from muster.spark.connector import require_kafka_connector

        require_kafka_connector(spark)
        reader = spark.readStream.format("kafka").option("kafka.group.id", SPARK_GROUP)
    else:
        muster.spark.register(spark)
        reader = spark.readStream.format("muster").option("commitToGroup", SPARK_GROUP)
    stream = (
        reader.option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", TOPIC)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", 4000)
        .load()
    )
    orders = stream.select(
        F.from_json(F.col("value").cast("string"), ORDER_SCHEMA).alias("o"),
        "partition",
        "offset",
        "timestamp",
    ).select("o.*", "partition", "offset", "timestamp")
    query = (
        orders.writeStream.format("parquet")
        .option("path", str(orders_path))
        .option("checkpointLocation", str(out_dir / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    batches = sum(1 for p in query.recentProgress if p.get("numInputRows", 0) > 0)
    landed = spark.read.parquet(str(orders_path))
    revenue = landed.groupBy("customer").agg(
        F.count("*").alias("orders"), F.sum("amount").alias("revenue")
    )
    revenue.write.mode("overwrite").parquet(str(revenue_path))
    top = revenue.orderBy(F.desc("revenue")).limit(5).collect()
    return RevenueResult(
        orders_path=orders_path,
        revenue_path=revenue_path,
        orders=landed.count(),
        batches=batches,
        top_customers=[(r["customer"], r["orders"], r["revenue"]) for r in top],
    )
