"""Per-group rebalances and what they cost, from parsed group events.

The rebalance table comes from muster.coordinator.events.fold itself, the one
fold `muster groups explain` and the metrics share: each group's rows go back
to the event dataclasses (in log order, `event_offset`), `fold` cuts them into
rebalances, and each `Rebalance` becomes one row (a plain Python UDF over
each group's events). A rebalance runs from leaving a stable (or empty) group to the
next `RebalanceCompleted`; a `MemberRemoved` belongs to it when it happens
during it or immediately precedes its first `RebalanceStarted` (the removal
caused it) — any other removal is a note in `explain`, not a rebalance's.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, Row, Window
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

from muster.analytics.events import EVENT_SCHEMA, STATE_CHANGED
from muster.analytics.schema import ms_to_ts
from muster.coordinator import events as ev

# States in which a group has members but none of them consumes.
NOT_CONSUMING_STATES = ("PreparingRebalance", "CompletingRebalance")
ACTIVE_STATES = ("Stable", *NOT_CONSUMING_STATES)

_STRINGS = ArrayType(StringType())
_REMOVAL = StructType(
    [StructField(name, StringType()) for name in ("member_id", "cause", "reason")]
)
# What the fold gives per rebalance (started_at/completed_at and since_previous_ms
# are added in Spark, `table`); muster.analytics.derived gives the same rows.
FOLDED = StructType(
    [
        StructField("group_id", StringType()),
        StructField("rebalance", IntegerType()),
        StructField("cause", StringType()),
        StructField("causes", _STRINGS),
        StructField("reasons", _STRINGS),
        StructField("trigger_member_id", StringType()),
        StructField("previous_generation", IntegerType()),
        StructField("generation", IntegerType()),
        StructField("started_ms", LongType()),
        StructField("completed_ms", LongType()),
        StructField("duration_ms", LongType()),
        StructField("members_before", IntegerType()),
        StructField("members_after", IntegerType()),
        StructField("waited_for", StringType()),
        StructField("removed_members", _STRINGS),
        StructField("removals", ArrayType(_REMOVAL)),
        StructField("completed", BooleanType()),
    ]
)


def _row(group_id: str, number: int, r: ev.Rebalance, before: int | None) -> dict[str, Any]:
    """One `Rebalance` of the fold as a table row; `before` is the member count
    the previous rebalance ended with (None if there was none or it did not end)."""
    first = r.starts[0] if r.starts else None
    done = r.completed
    start_causes = [s.cause for s in r.starts]
    joins_waited = [j.waited_for for j in r.joins]
    return {
        "group_id": group_id,
        "rebalance": number,
        "cause": first.cause if first else (done.causes[0] if done and done.causes else None),
        # an older RebalanceCompleted without causes: the starts tell them
        "causes": list(done.causes) if done and done.causes else start_causes,
        "reasons": [s.reason for s in r.starts if s.reason is not None],
        "trigger_member_id": first.member_id if first else None,
        "previous_generation": first.generation if first else None,
        "generation": done.generation if done else None,
        "started_ms": r.started_ms,
        "completed_ms": done.completed_ms if done else None,
        "duration_ms": done.duration_ms if done else None,
        # leaving Empty: nobody was consuming, even with no earlier rebalance seen
        "members_before": (before or 0) if first and first.from_state == "Empty" else before,
        "members_after": done.member_count if done else None,
        "waited_for": done.waited_for if done else (joins_waited[-1] if joins_waited else None),
        "removed_members": [m for j in r.joins for m in j.removed_members],
        "removals": [
            {"member_id": m.member_id, "cause": m.cause, "reason": m.reason} for m in r.removals
        ],
        "completed": done is not None,
    }


def _fold_group(group_id: str, rows: list[Row]) -> list[dict[str, Any]]:
    """One group's event rows (sorted by `event_offset`) → one row per
    rebalance, by `ev.fold`."""
    events = [e for e in (ev.from_dict(row.asDict()) for row in rows) if e is not None]
    out: list[dict[str, Any]] = []
    before: int | None = None
    for item in ev.fold(events):
        if isinstance(item, ev.Rebalance):
            out.append(_row(group_id, len(out) + 1, item, before))
            before = item.completed.member_count if item.completed else None
    return out


# A plain Python UDF: pandas, which Arrow UDFs (applyInArrow too) need, is
# not a dependency.
_fold_udf = F.udf(_fold_group, ArrayType(FOLDED), useArrow=False)


def rebalances(events: DataFrame) -> DataFrame:
    """One row per rebalance (completed or still running), per group.

    Columns: group_id, rebalance (1-based per group), cause (what started it),
    causes (every cause until it completed, in order), reasons (client reasons
    given), trigger_member_id, previous_generation, generation, started_ms,
    completed_ms, duration_ms, started_at, completed_at, since_previous_ms
    (`table`), members_before,
    members_after, waited_for, removed_members (dropped for not rejoining),
    removals (array of member_id/cause/reason), completed.
    """
    # struct order = sort order: event_offset first, so each group's events are
    # in log order
    columns = F.struct("event_offset", *EVENT_SCHEMA.fieldNames())
    grouped = events.groupBy("group_id").agg(F.sort_array(F.collect_list(columns)).alias("e"))
    folded = grouped.select(F.explode(_fold_udf("group_id", "e")).alias("r")).select("r.*")
    return table(folded)


def table(folded: DataFrame) -> DataFrame:
    """The rebalance table's columns from rows of `FOLDED`, adding started_at,
    completed_at and since_previous_ms (completion to the previous rebalance's
    completion in the same group: the time between generations)."""
    order = Window.partitionBy("group_id").orderBy("rebalance")
    since = F.col("completed_ms") - F.lag("completed_ms").over(order)
    return folded.select(
        "group_id",
        "rebalance",
        "cause",
        "causes",
        "reasons",
        "trigger_member_id",
        "previous_generation",
        "generation",
        "started_ms",
        "completed_ms",
        ms_to_ts("started_ms").alias("started_at"),
        ms_to_ts("completed_ms").alias("completed_at"),
        "duration_ms",
        since.alias("since_previous_ms"),
        "members_before",
        "members_after",
        "waited_for",
        "removed_members",
        "removals",
        "completed",
    )


def cause_counts(rebalance_table: DataFrame) -> DataFrame:
    """group_id, cause, rebalances: how many rebalances each cause started."""
    return rebalance_table.groupBy("group_id", "cause").agg(F.count("*").alias("rebalances"))


def state_intervals(events: DataFrame, window_end_ms: int) -> DataFrame:
    """group_id, state, from_ms, to_ms: the time each group spent in each state,
    from its GroupStateChanged events; the last state lasts until the window end."""
    changes = events.where(F.col("type") == STATE_CHANGED)
    order = Window.partitionBy("group_id").orderBy("event_offset")
    return changes.select(
        "group_id",
        F.col("to_state").alias("state"),
        F.col("at_ms").alias("from_ms"),
        F.least(
            F.coalesce(F.lead("at_ms").over(order), F.lit(window_end_ms)), F.lit(window_end_ms)
        ).alias("to_ms"),
    ).where(F.col("to_ms") >= F.col("from_ms"))


def group_summary(events: DataFrame, rebalance_table: DataFrame, window_end_ms: int) -> DataFrame:
    """Per group: rebalance count, durations (total, mean, p95, max of completed
    rebalances), the mean time between rebalances' completions, the window
    (first event to `window_end_ms`), time with members (`active_ms`), time
    with members but not consuming, and its fraction of the window."""
    spans = state_intervals(events, window_end_ms).select(
        "group_id", "state", (F.col("to_ms") - F.col("from_ms")).alias("ms")
    )
    states = spans.groupBy("group_id").agg(
        F.sum(F.when(F.col("state").isin(*ACTIVE_STATES), F.col("ms")).otherwise(0)).alias(
            "active_ms"
        ),
        F.sum(F.when(F.col("state").isin(*NOT_CONSUMING_STATES), F.col("ms")).otherwise(0)).alias(
            "not_consuming_ms"
        ),
    )
    window = events.groupBy("group_id").agg(F.min("event_ms").alias("window_start_ms"))
    done = F.col("completed")
    counts = rebalance_table.groupBy("group_id").agg(
        F.count("*").alias("rebalances"),
        F.sum(done.cast("long")).alias("completed_rebalances"),
        F.sum(F.when(done, F.col("duration_ms"))).alias("total_duration_ms"),
        F.avg(F.when(done, F.col("duration_ms"))).alias("mean_duration_ms"),
        F.percentile(F.when(done, F.col("duration_ms")), F.lit(0.95)).alias("p95_duration_ms"),
        F.max(F.when(done, F.col("duration_ms"))).alias("max_duration_ms"),
        F.avg("since_previous_ms").alias("mean_between_rebalances_ms"),
    )
    joined = window.join(counts, "group_id", "left").join(states, "group_id", "left")
    window_ms = F.lit(window_end_ms) - F.col("window_start_ms")
    return joined.select(
        "group_id",
        F.coalesce("rebalances", F.lit(0)).alias("rebalances"),
        F.coalesce("completed_rebalances", F.lit(0)).alias("completed_rebalances"),
        F.coalesce("total_duration_ms", F.lit(0)).alias("total_duration_ms"),
        "mean_duration_ms",
        "p95_duration_ms",
        "max_duration_ms",
        "mean_between_rebalances_ms",
        "window_start_ms",
        F.lit(window_end_ms).cast("long").alias("window_end_ms"),
        window_ms.alias("window_ms"),
        F.coalesce("active_ms", F.lit(0)).alias("active_ms"),
        F.coalesce("not_consuming_ms", F.lit(0)).alias("not_consuming_ms"),
        F.when(window_ms > 0, F.coalesce("not_consuming_ms", F.lit(0)) / window_ms)
        .otherwise(F.lit(0.0))
        .alias("not_consuming_fraction"),
    )
