"""Per-group rebalances and what they cost, from parsed group events.

A rebalance runs from leaving a stable (or empty) group to the next
`RebalanceCompleted`, as in muster.coordinator.events.fold (muster.explain): every event belongs
to the rebalance numbered by how many `RebalanceCompleted` came before it in
the group's log order (a `MemberRemoved` that causes a rebalance precedes its
`RebalanceStarted`, so it lands in the right one too).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from muster.analytics.events import (
    JOIN_COMPLETED,
    MEMBER_REMOVED,
    REBALANCE_COMPLETED,
    REBALANCE_STARTED,
    STATE_CHANGED,
)
from muster.analytics.schema import ms_to_ts

# States in which a group has members but none of them consumes.
NOT_CONSUMING_STATES = ("PreparingRebalance", "CompletingRebalance")
ACTIVE_STATES = ("Stable", *NOT_CONSUMING_STATES)


def _numbered(events: DataFrame) -> DataFrame:
    done = (F.col("type") == REBALANCE_COMPLETED).cast("long")
    upto = (
        Window.partitionBy("group_id")
        .orderBy("event_offset")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    return events.withColumn("seq", F.sum(done).over(upto) - done)


def rebalances(events: DataFrame) -> DataFrame:
    """One row per rebalance (completed or still running), per group.

    Columns: group_id, rebalance (1-based per group), cause (what started it),
    causes (every cause until it completed, in order), reasons (client reasons
    given), trigger_member_id, previous_generation, generation, started_ms,
    completed_ms, duration_ms, started_at, completed_at, members_before,
    members_after, waited_for, removed_members (dropped for not rejoining),
    removals (array of member_id/cause/reason), completed.
    """
    numbered = _numbered(events)
    key = ["group_id", "seq"]
    starts = (
        numbered.where(F.col("type") == REBALANCE_STARTED)
        .groupBy(*key)
        .agg(
            F.sort_array(
                F.collect_list(
                    F.struct(
                        "event_offset",
                        "at_ms",
                        "cause",
                        "member_id",
                        "reason",
                        "generation",
                        "from_state",
                    )
                )
            ).alias("starts")
        )
    )
    joins = (
        numbered.where(F.col("type") == JOIN_COMPLETED)
        .groupBy(*key)
        .agg(
            F.flatten(F.collect_list(F.coalesce("removed_members", F.array()))).alias(
                "removed_members"
            ),
            F.max_by("waited_for", "event_offset").alias("join_waited_for"),
        )
    )
    removals = (
        numbered.where(F.col("type") == MEMBER_REMOVED)
        .groupBy(*key)
        .agg(
            F.sort_array(
                F.collect_list(F.struct("event_offset", "member_id", "cause", "reason"))
            ).alias("removed")
        )
    )
    completed = numbered.where(F.col("type") == REBALANCE_COMPLETED).select(
        *key,
        F.col("generation"),
        F.col("started_ms").alias("done_started_ms"),
        F.col("completed_ms"),
        F.col("duration_ms"),
        F.col("causes").alias("done_causes"),
        F.col("waited_for").alias("done_waited_for"),
        F.col("member_count").alias("members_after"),
    )
    rows = starts.join(completed, key, "full").join(joins, key, "left").join(removals, key, "left")
    first = F.col("starts").getItem(0)
    start_causes = F.transform("starts", lambda s: s["cause"])
    by_group = Window.partitionBy("group_id").orderBy("seq")
    previous_after = F.lag("members_after").over(by_group)
    return rows.select(
        "group_id",
        F.row_number().over(by_group).alias("rebalance"),
        F.coalesce(first["cause"], F.col("done_causes").getItem(0)).alias("cause"),
        F.coalesce("done_causes", start_causes).alias("causes"),
        F.filter(F.transform("starts", lambda s: s["reason"]), lambda r: r.isNotNull()).alias(
            "reasons"
        ),
        first["member_id"].alias("trigger_member_id"),
        first["generation"].alias("previous_generation"),
        "generation",
        F.coalesce("done_started_ms", first["at_ms"]).alias("started_ms"),
        "completed_ms",
        ms_to_ts(F.coalesce("done_started_ms", first["at_ms"])).alias("started_at"),
        ms_to_ts("completed_ms").alias("completed_at"),
        "duration_ms",
        F.when(first["from_state"] == "Empty", F.coalesce(previous_after, F.lit(0)))
        .otherwise(previous_after)
        .alias("members_before"),
        "members_after",
        F.coalesce("done_waited_for", "join_waited_for").alias("waited_for"),
        F.coalesce("removed_members", F.array().cast("array<string>")).alias("removed_members"),
        F.coalesce(
            F.transform(
                "removed",
                lambda r: F.struct(
                    r["member_id"].alias("member_id"),
                    r["cause"].alias("cause"),
                    r["reason"].alias("reason"),
                ),
            ),
            F.array().cast("array<struct<member_id:string,cause:string,reason:string>>"),
        ).alias("removals"),
        F.col("completed_ms").isNotNull().alias("completed"),
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
    rebalances), the window (first event to `window_end_ms`), time with members
    (`active_ms`), time with members but not consuming, and its fraction of the
    window."""
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
        "window_start_ms",
        F.lit(window_end_ms).cast("long").alias("window_end_ms"),
        window_ms.alias("window_ms"),
        F.coalesce("active_ms", F.lit(0)).alias("active_ms"),
        F.coalesce("not_consuming_ms", F.lit(0)).alias("not_consuming_ms"),
        F.when(window_ms > 0, F.coalesce("not_consuming_ms", F.lit(0)) / window_ms)
        .otherwise(F.lit(0.0))
        .alias("not_consuming_fraction"),
    )
