"""The shape of what the `muster` Spark source (like Spark's Kafka source) yields."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from muster.spark.schema import source_schema

KAFKA_SCHEMA = source_schema(include_headers=False)

OFFSETS_TOPIC = "__consumer_offsets"


def ms_to_ts(column: str | Column) -> Column:
    """Epoch milliseconds as a Spark timestamp (what Parquet readers expect)."""
    return F.timestamp_millis(F.col(column) if isinstance(column, str) else column)
