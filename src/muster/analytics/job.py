"""`run_analysis`: read the topics once, compute every table, write Parquet
and the HTML report, with the stages shown as they run."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from rich.console import Console

from muster import explain as explain_words
from muster.analytics import derived as derived_mod
from muster.analytics import lag as lag_mod
from muster.analytics import load, offsets, rebalances, report
from muster.analytics.events import parse_events
from muster.analytics.model import GroupReport, GroupSummary
from muster.analytics.progress import StageProgress
from muster.analytics.schema import KAFKA_SCHEMA, OFFSETS_TOPIC
from muster.coordinator import events as ev
from muster.coordinator.topics import EVENTS_TOPIC

STAGES = (
    f"Reading {EVENTS_TOPIC}",
    f"Reading {OFFSETS_TOPIC}",
    "Reading data topics (log end offsets)",
    "Rebalances and time not consuming",  # or, without events, the derived history
    "Commit rate",
    "Lag per partition",
    "Writing Parquet tables",
    "Writing the HTML report",
)
STORY_REBALANCES = 20  # the plain-words account covers the last this many per group
STORY_STEPS = 60  # a derived history's account: its last this many steps
# where the rebalance history came from
EVENTS = "events"
DERIVED = "derived"
HISTORY_WORDS = {
    EVENTS: f"history from {EVENTS_TOPIC}",
    DERIVED: f"history derived from {OFFSETS_TOPIC}",
}


@dataclass(frozen=True)
class AnalysisResult:
    out_dir: Path
    report_path: Path
    tables: dict[str, Path]  # table name -> Parquet directory
    groups: list[GroupSummary]
    window_start_ms: int
    window_end_ms: int
    source: str  # which loader read the topics
    history: str = EVENTS  # EVENTS, or DERIVED: no group events, from __consumer_offsets


def _console(progress: bool | Console) -> Console | None:
    if progress is True:
        return Console(stderr=True)
    if progress is False:
        return None
    return progress


def _only(df: DataFrame, groups: list[str] | None) -> DataFrame:
    return df if not groups else df.where(F.col("group_id").isin(groups))


def run_analysis(
    spark: SparkSession,
    bootstrap: str,
    out_dir: Path,
    groups: list[str] | None = None,
    progress: bool | Console = True,
    loader: load.Loader | None = None,
    points: int = lag_mod.DEFAULT_POINTS,
    props: Mapping[str, str] | None = None,
) -> AnalysisResult:
    """Analyses every group (or `groups`) recorded on the broker at `bootstrap`.

    Writes Parquet tables under `out_dir/tables/` and `out_dir/report.html`.
    The topics are read once, up to their ends when each is read; the window
    ends at the newest timestamp seen. `loader` defaults to the `muster` Spark
    source; `progress` is True (stderr), False, or a rich Console.

    Without group events (no `__muster_group_events`, or none for these
    groups: any Kafka) the rebalances come from the history derived from
    `__consumer_offsets` (muster.analytics.derived): generations, members,
    departures and the time between generations, no causes or durations.
    The derived `generations` table is written either way.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    read = loader or load.source_loader(spark, bootstrap, props)
    source = getattr(read, "description", "custom")
    stages = StageProgress(STAGES, _console(progress), spark)
    tables_dir = out_dir / "tables"
    with stages.running():
        # Each input is materialised once: the topics keep growing, and every
        # table must describe the same snapshot.
        with stages.stage(0):
            events = _only(parse_events(read([EVENTS_TOPIC])), groups).localCheckpoint()
        with stages.stage(1):
            # read once for both: commits, and the group records histories are derived from
            offsets_records = read([OFFSETS_TOPIC]).localCheckpoint()
            commit_rows = _only(offsets.commits(offsets_records), groups).localCheckpoint()
            group_rows = _only(derived_mod.group_records(offsets_records), groups)
            derived = derived_mod.derive_groups(group_rows).localCheckpoint()
            steps = derived_mod.generations(derived)
            history = EVENTS if events.limit(1).count() else DERIVED
        with stages.stage(2):
            topics = [r.topic for r in commit_rows.select("topic").distinct().collect()]
            data_topics = load.data_topics(topics)
            end_changes = (
                lag_mod.log_end_changes(read(data_topics)).localCheckpoint()
                if data_topics
                else None
            )
            start_ms, end_ms = _window(events, commit_rows, end_changes, steps)
        with stages.stage(3):
            if history == EVENTS:
                rebalance_table = rebalances.rebalances(events).localCheckpoint()
                summary = rebalances.group_summary(events, rebalance_table, end_ms)
                causes = rebalances.cause_counts(rebalance_table)
            else:
                rebalance_table = derived_mod.rebalance_table(derived).localCheckpoint()
                summary = derived_mod.group_summary(steps, rebalance_table, end_ms)
                # no causes in a derived history: none counted
                causes = rebalances.cause_counts(rebalance_table.where(F.col("cause").isNotNull()))
            summary = summary.localCheckpoint()
            intervals = rebalances.state_intervals(events, end_ms)
        with stages.stage(4):
            rate = offsets.commit_rate(commit_rows).localCheckpoint()
            windows = summary.select("group_id", "window_ms")
            commit_groups = commit_rows.select("group_id").distinct()
            # groups that only commit (no membership) get the whole window
            windows = windows.unionByName(
                commit_groups.join(windows, "group_id", "left_anti").select(
                    "group_id", F.lit(end_ms - start_ms).alias("window_ms")
                )
            )
            totals = offsets.commit_totals(commit_rows, windows)
        with stages.stage(5):
            grid = lag_mod.time_grid(start_ms, end_ms, points)
            if end_changes is None:
                end_changes = lag_mod.log_end_changes(spark.createDataFrame([], KAFKA_SCHEMA))
            lag = lag_mod.lag_series(spark, commit_rows, end_changes, grid).localCheckpoint()
            now = lag_mod.current_lag(lag)
        with stages.stage(6):
            tables = {
                "rebalances": rebalance_table,
                "rebalance_causes": causes,
                "group_summary": _full_summary(
                    summary, causes, totals, now, start_ms, end_ms, history
                ),
                "group_states": intervals,
                "generations": steps,
                "commits": commit_rows,
                "commit_rate": rate,
                "lag": lag,
            }
            paths = {}
            for name, df in tables.items():
                path = tables_dir / name
                df.coalesce(1).write.mode("overwrite").parquet(str(path))
                paths[name] = path
        with stages.stage(7):
            summaries = _summaries(tables["group_summary"])
            reports = _group_reports(summaries, rebalance_table, rate, lag, events)
            if history == DERIVED:
                _derived_stories(reports, steps)
            html = report.render(reports, start_ms, end_ms, source, paths, HISTORY_WORDS[history])
            report_path = report.write(out_dir / "report.html", html)
    return AnalysisResult(out_dir, report_path, paths, summaries, start_ms, end_ms, source, history)


def _window(
    events: DataFrame, commit_rows: DataFrame, end_changes: DataFrame | None, steps: DataFrame
) -> tuple[int, int]:
    """From the first group event, derived step or commit to the newest
    timestamp anywhere."""
    e = events.agg(F.min("event_ms"), F.max("event_ms")).first()
    c = commit_rows.agg(F.min("commit_ms"), F.max("commit_ms")).first()
    g = steps.agg(F.min("at_ms"), F.max("at_ms")).first()
    d = end_changes.agg(F.max("t_ms")).first() if end_changes is not None else None
    starts = [v for v in (e[0], c[0], g[0]) if v is not None]  # type: ignore[index]
    ends = [v for v in (e[1], c[1], g[1], d[0] if d else None) if v is not None]  # type: ignore[index]
    now = int(time.time() * 1000)
    start = min(starts) if starts else now
    return int(start), int(max(ends)) if ends else max(int(start), now)


def _full_summary(
    summary: DataFrame,
    causes: DataFrame,
    totals: DataFrame,
    now: DataFrame,
    start_ms: int,
    end_ms: int,
    history: str,
) -> DataFrame:
    """The group summary table: `summary` with causes, commits and lag, for
    every group that has either. Figures a derived history does not hold
    (durations, time per state) stay null rather than read as zero."""
    by_cause = causes.groupBy("group_id").agg(
        F.map_from_entries(F.collect_list(F.struct("cause", "rebalances"))).alias("causes")
    )
    joined = (
        summary.join(totals, "group_id", "full")
        .join(by_cause, "group_id", "left")
        .join(now, "group_id", "left")
    )
    zero = F.lit(0)

    def known(column: str, default: Column) -> Column:
        return F.col(column) if history == DERIVED else F.coalesce(column, default)

    return joined.select(
        "group_id",
        F.coalesce("rebalances", zero).alias("rebalances"),
        F.coalesce("completed_rebalances", zero).alias("completed_rebalances"),
        F.coalesce("causes", F.create_map().cast("map<string,bigint>")).alias("causes"),
        known("total_duration_ms", zero.cast("long")).alias("total_duration_ms"),
        "mean_duration_ms",
        "p95_duration_ms",
        "max_duration_ms",
        "mean_between_rebalances_ms",
        F.coalesce("window_start_ms", F.lit(start_ms)).alias("window_start_ms"),
        F.lit(end_ms).alias("window_end_ms"),
        F.coalesce("window_ms", F.lit(end_ms - start_ms)).alias("window_ms"),
        known("active_ms", zero.cast("long")).alias("active_ms"),
        known("not_consuming_ms", zero.cast("long")).alias("not_consuming_ms"),
        known("not_consuming_fraction", F.lit(0.0)).alias("not_consuming_fraction"),
        F.coalesce("commits", zero.cast("long")).alias("commits"),
        F.coalesce("partition_commits", zero.cast("long")).alias("partition_commits"),
        "commits_per_minute",
        "max_lag_now",
        "total_lag_now",
        F.lit(history).alias("history"),
    )


def _summaries(summary: DataFrame) -> list[GroupSummary]:
    out = []
    for row in summary.orderBy("group_id").collect():
        d = row.asDict()
        d.pop("window_ms")
        d["causes"] = dict(d["causes"] or {})
        out.append(GroupSummary(**d))
    return out


def _group_reports(
    summaries: list[GroupSummary],
    rebalance_table: DataFrame,
    rate: DataFrame,
    lag: DataFrame,
    events: DataFrame,
) -> list[GroupReport]:
    reports = {s.group_id: GroupReport(s) for s in summaries}
    for row in rebalance_table.orderBy("group_id", "rebalance").collect():
        if row.group_id in reports:
            reports[row.group_id].rebalances.append(row.asDict(recursive=True))
    for row in rate.collect():
        if row.group_id in reports:
            minute_ms = int(row.minute.timestamp() * 1000)
            reports[row.group_id].commit_rate.append(
                (minute_ms, row.commits, row.partition_commits)
            )
    for row in lag.orderBy("t_ms").collect():
        if row.group_id in reports:
            label = f"{row.topic}-{row.partition}"
            reports[row.group_id].lag.setdefault(label, []).append((row.t_ms, float(row.lag)))
    stories: dict[str, list[ev.GroupEvent]] = {}
    for row in events.orderBy("event_offset").collect():
        event = ev.from_dict(row.asDict(recursive=True))
        if event is not None:
            stories.setdefault(row.group_id, []).append(event)
    for group_id, group_events in stories.items():
        if group_id in reports:
            reports[group_id].story = explain_words.explain(group_events, STORY_REBALANCES)
    return list(reports.values())


def _derived_stories(reports: list[GroupReport], steps: DataFrame) -> None:
    """Without events, each group's account is its derived steps, one line
    each (the console's words: `Generation.summary`), the last STORY_STEPS."""
    newest = Window.partitionBy("group_id").orderBy(F.col("step").desc())
    last = steps.withColumn("n", F.row_number().over(newest)).where(F.col("n") <= STORY_STEPS)
    lines: dict[str, list[list[str]]] = {}
    for row in last.orderBy("group_id", "step").select("group_id", "at_ms", "summary").collect():
        lines.setdefault(row.group_id, []).append([f"{report.when(row.at_ms)} UTC: {row.summary}"])
    for r in reports:
        r.story = lines.get(r.summary.group_id, [])
