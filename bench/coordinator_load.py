"""Group-coordinator load time of muster for 1M offset-commit records.

A data directory is prepared once per variant:

1. ``muster serve`` is started on an empty directory and stopped (SIGTERM) as soon
   as its group coordinator has loaded, so that muster itself creates
   ``__consumer_offsets`` (50 partitions, compacted) and its topic metadata;
2. with muster's own ``LogManager``, ``offset_commit_record`` (Kafka's
   OffsetCommitKey v1 / OffsetCommitValue schemas) and ``build_batch``, N
   OffsetCommit records are appended to the partition that owns each group
   (``partition_for(group, 50)``, Kafka's hash), one batch per simulated
   OffsetCommit request (one group, one topic, 100 partitions = 100 records), then
   flushed and closed (a clean shutdown, as after ``muster serve`` stops).

Variants (both with N records):

* ``distinct``: every record is a different (group, topic, partition) key:
  1,000 groups x 10 topics x 100 partitions (N = 1M).
* ``repeat`` (realistic): 100 groups x 1 topic x 100 partitions, each committed
  100 times with growing offsets: 10,000 keys, each written 100 times.

Each run copies the prepared directory to a fresh one, starts ``python -m muster
serve`` on it and measures, from the moment the process is spawned:

* ``log line``: until muster logs ``group coordinator loaded N records in M ms``
  (M, muster's own figure from the start of loading, is reported too);
* ``committed()``: until a confluent-kafka consumer's ``committed()`` (FindCoordinator
  + OffsetFetch; COORDINATOR_LOAD_IN_PROGRESS is retried) returns the last offset
  written for a group owned by ``__consumer_offsets`` partition 49, the partition
  muster loads last.

Target (issue 3): <= 5 s for 1M records. Only muster is measured (the peer Tansu
keeps offsets in memory and has nothing to load).

    .venv/bin/python bench/coordinator_load.py               # 1M records, 3 runs per variant
    .venv/bin/python bench/coordinator_load.py --quick --runs 1
    .venv/bin/python bench/coordinator_load.py --json bench/results/coordinator_load.json
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import shutil
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
from rich.markup import escape
from rich.table import Table

OFFSETS_TOPIC = "__consumer_offsets"
NUM_PARTITIONS = 50  # offsets.topic.num.partitions, muster's (and Kafka's) default
PARTS_PER_TOPIC = 100
TARGET_S = 5.0
RUN_TIMEOUT_S = 120.0
LOADED_RE = re.compile(r"group coordinator loaded (\d+) records in (\d+) ms")


RDK_LOGGER = common.RDK_LOGGER


@dataclass(frozen=True)
class Variant:
    name: str
    groups: int
    topics: int
    commits: int  # times each (group, topic, partition) is committed

    @property
    def records(self) -> int:
        return self.groups * self.topics * PARTS_PER_TOPIC * self.commits

    @property
    def keys(self) -> int:
        return self.groups * self.topics * PARTS_PER_TOPIC

    def describe(self) -> str:
        return (
            f"{self.groups:,} groups x {self.topics} topic(s) x {PARTS_PER_TOPIC} partitions"
            f" x {self.commits} commit(s)"
        )


def variants(total: int) -> list[Variant]:
    """Both variants with ``total`` records (total must be a multiple of 10,000)."""
    groups = total // (10 * PARTS_PER_TOPIC)
    commits = total // (100 * PARTS_PER_TOPIC)
    return [Variant("distinct", groups, 10, 1), Variant("repeat", 100, 1, commits)]


def group_name(i: int) -> str:
    return f"bench-group-{i:05d}"


def topic_name(i: int) -> str:
    return f"bench-topic-{i:02d}"


def last_offset(commit_round: int, partition: int) -> int:
    return 1000 * (commit_round + 1) + partition


# ---------------------------------------------------------------------------
# preparing a data directory


def wait_for_line(path: Path, pattern: re.Pattern, timeout: float, proc=None) -> re.Match:
    deadline = time.monotonic() + timeout
    pos = 0
    buf = ""
    while time.monotonic() < deadline:
        try:
            with open(path, errors="replace") as f:
                f.seek(pos)
                chunk = f.read()
                pos = f.tell()
        except OSError:
            chunk = ""
        if chunk:
            buf += chunk
            m = pattern.search(buf)
            if m:
                return m
            buf = buf[-1000:]
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(
                f"muster exited with {proc.returncode} before logging {pattern.pattern!r}"
            )
        time.sleep(0.005)
    raise RuntimeError(f"{pattern.pattern!r} not logged within {timeout:.0f} s ({path})")


def create_offsets_topic(data_dir: Path) -> None:
    b = common.start_muster(data_dir=data_dir)
    try:
        wait_for_line(b.log_path, LOADED_RE, 60, b.proc)
    finally:
        rc = b.stop()
    if rc not in (0, None):
        raise RuntimeError(f"muster exited with {rc} on SIGTERM; log {b.log_path}")


def commit_batches(v: Variant) -> Iterator[tuple[str, list[tuple[str, int, int]]]]:
    """(group, [(topic, partition, offset)]) per simulated OffsetCommit request,
    in the order a live cluster would write them (rounds of commits)."""
    for r in range(v.commits):
        for g in range(v.groups):
            for t in range(v.topics):
                yield (
                    group_name(g),
                    [(topic_name(t), p, last_offset(r, p)) for p in range(PARTS_PER_TOPIC)],
                )


def write_records(data_dir: Path, v: Variant) -> float:
    from muster.config import BrokerConfig
    from muster.coordinator.partitioning import partition_for
    from muster.log.manager import LogManager
    from muster.records.batch import build_batch
    from muster.records.offsets_topic import OffsetCommitValue, offset_commit_record

    t0 = time.monotonic()
    mgr = LogManager(data_dir, BrokerConfig())
    mgr.load()
    info = mgr.topic(OFFSETS_TOPIC)
    if info is None or info.num_partitions != NUM_PARTITIONS:
        raise RuntimeError(f"{OFFSETS_TOPIC} missing or not {NUM_PARTITIONS} partitions")
    part_of = {group_name(g): partition_for(group_name(g), NUM_PARTITIONS) for g in range(v.groups)}
    logs = {p: mgr.get(OFFSETS_TOPIC, p) for p in range(NUM_PARTITIONS)}
    ts = int(time.time() * 1000)
    written = 0
    try:
        for group, commits in commit_batches(v):
            records = [
                offset_commit_record(group, topic, part, OffsetCommitValue(off, -1, "", ts))
                for topic, part, off in commits
            ]
            logs[part_of[group]].append(build_batch(records, timestamp_ms=ts), ts)  # type: ignore[union-attr]
            written += len(records)
        mgr.flush_all()
    finally:
        mgr.close()
    if written != v.records:
        raise RuntimeError(f"wrote {written} records, expected {v.records}")
    return time.monotonic() - t0


def probe_group(v: Variant) -> tuple[str, str, int, int]:
    """A group owned by the partition muster loads last, and its last committed offset."""
    from muster.coordinator.partitioning import partition_for

    by_part = {}
    for g in range(v.groups):
        by_part.setdefault(partition_for(group_name(g), NUM_PARTITIONS), group_name(g))
    last_part = max(by_part)
    part = PARTS_PER_TOPIC - 1
    return by_part[last_part], topic_name(v.topics - 1), part, last_offset(v.commits - 1, part)


def dir_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


# ---------------------------------------------------------------------------
# one measured start


def committed_poll(
    bootstrap: str,
    group: str,
    topic: str,
    part: int,
    want: int,
    t_spawn: float,
    out: dict,
    stop: threading.Event,
) -> None:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "logger": RDK_LOGGER,
        }
    )
    try:
        while not stop.is_set():
            try:
                got = c.committed([TopicPartition(topic, part)], timeout=5)[0]
            except Exception as e:  # e.g. timed out while the coordinator loads
                out["last_error"] = f"{type(e).__name__}: {e}"
                time.sleep(0.01)
                continue
            if got.error is None and got.offset == want:
                out["committed_s"] = time.monotonic() - t_spawn
                return
            out["last_error"] = f"offset {got.offset} error {got.error}"
            time.sleep(0.01)
    finally:
        c.close()


def measure(prepared: Path, v: Variant, run_no: int) -> dict:
    work = common.temp_data_dir(f"muster-load-{v.name}-run{run_no}-")
    shutil.rmtree(work)
    shutil.copytree(prepared, work)
    group, topic, part, want = probe_group(v)
    port = common.free_port()
    b = common.Broker(
        name="muster",
        argv=common.muster_argv(work, "127.0.0.1", port),
        host="127.0.0.1",
        port=port,
        log_path=common.RESULTS_DIR / "logs" / f"muster-load-{port}.log",
        data_dir=work,
    )
    out: dict = {}
    stop = threading.Event()
    try:
        t_spawn = time.monotonic()
        b.start(timeout=60)
        out["listening_s"] = time.monotonic() - t_spawn
        poller = threading.Thread(
            target=committed_poll,
            args=(b.bootstrap, group, topic, part, want, t_spawn, out, stop),
            daemon=True,
        )
        poller.start()
        m = wait_for_line(b.log_path, LOADED_RE, RUN_TIMEOUT_S, b.proc)
        out["log_line_s"] = time.monotonic() - t_spawn
        out["loaded_records"] = int(m.group(1))
        out["muster_ms"] = int(m.group(2))
        poller.join(RUN_TIMEOUT_S)
        if "committed_s" not in out:
            raise RuntimeError(f"committed() never returned {want}: {out.get('last_error')}")
        return out
    finally:
        stop.set()
        b.stop()


# ---------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--records", type=int, default=1_000_000, help="records per variant (default 1M)"
    )
    ap.add_argument("--runs", type=int, default=3, help="measured starts per variant (default 3)")
    ap.add_argument("--quick", action="store_true", help="100k records instead of 1M (smoke test)")
    ap.add_argument(
        "--variant",
        choices=("distinct", "repeat"),
        action="append",
        help="only this variant (repeatable; default both)",
    )
    ap.add_argument("--json", metavar="FILE", help="write raw figures and medians as JSON")
    args = ap.parse_args(argv)
    total = 100_000 if args.quick else args.records
    if total % 10_000:
        ap.error("--records must be a multiple of 10,000")

    common.install_signal_handlers()
    chosen = [v for v in variants(total) if not args.variant or v.name in args.variant]
    raw: dict[str, list[dict]] = {}
    info: dict[str, dict] = {}
    failures: list[str] = []
    prepared_dirs: list[Path] = []
    try:
        for v in chosen:
            prepared = common.temp_data_dir(f"muster-load-{v.name}-prepared-")
            prepared_dirs.append(prepared)
            common.console.print(
                f"[dim]{v.name}: {v.describe()} = {v.records:,} records, "
                f"{v.keys:,} distinct keys; preparing {prepared}[/dim]"
            )
            create_offsets_topic(prepared)
            secs = write_records(prepared, v)
            size = dir_size(prepared)
            info[v.name] = {
                "records": v.records,
                "keys": v.keys,
                "layout": v.describe(),
                "bytes": size,
                "write_s": secs,
            }
            common.console.print(
                f"[dim]  wrote {v.records:,} records in {secs:.1f} s "
                f"({size / 1e6:.0f} MB on disk)[/dim]"
            )
            raw[v.name] = []
            for run in range(args.runs):
                try:
                    r = measure(prepared, v, run + 1)
                except Exception as e:
                    msg = f"{v.name} run {run + 1}: {type(e).__name__}: {e}"
                    failures.append(msg)
                    common.console.print(f"[yellow]  {escape(msg)}[/yellow]")
                    continue
                raw[v.name].append(r)
                common.console.print(
                    f"[dim]  run {run + 1}: listening {r['listening_s']:.2f} s, log line "
                    f"{r['log_line_s']:.2f} s (muster: loaded {r['loaded_records']:,} in "
                    f"{r['muster_ms']:,} ms), committed() {r['committed_s']:.2f} s[/dim]"
                )
    except KeyboardInterrupt:
        common.console.print("[red]interrupted[/red]")
        return 130
    except Exception as e:
        common.console.print(f"[red]error:[/red] {escape(str(e))}")
        return 1
    finally:
        common.stop_all()
        for d in prepared_dirs:
            shutil.rmtree(d, ignore_errors=True)

    table = Table(
        title=(
            f"coordinator load, {total:,} OffsetCommit records, median of {args.runs} "
            "start(s), seconds from spawning `muster serve` (lower is better)"
        ),
        title_justify="left",
    )
    for col in (
        "variant",
        "records / keys",
        "listening",
        "log line",
        "muster's M ms",
        "committed()",
        f"target <= {TARGET_S:.0f} s",
    ):
        table.add_column(col, justify="left" if col == "variant" else "right")
    summary: dict[str, dict] = {}
    for v in chosen:
        rs = raw.get(v.name, [])
        med = {
            k: common.median(r[k] for r in rs)
            for k in ("listening_s", "log_line_s", "muster_ms", "committed_s")
        }
        summary[v.name] = med
        worst = max(
            (x for x in (med["log_line_s"], med["committed_s"]) if x is not None), default=None
        )
        verdict = (
            "-"
            if worst is None
            else ("[green]met[/green]" if worst <= TARGET_S else "[red]missed[/red]")
        )
        n = f" ({len(rs)}/{args.runs})" if len(rs) < args.runs else ""
        table.add_row(
            v.name + n,
            f"{v.records:,} / {v.keys:,}",
            common.fmt_num(med["listening_s"], 2) + " s",
            common.fmt_num(med["log_line_s"], 2) + " s",
            common.fmt_num(med["muster_ms"], 0) + " ms",
            common.fmt_num(med["committed_s"], 2) + " s",
            verdict,
        )
    common.console.print(table)
    common.console.print(
        "[dim]log line / committed(): from spawning the process (includes interpreter start and "
        "opening the logs); muster's M ms: its own figure, from the start of the coordinator's "
        "load; N in the log line counts the distinct keys replayed (the last record of each "
        "key).[/dim]"
    )
    for f in failures:
        common.console.print(f"[yellow]failed:[/yellow] {escape(f)}")
    if args.json:
        out = {
            "benchmark": "coordinator_load",
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "host": platform.node(),
            "runs": args.runs,
            "records": total,
            "variants": info,
            "raw": raw,
            "medians": summary,
            "failures": failures,
        }
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
        common.console.print(f"wrote {args.json}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
