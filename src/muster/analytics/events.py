"""`__muster_group_events` records as typed rows (one per event).

The JSON fields are those of muster.coordinator.events, and the schema is
derived from its event classes; every event type shares one wide schema
(fields an event lacks are null), so later stages can filter by `type` and
read columns without re-parsing.
"""

from __future__ import annotations

from dataclasses import fields

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from muster.coordinator import events as ev


def _spark_type(name: str, annotation: str) -> DataType:
    """The column type of an event field, from its annotation in
    muster.coordinator.events (epoch milliseconds and durations are longs)."""
    if annotation.startswith("tuple"):
        return ArrayType(StringType())
    if annotation == "bool":
        return BooleanType()
    if annotation == "int":
        return LongType() if name.endswith("_ms") else IntegerType()
    return StringType()


def _schema() -> StructType:
    """One wide schema over every event type's fields, derived from the event
    classes (`ev.EVENT_TYPES`): a new event type or field needs no edit here.
    Strings first (`type` leading), then ints, longs, arrays and booleans."""
    columns: dict[str, DataType] = {"type": StringType()}
    for cls in ev.EVENT_TYPES.values():
        for f in fields(cls):
            columns.setdefault(f.name, _spark_type(f.name, str(f.type)))
    order = (StringType(), IntegerType(), LongType(), ArrayType(StringType()), BooleanType())
    ranked = sorted(columns.items(), key=lambda item: order.index(item[1]))
    return StructType([StructField(name, kind) for name, kind in ranked])


EVENT_SCHEMA = _schema()

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
