"""The demo's script: broker, orders, a churning group, Spark, analytics."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from rich.console import Console
from rich.table import Table

from muster.config import BrokerConfig
from muster.demo.members import Member, MemberProcess
from muster.demo.orders import OrderTrickle, create_topic, produce_burst
from muster.demo.settings import GROUP, PARTITIONS, SPARK_GROUP, TOPIC
from muster.demo.story import rebalance_story
from muster.embedded.thread import BrokerThread


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


def _assignment_table(title: str, members: Sequence[_Assigned]) -> Table:
    table = Table(title=title)
    table.add_column("member")
    table.add_column("partitions")
    table.add_column("consumed", justify="right")
    for m in members:
        table.add_row(m.name, ", ".join(map(str, m.current)) or "-", str(m.consumed))
    return table


def _covered(members: Sequence[_Assigned]) -> bool:
    parts = [p for m in members for p in m.current]
    return sorted(parts) == list(range(PARTITIONS))


def churn_group(bootstrap: str, console: Console) -> None:
    """Form a group of 3, add a 4th (in its own process), one leaves, the 4th is killed."""
    members: list[_Assigned] = [Member(f"member-{i}", bootstrap).start() for i in range(3)]
    # group.initial.rebalance.delay.ms (3 s by default) lets all three join one rebalance
    _wait(lambda: _covered(members) and all(m.current for m in members), 60)
    console.print(_assignment_table(f"group {GROUP}: 3 members formed one group", members))

    doomed = MemberProcess("member-3", bootstrap)
    members.append(doomed)
    _wait(lambda: _covered(members) and bool(doomed.current), 60)
    console.print(_assignment_table("a 4th member (its own process) joined", members))

    leaving = members.pop(0)
    assert isinstance(leaving, Member)
    leaving.leave()
    _wait(lambda: _covered(members), 60)
    console.print(_assignment_table(f"{leaving.name} left the group cleanly", members))

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
    console.print(_assignment_table(f"{doomed.name} was killed", survivors))
    for m in survivors:
        assert isinstance(m, Member)
        m.leave()

    table = Table(title="why the group rebalanced (from __muster_group_events)")
    table.add_column("rebalance")
    for line in rebalance_story(bootstrap):
        table.add_row(line)
    console.print(table)


def run_spark_stage(bootstrap: str, out_dir: Path, console: Console) -> None:
    from muster.analytics.job import run_analysis
    from muster.analytics.session import start_session
    from muster.cli.analyze import print_summary
    from muster.demo.pipeline import run_revenue_job

    with console.status("starting Spark (local[2])"):
        spark, _started = start_session("local[2]", "muster-demo")
    try:
        with console.status("Spark Structured Streaming: orders topic -> Parquet"):
            result = run_revenue_job(spark, bootstrap, out_dir / "pipeline")
        table = Table(title=f"revenue by customer (top 5 of {result.orders} orders)")
        for column in ("customer", "orders", "revenue"):
            table.add_column(column, justify="left" if column == "customer" else "right")
        for customer, orders, revenue in result.top_customers:
            table.add_row(customer, str(orders), str(revenue))
        console.print(table)
        console.print(
            f"the streaming job read {result.orders} orders in {result.batches} micro-batches "
            f"into {result.orders_path}; it committed its progress to group {SPARK_GROUP}"
        )
        analysis = run_analysis(
            spark, bootstrap, out_dir / "analysis", groups=[GROUP, SPARK_GROUP], progress=console
        )
        print_summary(analysis)
    finally:
        spark.stop()


def run(config: BrokerConfig, keep_serving: bool, out_dir: Path = Path("muster-demo")) -> None:
    console = Console()
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
        run_spark_stage(bootstrap, out_dir, console)
        console.print(
            "\nLook further:\n"
            f"  open {out_dir}/analysis/report.html   (rebalances by cause, lag curves)\n"
            f"  .venv/bin/muster groups explain {GROUP} -b {bootstrap}\n"
            f"  .venv/bin/muster groups describe {SPARK_GROUP} -b {bootstrap}\n"
            f"  .venv/bin/muster analyze --bootstrap {bootstrap} --out {out_dir}/analysis\n"
            f"  .venv/bin/muster consume {TOPIC} --offset earliest --max-messages 5 -b {bootstrap}"
        )
        if keep_serving:
            console.print("\nThe broker keeps serving; Ctrl-C stops it.")
            threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        broker.stop()
        console.print("muster stopped")
