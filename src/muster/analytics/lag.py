"""Consumer lag per partition over time: log end minus committed offset.

Both sides are step functions of time, sampled on one grid:
* log_end(t) = (highest offset whose record timestamp is <= t) + 1, from the
  data topics' topic/partition/offset/timestamp columns only;
* committed(t) = the last commit (or deletion) with commit time <= t.
Each is an "as of" lookup, done as a running aggregate over the samples and
the changes sorted together, so no range join is needed.
"""

from __future__ import annotations

import math

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from muster.analytics.schema import ms_to_ts

DEFAULT_POINTS = 240


def time_grid(start_ms: int, end_ms: int, points: int = DEFAULT_POINTS) -> list[int]:
    """Sample times from start to end inclusive: a whole number of seconds apart
    (at least one), at most `points` of them, always ending exactly at `end_ms`."""
    if end_ms <= start_ms:
        return [end_ms]
    step = max(1000, math.ceil((end_ms - start_ms) / max(1, points - 1) / 1000) * 1000)
    grid = list(range(start_ms, end_ms, step))
    grid.append(end_ms)
    return grid


def _grid(spark: SparkSession, grid: list[int]) -> DataFrame:
    return spark.createDataFrame([(t,) for t in grid], "t_ms long")


def log_end_changes(data: DataFrame) -> DataFrame:
    """topic, partition, t_ms, end: the log end right after each millisecond in
    which records were written (a data topic shrinks to this before sampling)."""
    return (
        data.select("topic", "partition", F.unix_millis("timestamp").alias("t_ms"), "offset")
        .groupBy("topic", "partition", "t_ms")
        .agg((F.max("offset") + 1).alias("end"))
    )


def log_end_series(changes: DataFrame, keys: DataFrame, grid: DataFrame) -> DataFrame:
    """topic, partition, t_ms, log_end for every (topic, partition) of `keys`,
    from `log_end_changes`."""
    steps = changes.join(keys, ["topic", "partition"], "left_semi").select(
        "topic", "partition", "t_ms", "end", F.lit(False).alias("sample")
    )
    samples = keys.crossJoin(grid).select(
        "topic",
        "partition",
        "t_ms",
        F.lit(None).cast("long").alias("end"),
        F.lit(True).alias("sample"),
    )
    # changes sort before samples at the same millisecond: "timestamp <= t"
    upto = (
        Window.partitionBy("topic", "partition")
        .orderBy("t_ms", "sample")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    return (
        steps.unionByName(samples)
        .withColumn("log_end", F.coalesce(F.max("end").over(upto), F.lit(0)))
        .where(F.col("sample"))
        .select("topic", "partition", "t_ms", "log_end")
    )


def committed_series(commit_rows: DataFrame, grid: DataFrame) -> DataFrame:
    """group_id, topic, partition, t_ms, committed (null before the first commit
    and after a deletion) for every partition a group ever committed."""
    key = ["group_id", "topic", "partition"]
    # -1 marks a deletion, so "last non-null" still sees it
    changes = commit_rows.select(
        *key,
        F.col("commit_ms").alias("t_ms"),
        F.coalesce("committed_offset", F.lit(-1)).alias("value"),
        F.lit(0).alias("order"),
        F.col("offsets_partition"),
        F.col("record_offset"),
    )
    samples = (
        commit_rows.select(*key)
        .distinct()
        .crossJoin(grid)
        .select(
            *key,
            "t_ms",
            F.lit(None).cast("long").alias("value"),
            F.lit(1).alias("order"),
            F.lit(None).cast("int").alias("offsets_partition"),
            F.lit(None).cast("long").alias("record_offset"),
        )
    )
    upto = (
        Window.partitionBy(*key)
        .orderBy("t_ms", "order", "offsets_partition", "record_offset")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    last = F.last("value", ignorenulls=True).over(upto)
    return (
        changes.unionByName(samples)
        .withColumn("last", last)
        .where(F.col("order") == 1)
        .select(*key, "t_ms", F.when(F.col("last") >= 0, F.col("last")).alias("committed"))
    )


def lag_series(
    spark: SparkSession, commit_rows: DataFrame, end_changes: DataFrame, grid: list[int]
) -> DataFrame:
    """group_id, topic, partition, t_ms, at, committed, log_end, lag: one row per
    committed partition per sample time once the group has a committed offset
    there (lag is never negative: record timestamps are the producers' clocks).
    `end_changes` comes from `log_end_changes` over the data topics."""
    grid_df = _grid(spark, grid)
    committed = committed_series(commit_rows, grid_df).where(F.col("committed").isNotNull())
    keys = commit_rows.select("topic", "partition").distinct()
    ends = log_end_series(end_changes, keys, grid_df)
    return committed.join(ends, ["topic", "partition", "t_ms"], "left").select(
        "group_id",
        "topic",
        "partition",
        "t_ms",
        ms_to_ts("t_ms").alias("at"),
        "committed",
        F.coalesce("log_end", F.lit(0)).alias("log_end"),
        F.greatest(F.coalesce("log_end", F.lit(0)) - F.col("committed"), F.lit(0)).alias("lag"),
    )


def current_lag(lag: DataFrame) -> DataFrame:
    """group_id, max_lag_now, total_lag_now: lag at the last sample time."""
    last = lag.agg(F.max("t_ms").alias("t_ms"))
    return (
        lag.join(last, "t_ms", "left_semi")
        .groupBy("group_id")
        .agg(F.max("lag").alias("max_lag_now"), F.sum("lag").alias("total_lag_now"))
    )
