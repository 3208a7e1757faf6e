"""Group histories derived from `__consumer_offsets`, on Spark, for brokers
without `__muster_group_events` (any Kafka).

The derivation is muster.coordinator.derived's `derive`, the one the console
runs on the driver for one group: here the offsets topic's group records
(GroupMetadata, ConsumerGroupMetadata, ConsumerGroupCurrentMemberAssignment;
offset commits are left to `offsets.py`) are grouped by group id, sorted into
log order, and each group's list is derived in one call of a plain Python UDF
(pandas, which Arrow UDFs need, is not a dependency).

What the offsets topic holds becomes the same rows the events give: each new
classic generation is a completed rebalance (its generation, when it
completed, the members before and after, who left). What it does not hold
stays null: the cause, the reasons, when the rebalance started and so its
duration, what the join waited for, and which departures were drops. A
consumer (KIP-848) group's epochs are steps of the `generations` table only,
as the events path tells them as notes, not rebalances.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from muster.analytics import rebalances
from muster.analytics.schema import ms_to_ts
from muster.coordinator.derived import (
    HISTORY_RECORD_TYPES,
    DerivedMember,
    Generation,
    derive,
    group_id_of,
)

_STRINGS = ArrayType(StringType())
_PARTITION = StructType(
    [StructField("topic", StringType()), StructField("partition", IntegerType())]
)
_MEMBER = StructType(
    [
        StructField("member_id", StringType()),
        StructField("client_id", StringType()),
        StructField("client_host", StringType()),
        StructField("instance_id", StringType()),
        StructField("assignment", ArrayType(_PARTITION)),
        StructField("rebalance_timeout_ms", IntegerType()),
        StructField("session_timeout_ms", IntegerType()),
    ]
)
# One `Generation` of `derive` (a classic generation, a group or member epoch,
# or the group's removal), numbered per group in log order.
STEP = StructType(
    [
        StructField("step", IntegerType()),
        StructField("kind", StringType()),
        StructField("number", IntegerType()),
        StructField("at_ms", LongType()),
        StructField("protocol", StringType()),
        StructField("leader", StringType()),
        StructField("member_id", StringType()),
        StructField("member_count", IntegerType()),
        StructField("members", ArrayType(_MEMBER)),
        StructField("joined", _STRINGS),
        StructField("left", _STRINGS),
        StructField("moved", _STRINGS),
        StructField("summary", StringType()),
    ]
)
_DERIVED = StructType(
    [
        StructField("steps", ArrayType(STEP)),
        StructField("rebalances", ArrayType(rebalances.FOLDED)),
    ]
)
_TYPE_PREFIXES = [f"{t:04X}" for t in HISTORY_RECORD_TYPES]  # the key's int16, in hex


def _member(m: DerivedMember) -> dict[str, Any]:
    return {
        "member_id": m.member_id,
        "client_id": m.client_id,
        "client_host": m.client_host,
        "instance_id": m.instance_id,
        "assignment": [{"topic": t, "partition": p} for t, p in sorted(m.assignment)],
        "rebalance_timeout_ms": m.rebalance_timeout_ms,
        "session_timeout_ms": m.session_timeout_ms,
    }


def step_rows(steps: list[Generation]) -> list[dict[str, Any]]:
    """`derive`'s steps as rows of `STEP`."""
    return [
        {
            "step": i,
            "kind": g.kind,
            "number": g.number,
            "at_ms": g.at_ms,
            "protocol": g.protocol,
            "leader": g.leader,
            "member_id": g.member_id,
            "member_count": len(g.members) if g.kind == "generation" else None,
            "members": [_member(m) for m in g.members],
            "joined": list(g.joined),
            "left": list(g.left),
            "moved": list(g.moved),
            "summary": g.summary(),
        }
        for i, g in enumerate(steps, 1)
    ]


def rebalance_rows(group_id: str, steps: list[Generation]) -> list[dict[str, Any]]:
    """Rows of `rebalances.FOLDED`, one per new classic generation: Kafka's
    coordinator numbers each completed join phase with a new generation, and
    writes the group's metadata (the members) when it completes. Generation
    0 (the group created) and a record that repeats its generation are not
    rebalances of their own."""
    out: list[dict[str, Any]] = []
    previous: Generation | None = None  # the last generation; None: none yet, or removed
    removed = False
    for g in steps:
        if g.kind == "removed":
            previous, removed = None, True
            continue
        if g.kind != "generation":
            continue
        if g.number == 0 or (previous is not None and g.number == previous.number):
            # generation 0 is the group's creation (Kafka 4.x stores a new classic
            # group, Empty, before its first join completes); the same generation
            # written again brings its members, not a rebalance
            previous = g
            continue
        if previous is not None:
            before: int | None = len(previous.members)
        else:
            # a group's first generation (1), or one after its removal, started
            # empty; a later one first seen means the log starts later (compacted)
            before = 0 if removed or g.number == 1 else None
        out.append(
            {
                "group_id": group_id,
                "rebalance": len(out) + 1,
                "cause": None,
                "causes": None,
                "reasons": None,
                "trigger_member_id": None,
                "previous_generation": (
                    previous.number if previous else None if before is None else g.number - 1
                ),
                "generation": g.number,
                "started_ms": None,
                "completed_ms": g.at_ms,
                "duration_ms": None,
                "members_before": before,
                "members_after": len(g.members),
                "waited_for": None,
                "removed_members": None,
                "removals": [{"member_id": m, "cause": None, "reason": None} for m in g.left],
                "completed": True,
            }
        )
        previous = g
    return out


def _derive_group(group_id: str, rows: list[Row]) -> dict[str, Any]:
    """One group's records (sorted into log order) → its steps and rebalances."""
    steps = derive(((r.key, r.value, r.record_ms) for r in rows), group_id)
    return {"steps": step_rows(steps), "rebalances": rebalance_rows(group_id, steps)}


_derive_udf = F.udf(_derive_group, _DERIVED, useArrow=False)
_group_udf = F.udf(group_id_of, StringType(), useArrow=False)


def group_records(records: DataFrame) -> DataFrame:
    """Kafka-schema records of `__consumer_offsets` → its group records:
    group_id, offsets_partition, record_offset, key, value, record_ms. The
    record type is the key's first two bytes, so commits (most of the topic)
    are dropped in Spark before any Python runs."""
    kind = F.hex(F.substring("key", 1, 2))
    return (
        records.where(kind.isin(*_TYPE_PREFIXES))
        .select(
            _group_udf("key").alias("group_id"),
            F.col("partition").alias("offsets_partition"),
            F.col("offset").alias("record_offset"),
            "key",
            "value",
            F.unix_millis("timestamp").alias("record_ms"),
        )
        .where(F.col("group_id").isNotNull())
    )


def derive_groups(group_rows: DataFrame) -> DataFrame:
    """group_id, d (steps, rebalances): `derive` once per group, its records
    in log order (a group's records all live in its one offsets partition)."""
    record = F.struct("offsets_partition", "record_offset", "key", "value", "record_ms")
    grouped = group_rows.groupBy("group_id").agg(F.sort_array(F.collect_list(record)).alias("r"))
    return grouped.select("group_id", _derive_udf("group_id", "r").alias("d"))


def generations(derived: DataFrame) -> DataFrame:
    """One row per step of each group's derived history (`STEP`, plus at)."""
    steps = derived.select("group_id", F.explode("d.steps").alias("s")).select("group_id", "s.*")
    return steps.withColumn("at", ms_to_ts("at_ms"))


def rebalance_table(derived: DataFrame) -> DataFrame:
    """The rebalance table (`rebalances.table`'s columns) of the derived
    histories: null where the offsets topic does not say."""
    folded = derived.select(F.explode("d.rebalances").alias("r")).select("r.*")
    return rebalances.table(folded)


def group_summary(steps: DataFrame, rebalance_table: DataFrame, window_end_ms: int) -> DataFrame:
    """`rebalances.group_summary`'s columns for derived histories: the counts,
    the mean time between generations and the window (first step to
    `window_end_ms`); rebalance durations and time per state are not in the
    offsets topic, so they are null."""
    window = steps.groupBy("group_id").agg(F.min("at_ms").alias("window_start_ms"))
    counts = rebalance_table.groupBy("group_id").agg(
        F.count("*").alias("rebalances"),
        F.avg("since_previous_ms").alias("mean_between_rebalances_ms"),
    )
    unknown_long = F.lit(None).cast("long")
    unknown_double = F.lit(None).cast("double")
    window_ms = F.lit(window_end_ms) - F.col("window_start_ms")
    return window.join(counts, "group_id", "left").select(
        "group_id",
        F.coalesce("rebalances", F.lit(0)).alias("rebalances"),
        F.coalesce("rebalances", F.lit(0)).alias("completed_rebalances"),
        unknown_long.alias("total_duration_ms"),
        unknown_double.alias("mean_duration_ms"),
        unknown_double.alias("p95_duration_ms"),
        unknown_long.alias("max_duration_ms"),
        "mean_between_rebalances_ms",
        "window_start_ms",
        F.lit(window_end_ms).cast("long").alias("window_end_ms"),
        window_ms.alias("window_ms"),
        unknown_long.alias("active_ms"),
        unknown_long.alias("not_consuming_ms"),
        unknown_double.alias("not_consuming_fraction"),
    )
