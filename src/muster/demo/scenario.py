"""The demo's script: broker, orders, a churning group, Spark, analytics."""

from __future__ import annotations

import contextlib
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from rich.console import Console
from rich.table import Table

from muster.analytics.session import jvm_stderr_to
from muster.config import BrokerConfig
from muster.demo.heartbeat import step
from muster.demo.members import Member, MemberProcess
from muster.demo.orders import OrderTrickle, create_topic, produce_burst
from muster.demo.settings import GROUP, PARTITIONS, SPARK_GROUP, TOPIC
from muster.demo.story import rebalance_story
from muster.embedded.thread import BrokerThread
from muster.server.startup import DataDirLock, bind_listener


class _Assigned(Protocol):
    name: str
    consumed: int

    @property
    def current(self) -> list[int]: ...


def _wait(cond: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.1)
    return cond()


def _show(console: Console, title: str, table: Table) -> None:
    # A heading line, not a table title: rich wraps a title to the table's
    # width, which broke short tables' titles over two lines.
    console.print(f"[bold]{title}[/]")
    console.print(table)


def _assignment_table(members: Sequence[_Assigned]) -> Table:
    table = Table()
    table.add_column("member")
    table.add_column("partitions")
    table.add_column("consumed", justify="right")
    for m in members:
        table.add_row(m.name, ", ".join(map(str, m.current)) or "-", str(m.consumed))
    return table


def _consuming(members: Sequence[_Assigned]) -> bool:
    return all(m.consumed > 0 for m in members if m.current)


def _covered(members: Sequence[_Assigned]) -> bool:
    parts = [p for m in members for p in m.current]
    return sorted(parts) == list(range(PARTITIONS))


def churn_group(bootstrap: str, console: Console) -> None:
    """Form a group of 3, add a 4th (in its own process), one leaves, the 4th is killed."""
    members: list[_Assigned] = [Member(f"member-{i}", bootstrap).start() for i in range(3)]
    # group.initial.rebalance.delay.ms (3 s by default) lets all three join one rebalance
    _wait(lambda: _covered(members) and all(m.current for m in members), 60)
    # the orders are waiting in the topic: show the members reading them, not
    # the instant before their first fetch
    _wait(lambda: _consuming(members), 30)
    _show(console, f"group {GROUP}: 3 members formed one group", _assignment_table(members))

    doomed = MemberProcess("member-3", bootstrap)
    members.append(doomed)
    _wait(lambda: _covered(members) and bool(doomed.current), 60)
    _wait(lambda: _consuming(members), 30)
    _show(console, "a 4th member (its own process) joined", _assignment_table(members))

    leaving = members.pop(0)
    assert isinstance(leaving, Member)
    leaving.leave()
    _wait(lambda: _covered(members), 60)
    _show(console, f"{leaving.name} left the group cleanly", _assignment_table(members))

    console.print(
        f"[bold red]kill -9[/] {doomed.name}: its partitions move once its session expires"
    )
    doomed.kill()
    killed_at = time.monotonic()
    survivors = [m for m in members if m is not doomed]
    _wait(lambda: _covered(survivors), 60)
    console.print(
        f"the survivors took over {doomed.name}'s partitions "
        f"{time.monotonic() - killed_at:.1f} s after the kill"
    )
    _show(console, f"{doomed.name} was killed", _assignment_table(survivors))
    for m in survivors:
        assert isinstance(m, Member)
        m.leave()

    table = Table()
    for column in ("gen", "members", "caused by", "took", "the join waited for"):
        right = column in ("gen", "members", "took")
        table.add_column(column, justify="right" if right else "left")
    for row in rebalance_story(bootstrap):
        table.add_row(*row)
    _show(console, "why the group rebalanced (from __muster_group_events)", table)


def run_spark_stage(
    bootstrap: str, out_dir: Path, console: Console, source: str = "muster"
) -> None:
    """The streaming job and the analytics, reading through `source`: muster's
    Spark source, or Spark's own Kafka connector ("kafka")."""
    from muster.analytics.job import run_analysis
    from muster.analytics.load import loader_for
    from muster.analytics.session import start_session, stop_session
    from muster.cli.analyze import print_summary
    from muster.demo.pipeline import run_revenue_job

    with step(console, "starting Spark (local[2])"):
        spark, _started = start_session("local[2]", "muster-demo")
    try:
        with step(console, "Spark Structured Streaming: orders topic -> Parquet"):
            result = run_revenue_job(spark, bootstrap, out_dir / "pipeline", source)
        table = Table()
        for column in ("customer", "orders", "revenue"):
            table.add_column(column, justify="left" if column == "customer" else "right")
        for customer, orders, revenue in result.top_customers:
            table.add_row(customer, str(orders), str(revenue))
        _show(console, f"revenue by customer (top 5 of {result.orders} orders)", table)
        console.print(
            f"the streaming job read {result.orders} orders in {result.batches} micro-batches "
            f"into {result.orders_path}; "
            + (
                f"it committed its progress to group {SPARK_GROUP}"
                if source == "muster"
                else f"through Spark's Kafka connector, as group {SPARK_GROUP} (no commits)"
            )
        )
        with (
            step(console, "rebalance and lag analytics on Spark")
            if not console.is_terminal
            else contextlib.nullcontext()
        ):
            analysis = run_analysis(
                spark,
                bootstrap,
                out_dir / "analysis",
                groups=[GROUP, SPARK_GROUP],
                progress=console if console.is_terminal else None,
                loader=loader_for(spark, bootstrap, source),
            )
        print_summary(analysis)
    finally:
        # the analysis is done: end Spark's JVM too, not only the session, so a
        # demo that keeps serving holds the broker's memory only
        stop_session(spark)


def run(
    config: BrokerConfig,
    keep_serving: bool,
    out_dir: Path = Path("muster-demo"),
    keep_data: bool = False,
    source: str = "muster",
) -> None:
    console = Console()
    # Refuse a taken port before touching the data directory (StartupError).
    host, port = config.listen
    bind_listener(host, port).close()
    console.print(fresh_data_dir(config.data_dir, keep_data), soft_wrap=True)
    broker = BrokerThread(config).start()
    bootstrap = broker.bootstrap
    console.print(f"[bold green]muster is serving[/] on {bootstrap}, data in {config.data_dir}/")
    # The Spark checkpoint and tables describe this data dir's topics only.
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True)
    try:
        create_topic(bootstrap, console)
        produce_burst(bootstrap, console)
        trickle = OrderTrickle(bootstrap).start()
        try:
            churn_group(bootstrap, console)
        finally:
            trickle.stop()
        console.print(f"{trickle.produced} more orders were produced while the group churned")
        spark_log = out_dir / "spark.log"
        console.print(f"Spark's own log goes to {spark_log}", soft_wrap=True)
        with jvm_stderr_to(spark_log):  # Spark's JVM inherits fd 2
            run_spark_stage(bootstrap, out_dir, console, source)
        look_further = [
            ("the report: rebalances by cause, lag curves", f"open {out_dir}/analysis/report.html"),
            ("the last rebalances in plain words", f"muster groups explain {GROUP} -b {bootstrap}"),
            ("the Spark job's group", f"muster groups describe {SPARK_GROUP} -b {bootstrap}"),
            (
                "the analytics again",
                f"muster analyze --bootstrap {bootstrap} --out {out_dir}/analysis",
            ),
            ("the orders", f"muster consume {TOPIC} --max-messages 5 -b {bootstrap}"),
        ]
        console.print("\n[bold]Look further[/] (muster is .venv/bin/muster):")
        for what, command in look_further:
            console.print(f"  {what}:\n    {command}", soft_wrap=True)
        if keep_serving:
            console.print("\nThe broker keeps serving; Ctrl-C stops it.")
            threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        broker.stop()
        console.print("muster stopped")


DEMO_MARKER = ".muster-demo"


def fresh_data_dir(data_dir: Path, keep: bool) -> str:
    """Empties a data directory an earlier demo made, so each run tells its own
    story; keeps it with keep=True, and never deletes one the demo did not make.
    Returns the line that says which happened."""
    if data_dir.exists():
        # a broker still running on it (say an earlier demo with --keep-serving)
        # holds the lock: refuse rather than pull its data from under it
        DataDirLock(data_dir).acquire().release()
    if keep and data_dir.exists():
        return (
            f"keeping {data_dir}/ from the earlier run (--keep-data): its orders and "
            "rebalances are part of this run's story; without --keep-data the demo starts fresh"
        )
    if data_dir.exists() and not (data_dir / DEMO_MARKER).exists():
        return (
            f"{data_dir}/ holds data the demo did not make, so the demo keeps it and its "
            "tables include that data; for a fresh run pass --data-dir NEW_DIR"
        )
    fresh = "starting from an empty"
    if data_dir.exists():
        shutil.rmtree(data_dir)
        fresh = "removed the earlier demo run's data: starting from an empty"
    data_dir.mkdir(parents=True)
    (data_dir / DEMO_MARKER).write_text("made by `muster demo`, which empties it on its next run\n")
    return f"{fresh} {data_dir}/ (--keep-data keeps an earlier run's data)"
