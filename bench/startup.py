"""Start-up: `muster serve` to accepting connections, and back to serving groups
after `kill -9` with 1,000 groups and 1M offset records (issue 15).

1. **Empty data directory.** Each run spawns the broker on a fresh directory and
   a free port and times spawn -> the port accepts a TCP connection; muster,
   Tansu (in memory) and kfake (in memory) alternate, medians of ``--runs``.
   muster's own log line ``started in … ms (settings …, bind …, logs …,
   coordinator …, listen … ms); process start to listening … ms``
   is shown for its median run: the rest of the time is the interpreter and
   the imports.
2. **Restart after kill -9.** A data directory is prepared once as
   bench/coordinator_load.py's ``distinct`` variant: 1,000 groups x 10 topics x
   100 partitions, one commit each = 1,000,000 offset records in
   ``__consumer_offsets``. Each run copies it, starts muster on the copy, waits
   until its coordinator has loaded, kills it with SIGKILL (no clean shutdown:
   the last segment of every partition is recovered on the next start), starts
   it again and times spawn -> listening and spawn -> an OffsetFetch (raw
   client, retried while the broker answers COORDINATOR_LOAD_IN_PROGRESS or
   NOT_COORDINATOR) returns the committed offset of a group of the partition
   muster loads last. Targets: <= 0.3 s and <= 3 s.

    .venv/bin/python bench/startup.py                    # 7 empty starts each, 3 kill -9 restarts
    .venv/bin/python bench/startup.py --runs 3 --restarts 1 --records 100000   # quicker
    .venv/bin/python bench/startup.py --skip-restart
    .venv/bin/python bench/startup.py --skip-restart --bytecode   # as an installed wheel starts

``--bytecode`` runs the brokers from a copy of the muster package under test
with its bytecode compiled, as ``pip install`` leaves a wheel: without it, in
an environment with PYTHONDONTWRITEBYTECODE=1 (or a read-only tree) an
editable install compiles every module it imports from source at each start.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import common
import coordinator_load as cl
from common import start_kfake
from rich.table import Table

from reliability.campaign_support import RawClient

STARTED_RE = re.compile(r"started in .*")
EMPTY_TARGET_S = 0.3
RESTART_TARGET_S = 3.0


def cpu_seconds(pid: int) -> float:
    """User + system CPU a process has used (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def spawn_to_listening(name: str) -> tuple[float, float, str]:
    """Seconds from spawn to an accepted connection, the CPU seconds the broker
    used to get there (less sensitive than wall time to other jobs on a busy
    machine), and muster's phase line."""
    t0 = time.monotonic()
    if name == "muster":
        b = common.start_muster()
    elif name == "tansu":
        b = common.start_tansu()
    else:
        b = start_kfake()
    took = time.monotonic() - t0
    assert b.proc is not None
    cpu = cpu_seconds(b.proc.pid)
    line = ""
    try:
        if name == "muster":
            try:
                line = cl.wait_for_line(b.log_path, STARTED_RE, 5, b.proc).group(0)
            except RuntimeError:  # a muster from before the phases were logged
                line = "(no phase line)"
    finally:
        b.stop()
    return took, cpu, line


def empty_starts(runs: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    lines: list[tuple[float, str]] = []
    names = ["muster", "tansu", "kfake"]
    for run in range(runs):
        for name in names[run % 3 :] + names[: run % 3]:
            took, used, line = spawn_to_listening(name)
            out.setdefault(name, []).append(took)
            cpu.setdefault(name, []).append(used)
            if line:
                lines.append((took, line))
    print_row_table(
        "spawn -> accepting connections, empty data directory (s, medians)", out, EMPTY_TARGET_S
    )
    # /proc counts in clock ticks (10 ms): the peers' 0.00 means under one tick.
    print_row_table("CPU seconds (user+sys) the broker used to get there", cpu, None)
    lines.sort()
    common.console.print(f"muster's median run logged: {lines[len(lines) // 2][1]}")
    return out


def print_row_table(title: str, values: dict[str, list[float]], target: float | None) -> None:
    t = Table(title=title, title_justify="left")
    t.add_column("broker", style="bold")
    t.add_column("median s", justify="right")
    t.add_column("runs", justify="right")
    t.add_column("muster/broker", justify="right")
    mine = common.median(values.get("muster", []))
    for name, vals in values.items():
        if name == "muster":
            last = f"target <= {target}" if target is not None else "-"
        else:
            r = common.ratio(mine, common.median(vals))
            last = common.fmt_ratio(r, higher_is_better=False) if r is not None else "-"
        t.add_row(name, f"{common.median(vals):.3f}", " / ".join(f"{v:.2f}" for v in vals), last)
    common.console.print(t)


def fetch_offset(
    port: int, group: str, topic: str, partition: int, timeout: float = 10
) -> tuple[int, int]:
    """(error code, committed offset) by a raw OffsetFetch v8."""
    raw = RawClient(port, timeout=timeout)
    try:
        a = raw.call(
            9,
            8,
            {
                "groups": [
                    {
                        "group_id": group,
                        "topics": [{"name": topic, "partition_indexes": [partition]}],
                    }
                ]
            },
        )
    finally:
        raw.close()
    g = a.groups[0]
    if int(g.error_code):
        return int(g.error_code), -1
    p = g.topics[0].partitions[0]
    return int(p.error_code), int(p.committed_offset)


def kill9_restart(
    prepared: Path, v: cl.Variant, run_no: int, poll_s: float = 0.01
) -> dict[str, float]:
    work = common.temp_data_dir(f"muster-kill9-run{run_no}-")
    shutil.rmtree(work)
    shutil.copytree(prepared, work)
    group, topic, part, want = cl.probe_group(v)
    out: dict[str, float] = {}
    try:
        first = common.start_muster(data_dir=work, timeout=60)
        cl.wait_for_line(first.log_path, cl.LOADED_RE, cl.RUN_TIMEOUT_S, first.proc)
        assert first.proc is not None
        first.proc.send_signal(signal.SIGKILL)
        first.proc.wait()
        first.stop()
        port = common.free_port()
        log_path = common.RESULTS_DIR / "logs" / f"muster-kill9-{port}.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "wb") as log:
            t0 = time.monotonic()
            proc = subprocess.Popen(
                common.muster_argv(work, "127.0.0.1", port),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            try:
                common.wait_for_port("127.0.0.1", port, 60, proc)
                out["listening_s"] = time.monotonic() - t0
                deadline = t0 + cl.RUN_TIMEOUT_S
                while time.monotonic() < deadline:
                    error, offset = fetch_offset(port, group, topic, part)
                    if error == 0 and offset == want:
                        out["serving_s"] = time.monotonic() - t0
                        # steadier than the wall time on a busy machine
                        out["serving_cpu_s"] = cpu_seconds(proc.pid)
                        break
                    if error not in (0, 14, 16):  # LOAD_IN_PROGRESS, NOT_COORDINATOR
                        raise RuntimeError(f"OffsetFetch error {error}")
                    time.sleep(poll_s)
                else:
                    raise RuntimeError("groups not served within the run timeout")
            finally:
                proc.terminate()
                proc.wait(30)
        m = cl.LOADED_RE.search(log_path.read_text(errors="replace"))
        if m:
            out["muster_ms"] = float(m.group(2))
        s = STARTED_RE.search(log_path.read_text(errors="replace"))
        common.console.print(
            f"[dim]  restart {run_no}: listening {out['listening_s']:.2f} s, serving "
            f"{out['serving_s']:.2f} s ({out['serving_cpu_s']:.2f} CPU s); "
            f"{s.group(0) if s else ''}[/dim]"
        )
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def use_compiled_copy() -> Path:
    """Copies the muster package under test to a temporary directory, compiles
    its bytecode there and puts it first on the brokers' PYTHONPATH."""
    import compileall

    import muster

    root = Path(tempfile.mkdtemp(prefix="muster-bytecode-"))
    shutil.copytree(Path(muster.__file__).parent, root / "muster")
    if not compileall.compile_dir(root / "muster", quiet=1):
        raise RuntimeError("compiling the muster package failed")
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p
    )
    common.console.print(f"[dim]brokers run muster from {root} (bytecode compiled)[/dim]")
    return root


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=7, help="empty-directory starts per broker")
    ap.add_argument("--restarts", type=int, default=3, help="kill -9 restarts")
    ap.add_argument("--records", type=int, default=1_000_000, help="a multiple of 10,000")
    ap.add_argument("--skip-restart", action="store_true")
    ap.add_argument(
        "--poll-ms",
        type=float,
        default=10,
        help="pause between OffsetFetch probes after kill -9 (each opens a connection the "
        "loading broker answers; librdkafka backs off 100 ms)",
    )
    ap.add_argument("--bytecode", action="store_true", help="run muster with its bytecode compiled")
    args = ap.parse_args()
    common.install_signal_handlers()
    compiled = use_compiled_copy() if args.bytecode else None
    try:
        run(args)
    finally:
        if compiled is not None:
            shutil.rmtree(compiled, ignore_errors=True)


def run(args: argparse.Namespace) -> None:
    common.console.print(f"load average {os.getloadavg()[0]:.2f}")
    empty_starts(args.runs)
    if args.skip_restart:
        return
    v = cl.variants(args.records)[0]  # distinct: 1,000 groups at 1M records
    prepared = common.temp_data_dir("muster-kill9-prepared-")
    try:
        t0 = time.monotonic()
        cl.create_offsets_topic(prepared)
        cl.write_records(prepared, v)
        common.console.print(
            f"[dim]prepared {v.describe()} = {v.records:,} records in "
            f"{time.monotonic() - t0:.0f} s[/dim]"
        )
        runs = [
            kill9_restart(prepared, v, i + 1, args.poll_ms / 1000) for i in range(args.restarts)
        ]
    finally:
        shutil.rmtree(prepared, ignore_errors=True)
    t = Table(
        title=f"restart after kill -9, {v.groups:,} groups, {v.records:,} offset records (medians)",
        title_justify="left",
    )
    t.add_column("figure", style="bold")
    t.add_column("median", justify="right")
    t.add_column("runs", justify="right")
    t.add_column("target", justify="right")
    for key, label, target in (
        ("listening_s", "spawn -> listening (s)", ""),
        ("serving_s", "spawn -> OffsetFetch answered (s)", f"<= {RESTART_TARGET_S:.0f} s"),
        ("serving_cpu_s", "CPU seconds (user+sys) the broker used to get there", ""),
        ("muster_ms", "muster's own load figure (ms)", ""),
    ):
        vals = [r[key] for r in runs if key in r]
        t.add_row(
            label, f"{common.median(vals):,.2f}", " / ".join(f"{x:,.2f}" for x in vals), target
        )
    common.console.print(t)
    common.console.print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
