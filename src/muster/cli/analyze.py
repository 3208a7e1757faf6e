"""`muster analyze`: why did my groups rebalance, and what did it cost?

Runs the PySpark analytics (muster.analytics) on a local SparkSession over
the broker's `__muster_group_events`, `__consumer_offsets` and the data
topics, writes Parquet tables and an HTML report, and prints a summary. Any
Kafka broker will do: without `__muster_group_events` the rebalance history
is derived from `__consumer_offsets` (no causes), and the summary says so.
"""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from muster.cli import kafka
from muster.cli._common import (
    CommandConfigOption,
    PropertyOption,
    broker_errors,
    client_props,
    err,
    fail,
    out,
    require_spark,
)
from muster.cli.kafka import DEFAULT_BOOTSTRAP

if TYPE_CHECKING:
    from muster.analytics.model import GroupSummary


class Reader(StrEnum):
    source = "source"
    client = "client"


class Source(StrEnum):
    muster = "muster"
    kafka = "kafka"


def analyze(
    out_dir: Annotated[
        Path,
        typer.Option("--out", "-o", metavar="DIR", help="Where the tables and report go."),
    ],
    bootstrap: Annotated[
        str,
        typer.Option(
            "--bootstrap",
            "--bootstrap-server",
            "-b",
            envvar="MUSTER_BOOTSTRAP_SERVER",
            metavar="HOST:PORT",
            help="Broker to read.",
        ),
    ] = DEFAULT_BOOTSTRAP,
    groups: Annotated[
        list[str] | None,
        typer.Option("--group", "-g", metavar="GROUP", help="Only this group; repeatable."),
    ] = None,
    master: Annotated[
        str,
        typer.Option(
            "--master", help="Spark master of the session started (unless one is active)."
        ),
    ] = "local[*]",
    reader: Annotated[
        Reader,
        typer.Option(
            "--reader",
            help="Read topics through the muster Spark source, or with a client on the driver.",
        ),
    ] = Reader.source,
    source: Annotated[
        Source,
        typer.Option(
            "--source",
            help="The Spark source --reader source reads with: muster's own (no JVM jars), "
            "or Spark's Kafka connector (its jars named by MUSTER_SPARK_JARS).",
        ),
    ] = Source.muster,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress display.")] = False,
    command_config: CommandConfigOption = None,
    properties: PropertyOption = None,
) -> None:
    """Rebalances (when, why, how long), time not consuming, commit rate and
    lag per partition over time, per consumer group: Parquet tables, a
    self-contained HTML report and a summary."""
    require_spark("analyze")
    from muster.analytics import load
    from muster.analytics.job import run_analysis
    from muster.analytics.session import jvm_stderr_to, start_session, stop_session

    props = client_props(command_config, properties)
    console = err()
    # a wrong address fails here in seconds, not after Spark has started; a
    # broker without __muster_group_events (any Kafka) is analysed all the same
    with broker_errors():
        kafka.Admin(bootstrap, 10, props).list_topics()
    # Spark's own warnings go to OUT/spark.log, not into the progress display
    with jvm_stderr_to(out_dir / "spark.log") as display:
        console = Console(file=display, highlight=False)
        with console.status("Starting Spark…"):
            spark, started = start_session(master)
        from muster.spark.connector import ConnectorMissing

        try:
            loader = (
                load.loader_for(spark, bootstrap, source.value, props)
                if reader is Reader.source
                else load.client_loader(spark, bootstrap, props=props)
            )
            result = run_analysis(
                spark,
                bootstrap,
                out_dir,
                groups,
                progress=False if quiet else console,
                loader=loader,
            )
        except ConnectorMissing as exc:
            failure = f"--source kafka: {exc}"
        except Exception as exc:
            failure = f"analysis failed: {_headline(exc)}"
        else:
            failure = ""
        finally:
            if started:
                stop_session(spark)
    if failure:
        fail(failure)
    print_summary(result)


_PY_ERROR = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Timeout)\w*: ")


def _headline(exc: BaseException) -> str:
    """Spark errors carry whole Java and Python tracebacks: their first line,
    and the Python exception raised in a worker if there is one, say enough."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    cause = next((line for line in reversed(lines[1:]) if _PY_ERROR.match(line)), None)
    return lines[0] if cause is None else f"{lines[0]} ... {cause}"


def _summary_rows(s: GroupSummary) -> list[tuple[str, str]]:
    """One group's figures, as (label, value) lines of the summary."""
    from muster.analytics.report import causes_text, percent
    from muster.explain import duration

    def ms(value: float | None) -> str:
        return "-" if value is None else duration(round(value))

    causes = f" ({causes_text(s.causes)})" if s.causes else ""
    commits = s.commits_per_minute
    lag = s.max_lag_now
    if s.history == "derived":  # __consumer_offsets holds no causes, durations or states
        between = ms(s.mean_between_rebalances_ms)
        timing = ("between generations", f"mean {between}" if s.rebalances else "-")
        idle = "-" if s.not_consuming_fraction is None else percent(s.not_consuming_fraction)
    else:
        mean, p95 = ms(s.mean_duration_ms), ms(s.p95_duration_ms)
        timing = ("rebalance time", f"mean {mean}, p95 {p95}" if s.rebalances else "-")
        idle = f"{percent(s.not_consuming_fraction or 0.0)} of the time "
        idle += f"({duration(s.not_consuming_ms or 0)})"
    return [
        ("rebalances", f"{s.rebalances}{causes}"),
        timing,
        ("not consuming", idle),
        ("commits", "-" if commits is None else f"{commits:.1f} per minute"),
        ("max lag now", "-" if lag is None else f"{lag:,} records"),
    ]


def print_summary(result: object) -> None:
    from muster.analytics.job import DERIVED, AnalysisResult

    assert isinstance(result, AnalysisResult)
    console = out()
    if result.history == DERIVED:
        from muster.analytics.job import HISTORY_WORDS

        console.print(
            f"No group events: {HISTORY_WORDS[DERIVED]} (generations, joins and "
            "departures; no causes or rebalance durations)",
            soft_wrap=True,
        )
    if not result.groups:
        console.print("No consumer groups found.")
    else:
        # One block per group, a figure per line: a table with a column per
        # figure cut the group names and headers at 80 columns.
        console.print("[bold]Consumer groups[/]")
        for s in result.groups:
            rows = _summary_rows(s)
            table = Table.grid(padding=(0, 2))
            table.add_column(style="dim", no_wrap=True)
            table.add_column(overflow="fold")
            for label, value in rows:
                table.add_row(f"  {label}", escape(value))
            console.print(f"[bold]{escape(s.group_id)}[/]", soft_wrap=True)
            console.print(table)
    console.print(f"Report: {result.report_path}", soft_wrap=True)
    console.print(f"Parquet tables in {result.out_dir / 'tables'}:", soft_wrap=True)
    for name in sorted(result.tables):
        console.print(f"  {name}", soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.command("analyze")(analyze)
