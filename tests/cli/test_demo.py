"""The README's main command: `muster demo` runs the whole system end to end."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pyarrow.dataset as ds

from tests.support.brokers import free_port


def test_demo_runs_broker_group_churn_spark_pipeline_and_report(tmp_path: Path) -> None:
    out_dir = tmp_path / "out"
    env = {**os.environ, "COLUMNS": "80", "CI": "1"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "muster",
            "demo",
            "--exit",
            "--data-dir",
            str(tmp_path / "data"),
            "--listen",
            f"127.0.0.1:{free_port()}",
            "--out",
            str(out_dir),
        ],
        capture_output=True,
        text=True,
        timeout=400,
        env=env,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]

    # the group churned for the reasons the demo caused, as recorded by the coordinator
    for cause in ("member_joined", "member_left", "session_expired"):
        assert cause in output, cause

    # the streaming job landed every produced order exactly once
    trickled = int(re.search(r"(\d+) more orders were produced", output).group(1))  # type: ignore[union-attr]
    orders = ds.dataset(out_dir / "pipeline" / "orders.parquet", format="parquet").to_table()
    assert orders.num_rows == 6000 + trickled
    assert len(set(orders.column("order").to_pylist())) == orders.num_rows

    # it fits a terminal of 80 columns: no table wider, nothing cut with an ellipsis
    # (commands and paths are printed whole and left to the terminal to wrap)
    table_lines = [line for line in done.stdout.splitlines() if set(line) & set("│┃┏┡└")]
    assert table_lines and max(map(len, table_lines)) <= 80
    assert "…" not in done.stdout
    # Spark's JVM and librdkafka's own log lines stay out of the demo's output
    assert "Setting default log level" not in output
    assert "Setting default log level" in (out_dir / "spark.log").read_text()
    assert not re.search(r"^%\d\|", output, re.M), output[-2000:]
    # the first member table shows the members reading the orders already waiting
    first = done.stdout.split("3 members formed one group", 1)[1].split("a 4th member", 1)[0]
    consumed = [int(line.split("│")[3]) for line in first.splitlines() if "member-" in line]
    assert len(consumed) == 3 and all(n > 0 for n in consumed), first
    assert "starting from an empty" in done.stdout

    report = out_dir / "analysis" / "report.html"
    assert report.is_file()
    assert "<svg" in report.read_text() or "data:image" in report.read_text()
