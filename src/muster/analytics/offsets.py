"""Committed offsets out of `__consumer_offsets`, and commit rates.

Keys and values are Kafka's own binary schemas; muster.records.offsets_topic
decodes them inside a plain Python UDF (pandas, which Arrow UDFs and
mapInArrow need, is not a dependency). GroupMetadata records and key versions
the codec does not know are skipped, as Kafka's tools do.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from muster.analytics.schema import ms_to_ts
from muster.records.offsets_topic import (
    OffsetCommitKey,
    RecordFormatError,
    decode_key,
    decode_offset_commit_value,
)

_DECODED = StructType(
    [
        StructField("group_id", StringType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("committed_offset", LongType()),
        StructField("commit_timestamp", LongType()),
    ]
)


def _decode(key: bytes | None, value: bytes | None) -> tuple[str, str, int, int | None, int] | None:
    if key is None:
        return None
    try:
        decoded = decode_key(bytes(key))
        if not isinstance(decoded, OffsetCommitKey):
            return None
        if value is None:  # tombstone: the committed offset was deleted
            return (decoded.group, decoded.topic, decoded.partition, None, -1)
        commit = decode_offset_commit_value(bytes(value))
    except RecordFormatError:
        return None
    return (decoded.group, decoded.topic, decoded.partition, commit.offset, commit.commit_timestamp)


_decode_udf = F.udf(_decode, _DECODED, useArrow=False)


def commits(records: DataFrame) -> DataFrame:
    """Kafka-schema records of `__consumer_offsets` → one row per offset commit
    or deletion: group_id, topic, partition, committed_offset (null: deleted),
    commit_ms (the commit's own timestamp; the record's for deletions),
    commit_at, deleted, plus the record's offsets_partition/record_offset
    (log order, to break ties between commits in the same millisecond)."""
    decoded = records.select(
        F.col("partition").alias("offsets_partition"),
        F.col("offset").alias("record_offset"),
        F.unix_millis("timestamp").alias("record_ms"),
        _decode_udf("key", "value").alias("c"),
    ).where(F.col("c").isNotNull())
    commit_ms = F.when(F.col("c.commit_timestamp") >= 0, F.col("c.commit_timestamp")).otherwise(
        F.col("record_ms")
    )
    return decoded.select(
        F.col("c.group_id").alias("group_id"),
        F.col("c.topic").alias("topic"),
        F.col("c.partition").alias("partition"),
        F.col("c.committed_offset").alias("committed_offset"),
        commit_ms.alias("commit_ms"),
        ms_to_ts(commit_ms).alias("commit_at"),
        F.col("c.committed_offset").isNull().alias("deleted"),
        "offsets_partition",
        "record_offset",
    )


def commit_rate(commit_rows: DataFrame, bucket: str = "1 minute") -> DataFrame:
    """group_id, minute (bucket start), commits, partition_commits per bucket.

    One OffsetCommit request writes one record per partition, all with the
    request's timestamp: `commits` counts distinct timestamps (requests),
    `partition_commits` the records."""
    live = commit_rows.where(~F.col("deleted"))
    return (
        live.groupBy("group_id", F.window("commit_at", bucket).start.alias("minute"))
        .agg(
            F.count_distinct("commit_ms").alias("commits"),
            F.count("*").alias("partition_commits"),
        )
        .orderBy("group_id", "minute")
    )


def commit_totals(commit_rows: DataFrame, window_ms_by_group: DataFrame) -> DataFrame:
    """group_id, commits, partition_commits, commits_per_minute over each
    group's window (`window_ms_by_group`: group_id, window_ms)."""
    live = commit_rows.where(~F.col("deleted"))
    totals = live.groupBy("group_id").agg(
        F.count_distinct("commit_ms").alias("commits"),
        F.count("*").alias("partition_commits"),
    )
    joined = window_ms_by_group.join(totals, "group_id", "left")
    commits = F.coalesce("commits", F.lit(0))
    return joined.select(
        "group_id",
        commits.alias("commits"),
        F.coalesce("partition_commits", F.lit(0)).alias("partition_commits"),
        F.when(F.col("window_ms") > 0, commits / (F.col("window_ms") / 60_000.0))
        .otherwise(F.lit(None).cast("double"))
        .alias("commits_per_minute"),
    )
