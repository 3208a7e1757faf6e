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
    env = {**os.environ, "COLUMNS": "200", "CI": "1"}
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

    report = out_dir / "analysis" / "report.html"
    assert report.is_file()
    assert "<svg" in report.read_text() or "data:image" in report.read_text()
