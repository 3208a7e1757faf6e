"""Produce and fetch throughput without a client ceiling: broker CPU per GB, muster vs
Tansu and kfake, in one run.

The load generator is librdkafka's own ``rdkafka_performance`` (C, built by
``bench/build_rdkafka_performance.sh`` against librdkafka 2.15.1), one process per
case, so the client is not what limits the figure. For each run and each broker (a
fresh broker process per run; the broker order rotates between runs) and each case

    size 100 B | 1 KiB  x  compression none | lz4  x  1 | 100 partitions

the bench creates the topic (AdminClient), then

* produce: ``rdkafka_performance -P`` sends N messages (acks=all, linger.ms=5,
  batch.size=1000000, partitioner random over the topic's partitions) and waits
  for every delivery report;
* fetch: ``rdkafka_performance -C`` reads every partition from the beginning
  (``-o beginning -e``, exit at the end of every partition) and must count N.

Each phase is timed by rdkafka_performance's own clock (first produce() to last
delivery report; first message received to the last) and costed by the broker
process's CPU time (utime + stime of every thread, /proc/PID/stat) before and after
the client process. Printed per case: MB/s of payload (10^6 bytes/s), broker CPU seconds per
GB of payload (10^9 bytes), the share of one core the broker used, and the ratios
muster/best peer (CPU per GB, lower is better) and muster/Tansu (MB/s).

    bench/build_rdkafka_performance.sh                      # once
    .venv/bin/python bench/throughput.py                     # 3 runs, ~60 MB per case
    .venv/bin/python bench/throughput.py --quick --runs 1    # smoke test (~1 min)
    .venv/bin/python bench/throughput.py --mb 200 --runs 5 --json bench/results/tp.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
from rich.markup import escape
from rich.table import Table

PEERS = ("tansu", "kfake")
SIZES = (100, 1024)
CODECS = ("none", "lz4")
PARTITIONS = (1, 100)
DEFAULT_BIN = common.RESULTS_DIR / "bin" / "rdkafka_performance"
PHASE_TIMEOUT_S = 300.0
COMPRESSED_FACTOR = 10


@dataclass(frozen=True)
class Case:
    size: int
    codec: str
    partitions: int

    @property
    def key(self) -> str:
        return f"{self.size}B-{self.codec}-p{self.partitions}"

    def count(self, counts: dict) -> int:
        return counts[self.size if self.codec == "none" else f"{self.size}-compressed"]

    @property
    def label(self) -> str:
        size = "100 B" if self.size == 100 else "1 KiB"
        return f"{size} {self.codec} {self.partitions}p"


CASES = [Case(s, c, p) for s in SIZES for c in CODECS for p in PARTITIONS]


def run_client(argv: list[str], broker: common.Broker) -> tuple[float, float, str]:
    """Run one rdkafka_performance process; (process wall seconds, broker CPU seconds
    over the process's life, output)."""
    assert broker.proc is not None
    cpu0 = common.cpu_seconds(broker.proc.pid)
    t0 = time.monotonic()
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=PHASE_TIMEOUT_S, check=False
    )
    wall = time.monotonic() - t0
    cpu = common.cpu_seconds(broker.proc.pid) - cpu0
    out = done.stdout + done.stderr
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:3])} exited {done.returncode}:\n{out[-2000:]}")
    return wall, cpu, out


def produce_argv(binary: Path, bootstrap: str, topic: str, case: Case, count: int) -> list[str]:
    return [
        str(binary), "-P", "-t", topic, "-b", bootstrap,
        "-s", str(case.size), "-c", str(count), "-a", "-1", "-z", case.codec,
        "-X", "linger.ms=5", "-X", "batch.size=1000000", "-X", "enable.idempotence=false",
        "-q",
    ]  # fmt: skip


def fetch_argv(binary: Path, bootstrap: str, topic: str, case: Case, count: int) -> list[str]:
    parts = [a for p in range(case.partitions) for a in ("-p", str(p))]
    return [
        str(binary), "-C", "-t", topic, "-b", bootstrap, *parts,
        "-o", "beginning", "-e", "-c", str(count), "-q",
    ]  # fmt: skip


def summary(out: str, phase: str) -> tuple[int, float]:
    """(messages, seconds) from rdkafka_performance's summary line. Its clock runs
    from the first produce() / the first message received to the last delivery report
    / the last message, so process start, metadata and connection set-up are not in
    the MB/s figure (they are in the CPU window: a few ms of broker CPU)."""
    for line in out.splitlines():
        if phase == "produce" and " delivered (offset " in line:
            # "% N messages produced (B bytes), D delivered (offset O, F failed) in T ms: ..."
            delivered = int(line.split("), ", 1)[1].split()[0])
            failed = int(line.split(" failed)")[0].rsplit(None, 1)[1])
            if failed:
                raise RuntimeError(f"{failed} deliveries failed: {line}")
            return delivered, int(line.split(" in ", 1)[1].split("ms")[0]) / 1e3
        if phase == "fetch" and " consumed in " in line:
            # "% N messages (B bytes) consumed in T ms: ..."
            return int(line.split("%", 1)[1].split()[0]), int(
                line.split(" consumed in ", 1)[1].split("ms")[0]
            ) / 1e3
    raise RuntimeError(f"no {phase} summary in rdkafka_performance output:\n{out[-1000:]}")


def run_broker_once(
    name: str,
    binary: Path,
    counts: dict,
    muster_settings: dict[str, str],
    results: dict,
    run_no: int,
) -> None:
    kw: dict = {}
    if name.startswith("muster"):
        kw["settings"] = dict(muster_settings)
        if name == "muster-nofsync":
            kw["settings"]["muster.fsync"] = "never"
    with common.running(name.split("-")[0], **kw) as b:
        common.console.print(f"[dim]run {run_no}: {name} on {b.bootstrap}[/dim]")
        for case in CASES:
            n = case.count(counts)
            topic = f"tp-{case.key}-{uuid.uuid4().hex[:6]}"
            common.create_topic(b.bootstrap, topic, case.partitions)
            for phase in ("produce", "fetch"):
                make = produce_argv if phase == "produce" else fetch_argv
                pwall, cpu, out = run_client(make(binary, b.bootstrap, topic, case, n), b)
                got, wall = summary(out, phase)
                if got != n:
                    raise RuntimeError(f"{name} {phase} {case.label}: {got} messages != {n}")
                if not b.alive():
                    raise RuntimeError(f"{name} exited during {phase} {case.label}")
                results[name][f"{phase}-{case.key}"].append((wall, cpu, pwall))
                gb = n * case.size / 1e9
                common.console.print(
                    f"[dim]  {phase:<7} {case.label:<16} {gb * 1e3 / wall:>7.1f} MB/s "
                    f"{cpu / gb:>7.1f} cpu-s/GB ({wall:.2f} s wall, {cpu:.2f} s cpu)[/dim]"
                )


def figures(samples: list[tuple[float, float]], nbytes: int) -> dict[str, float | None]:
    wall = common.median(w for w, _, _ in samples)
    cpu = common.median(c for _, c, _ in samples)
    if not wall or cpu is None:
        return {"MB/s": None, "cpu_s_per_GB": None, "core": None}
    return {
        "MB/s": nbytes / wall / 1e6,
        "cpu_s_per_GB": cpu / (nbytes / 1e9),
        "core": common.median(c / pw for _, c, pw in samples),
    }


def phase_rows(brokers: list[str], results: dict, counts: dict) -> Iterator[tuple]:
    for phase in ("produce", "fetch"):
        for case in CASES:
            key = f"{phase}-{case.key}"
            nbytes = case.count(counts) * case.size
            yield phase, case, key, {b: figures(results[b][key], nbytes) for b in brokers}


def print_tables(brokers: list[str], results: dict, counts: dict, runs: int) -> dict:
    """Two tables: broker CPU-s per GB (ratio to the best peer, lower is better) and
    MB/s with the broker's core share (ratio to Tansu)."""
    peers = [b for b in brokers if not b.startswith("muster")]
    musters = [b for b in brokers if b.startswith("muster")]
    rows = list(phase_rows(brokers, results, counts))
    summary: dict[str, dict] = {key: figs for _, _, key, figs in rows}
    for _, _, _, figs in rows:
        best = min((figs[p]["cpu_s_per_GB"] or 1e9 for p in peers), default=None)
        figs["ratios"] = {
            **{f"{m}/best peer cpu": common.ratio(figs[m]["cpu_s_per_GB"], best) for m in musters},
            **{
                f"{m}/tansu MB/s": common.ratio(figs[m]["MB/s"], figs["tansu"]["MB/s"])
                for m in musters
                if "tansu" in brokers
            },
        }
    for what, col, ratio_key, hib, target in (
        ("broker CPU seconds per GB of payload", "cpu_s_per_GB", "best peer cpu", False, 2.0),
        ("MB/s of payload (broker CPU / client wall)", "MB/s", "tansu MB/s", True, 1.0),
    ):
        table = Table(
            title=f"{what}, rdkafka_performance, median of {runs} run(s)", title_justify="left"
        )
        table.add_column("phase / case", style="bold")
        for b in brokers:
            table.add_column(b, justify="right")
        shown = [m for m in musters if f"{m}/{ratio_key}" in rows[0][3]["ratios"]] if rows else []
        for m in shown:
            table.add_column(
                f"{m}/\n{ratio_key.split()[0]} {ratio_key.split()[1]}", justify="right"
            )
        for phase, case, _, figs in rows:
            cells = [f"{phase} {case.label}"]
            for b in brokers:
                cell = common.fmt_num(figs[b][col], 1)
                if col == "MB/s":
                    cell += f" ({common.fmt_num((figs[b]['core'] or 0) * 100)}%)"
                cells.append(cell)
            for m in shown:
                r = figs["ratios"][f"{m}/{ratio_key}"]
                cells.append(common.fmt_ratio(r, higher_is_better=hib, target=target))
            table.add_row(*cells)
        common.console.print(table)
    common.console.print(
        "(N%) is the broker's CPU time / the client process's wall time (100% = one core). "
        "Targets: cpu-s/GB <= 2.0x the best peer; MB/s >= 1.0x Tansu when both saturate."
    )
    return summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--runs", type=int, default=3, help="repetitions per broker (default 3)")
    ap.add_argument("--mb", type=float, default=60.0, help="MB of payload per case (default 60)")
    ap.add_argument("--quick", action="store_true", help="6 MB per case (smoke test)")
    ap.add_argument(
        "--brokers",
        default="muster,muster-nofsync,tansu,kfake",
        help="comma list; muster-nofsync is muster with muster.fsync=never",
    )
    ap.add_argument("--cases", help="subset of case keys, e.g. 100B-none-p1,1024B-lz4-p100")
    ap.add_argument("--binary", type=Path, default=DEFAULT_BIN, help="rdkafka_performance path")
    ap.add_argument("--json", metavar="FILE", help="write raw samples and medians as JSON")
    ap.add_argument(
        "--muster-set", metavar="KEY=VALUE", action="append", default=[],
        help="extra muster --set option (e.g. muster.fsync=never)",
    )  # fmt: skip
    args = ap.parse_args(argv)
    if not args.binary.exists():
        common.console.print(f"[red]{args.binary} missing: run bench/build_rdkafka_performance.sh")
        return 2
    global CASES
    if args.cases:
        wanted = set(args.cases.split(","))
        CASES = [c for c in CASES if c.key in wanted]
    common.install_signal_handlers()
    mb = 6.0 if args.quick else args.mb
    counts = {s: max(1, int(mb * 1e6 / s)) for s in SIZES}
    # rdkafka_performance's payload is one pattern repeated, so lz4 shrinks a batch
    # ~100x: compressed cases get 10x the data to run long enough to measure.
    counts.update({f"{s}-compressed": counts[s] * COMPRESSED_FACTOR for s in SIZES})
    brokers = args.brokers.split(",")
    muster_settings = dict(kv.split("=", 1) for kv in args.muster_set)
    keys = [f"{ph}-{c.key}" for ph in ("produce", "fetch") for c in CASES]
    results: dict[str, dict[str, list]] = {b: {k: [] for k in keys} for b in brokers}
    common.console.print(f"load average at start: {os.getloadavg()}")
    try:
        for run in range(args.runs):
            order = brokers[run % len(brokers) :] + brokers[: run % len(brokers)]
            for name in order:
                run_broker_once(name, args.binary, counts, muster_settings, results, run + 1)
    except KeyboardInterrupt:
        common.console.print("[red]interrupted[/red]")
        return 130
    except Exception as e:
        common.console.print(f"[red]error:[/red] {escape(str(e))}")
        return 1
    finally:
        common.stop_all()
    common.console.print(f"load average at end: {os.getloadavg()}")
    summary = print_tables(brokers, results, counts, args.runs)
    if args.json:
        out = {
            "benchmark": "throughput",
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "host": platform.node(),
            "loadavg_end": os.getloadavg(),
            "runs": args.runs,
            "counts": counts,
            "muster_settings": muster_settings,
            "raw_wall_cpu_seconds": results,
            "medians": summary,
        }
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
        common.console.print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
