"""`__muster_group_events` records as typed rows (one per event).

The JSON fields are those of muster.coordinator.events; every event type
shares one wide schema (fields an event lacks are null), so later stages can
filter by `type` and read columns without re-parsing.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from muster.coordinator import events as ev

_STRINGS = (
    "type",
    "group_id",
    "from_state",
    "to_state",
    "cause",
    "member_id",
    "reason",
    "detail",
    "protocol_type",
    "protocol",
    "leader_id",
    "waited_for",
    "group_instance_id",
    "old_member_id",
    "new_member_id",
)
_INTS = ("generation", "member_count", "static_member_count", "error_code")
_LONGS = (
    "at_ms",
    "started_ms",
    "join_completed_ms",
    "completed_ms",
    "duration_ms",
    "join_duration_ms",
)

EVENT_SCHEMA = StructType(
    [StructField(name, StringType()) for name in _STRINGS]
    + [StructField(name, IntegerType()) for name in _INTS]
    + [StructField(name, LongType()) for name in _LONGS]
    + [
        StructField("causes", ArrayType(StringType())),
        StructField("removed_members", ArrayType(StringType())),
        StructField("rebalance", BooleanType()),
    ]
)

# event type names, as `to_json` writes them
STATE_CHANGED = ev.GroupStateChanged.__name__
REBALANCE_STARTED = ev.RebalanceStarted.__name__
JOIN_COMPLETED = ev.JoinCompleted.__name__
REBALANCE_COMPLETED = ev.RebalanceCompleted.__name__
MEMBER_REMOVED = ev.MemberRemoved.__name__
STATIC_MEMBER_REPLACED = ev.StaticMemberReplaced.__name__
GROUP_STORE_FAILED = ev.GroupStoreFailed.__name__


def parse_events(records: DataFrame) -> DataFrame:
    """Kafka-schema records of the events topic → one row per event.

    Adds `event_offset` (log order: the only reliable order, as several events
    share a millisecond) and `event_ms` (RebalanceCompleted has no `at_ms`: it
    happened at `completed_ms`). Values that are not events are dropped, like
    `muster groups explain` does.
    """
    parsed = records.select(
        F.col("offset").alias("event_offset"),
        F.from_json(F.col("value").cast("string"), EVENT_SCHEMA).alias("e"),
    )
    return (
        parsed.where(F.col("e.type").isNotNull() & F.col("e.group_id").isNotNull())
        .select("event_offset", "e.*")
        .withColumn("event_ms", F.coalesce(F.col("at_ms"), F.col("completed_ms")))
    )
