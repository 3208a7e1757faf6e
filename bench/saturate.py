"""Throughput with the broker saturated: one core for the broker, one for the load.

bench/throughput.py lets the broker and its load generator share both cores, and
no broker came near one busy core there: the client set the MB/s. Here every
broker thread is pinned to CPU 0 and the load to CPU 1 (``sched_setaffinity``),
and the load grows (``--producers``, e.g. 1, 2, 4 ``rdkafka_performance -P``
processes at once, the messages split between them) until the broker's core is
busy. A broker is **saturated** at a step when its CPU time over the step's wall
time is at least ``--busy`` (0.85) of its core; muster/Tansu MB/s is the issue's
"throughput when both saturate" only where both were.

Per broker (fresh process per run, order rotated) and case (size x partitions,
no compression): a topic, then each load step produces ``--mb`` MB of payload
(acks=all, linger.ms=5, batch.size=1000000, the random partitioner) and is timed
from the first process start to the last exit; then as many
``rdkafka_performance -C`` processes read the whole topic each (fetch step).

    .venv/bin/python bench/saturate.py                                   # 3 runs
    .venv/bin/python bench/saturate.py --runs 1 --mb 50 --producers 1,3  # smoke
    .venv/bin/python bench/saturate.py --brokers muster-nofsync,tansu --cases 100B-p1
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
from rich.table import Table
from throughput import DEFAULT_BIN, PHASE_TIMEOUT_S, Case, fetch_argv, produce_argv

BROKER_CPU, LOAD_CPU = 0, 1
# librdkafka leaves Nagle on by default: the tail of a request can wait for
# the ACK of its head, and the broker's delayed ACK holds that 40 ms (seen as
# steps where neither the broker nor the clients are busy, in any broker)
NO_NAGLE = ("-X", "socket.nagle.disable=true")
CASES = {f"{s}B-p{p}": Case(s, "none", p) for s in (100, 1024) for p in (1, 8)}
Sample = tuple[float, float]  # (MB/s, broker core share)


def pin(pid: int, cpu: int) -> None:
    """Every thread of `pid` on `cpu` (threads it starts later inherit it)."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            os.sched_setaffinity(int(tid), {cpu})
        except (ProcessLookupError, OSError):
            continue  # the thread ended meanwhile


def step(b: common.Broker, argvs: list[list[str]], nbytes: int) -> Sample:
    """Runs the clients at once on LOAD_CPU; (MB/s, broker core share)."""
    assert b.proc is not None
    cpu0 = common.cpu_seconds(b.proc.pid)
    t0 = time.monotonic()
    procs = [
        subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            preexec_fn=lambda: os.sched_setaffinity(0, {LOAD_CPU}),
        )
        for argv in argvs
    ]
    outs = [p.communicate(timeout=PHASE_TIMEOUT_S)[0] for p in procs]
    wall = time.monotonic() - t0
    cpu = common.cpu_seconds(b.proc.pid) - cpu0
    for p, out in zip(procs, outs, strict=True):
        if p.returncode != 0:
            raise RuntimeError(f"rdkafka_performance exited {p.returncode}:\n{out[-1500:]}")
    return nbytes / wall / 1e6, cpu / wall


def start(name: str) -> common.Broker:
    if name == "muster-nofsync":
        b = common.start_muster({"muster.fsync": "never"})
    elif name == "muster":
        b = common.start_muster()
    else:
        b = common.start_broker(name)
    b.name = name
    assert b.proc is not None
    pin(b.proc.pid, BROKER_CPU)
    return b


def one_broker(name: str, args: argparse.Namespace, cases: list[str], out: dict) -> None:
    with start(name) as b:
        for key in cases:
            case = CASES[key]
            count = int(args.mb * 1e6 / case.size)
            for k in args.producers:
                topic = f"sat-{key}-{k}-{uuid.uuid4().hex[:6]}"
                common.create_topic(b.bootstrap, topic, case.partitions)
                share = count // k
                produce = [
                    [*produce_argv(args.binary, b.bootstrap, topic, case, share), *NO_NAGLE]
                    for _ in range(k)
                ]
                mbs, core = step(b, produce, share * k * case.size)
                fetch = [
                    [*fetch_argv(args.binary, b.bootstrap, topic, case, share * k), *NO_NAGLE]
                    for _ in range(k)
                ]
                fmbs, fcore = step(b, fetch, share * k * case.size * k)
                for phase, sample in (("produce", (mbs, core)), ("fetch", (fmbs, fcore))):
                    out.setdefault((phase, key, k, name), []).append(sample)
                common.console.print(
                    f"[dim]  {name:<15} {key:<9} x{k}: produce {mbs:7.1f} MB/s "
                    f"({core:4.0%} core), fetch {fmbs:7.1f} MB/s ({fcore:4.0%})[/dim]"
                )


def print_tables(out: dict, brokers: list[str], cases: list[str], args: argparse.Namespace) -> None:
    for phase in ("produce", "fetch"):
        t = Table(
            title=f"{phase}: MB/s (broker core share), broker on CPU {BROKER_CPU}, "
            f"load on CPU {LOAD_CPU}, medians of {args.runs}",
            title_justify="left",
        )
        t.add_column("case x clients", style="bold")
        for b in brokers:
            t.add_column(b, justify="right")
        musters = [b for b in brokers if b.startswith("muster")]
        if "tansu" in brokers:
            for m in musters:
                t.add_column(f"{m}/tansu (both ≥ {args.busy:.0%})", justify="right")
        for key in cases:
            for k in args.producers:
                med: dict[str, Sample | None] = {}
                for b in brokers:
                    s = out.get((phase, key, k, b), [])
                    med[b] = (
                        (common.median(x for x, _ in s), common.median(c for _, c in s))  # type: ignore[misc]
                        if s
                        else None
                    )
                cells = [f"{key} x{k}"]
                for b in brokers:
                    m = med[b]
                    cells.append("-" if m is None else f"{m[0]:,.1f} ({m[1]:.0%})")
                if "tansu" in brokers:
                    for m in musters:
                        a, z = med[m], med["tansu"]
                        if a is None or z is None:
                            cells.append("-")
                            continue
                        both = a[1] >= args.busy and z[1] >= args.busy
                        r = a[0] / z[0]
                        cells.append(f"{r:.2f}x" + ("" if both else " (not both saturated)"))
                t.add_row(*cells)
        common.console.print(t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--mb", type=float, default=200.0, help="MB of payload per produce step")
    ap.add_argument("--producers", default="1,2,4", help="clients per step, e.g. 1,2,4")
    ap.add_argument("--brokers", default="muster-nofsync,tansu,kfake")
    ap.add_argument("--cases", default=",".join(CASES), help=f"of {', '.join(CASES)}")
    ap.add_argument("--busy", type=float, default=0.85, help="core share that counts as saturated")
    ap.add_argument("--binary", type=Path, default=DEFAULT_BIN)
    args = ap.parse_args()
    args.producers = [int(x) for x in args.producers.split(",")]
    if os.cpu_count() is None or os.cpu_count() < 2:  # type: ignore[operator]
        ap.error("needs two CPUs: one for the broker, one for the load")
    if not args.binary.exists():
        ap.error(f"no {args.binary}: run bench/build_rdkafka_performance.sh first")
    common.install_signal_handlers()
    brokers = [b for b in args.brokers.split(",") if b]
    cases = [c for c in args.cases.split(",") if c]
    common.console.print(f"load average {os.getloadavg()[0]:.2f}")
    out: dict = {}
    for run in range(args.runs):
        order = brokers[run % len(brokers) :] + brokers[: run % len(brokers)]
        common.console.print(f"run {run + 1}/{args.runs}: {', '.join(order)}")
        for name in order:
            one_broker(name, args, cases, out)
    common.console.print(f"load average at the end {os.getloadavg()[0]:.2f}")
    print_tables(out, brokers, cases, args)


if __name__ == "__main__":
    main()
