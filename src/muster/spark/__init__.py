"""A Spark connector for muster and any Kafka-protocol broker, on PySpark 4's
Python Data Source API: `muster.spark.register(spark)`, then
`spark.read.format("muster")` / `readStream` / `write` / `writeStream` with the
options of Spark's built-in Kafka source and sink. See README.md here."""

from __future__ import annotations

from typing import Any

NAME = "muster"


def register(spark: Any) -> None:
    """Registers the `muster` data source with `spark` (a SparkSession); a no-op
    when it is registered already."""
    from muster.spark.datasource import MusterDataSource

    registered = getattr(spark, "_muster_registered", False)
    if registered:
        return
    spark.dataSource.register(MusterDataSource)
    spark._muster_registered = True


__all__ = ["NAME", "register"]
