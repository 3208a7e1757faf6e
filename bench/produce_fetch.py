"""Produce and fetch throughput, muster vs the peer broker Tansu, in one run.

For each run and each broker (a fresh broker process per run; the order of the
brokers alternates between runs to spread noise), with confluent-kafka:

* produce N messages of 100 B and of 1 KiB, with acks=all and with acks=1, each
  case into its own 1-partition topic created up front with AdminClient
  (linger.ms=5, batch.size=1000000, no compression); timed from the first
  ``produce()`` to the end of ``flush()``;
* fetch: an assign-mode consumer reads the acks=all topic of each size from offset 0
  (fetch.max.bytes / max.partition.fetch.bytes at their defaults, local prefetch
  queue unbounded); timed from ``assign()`` until the last message has been seen.

Prints the median over ``--runs`` runs in msgs/s and MB/s (10^6 bytes of payload per
second) and the muster/Tansu ratio of each row. muster runs with its defaults
(``muster.fsync=always``: every acknowledged write is fsynced); Tansu runs with
in-memory storage and does not fsync.

    .venv/bin/python bench/produce_fetch.py                 # full run, both brokers
    .venv/bin/python bench/produce_fetch.py --quick --only tansu
    .venv/bin/python bench/produce_fetch.py --runs 5 --json bench/results/pf.json
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
from common import create_topic
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from rich.markup import escape

BROKERS = ("muster", "tansu", "kafka")
SIZES = (100, 1024)
ACKS = ("all", "1")
FULL_COUNTS = {100: 200_000, 1024: 100_000}
QUICK_COUNTS = {100: 20_000, 1024: 10_000}
CASE_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class Case:
    kind: str  # "produce" | "fetch"
    size: int
    acks: str | None = None

    @property
    def label(self) -> str:
        size = "100 B" if self.size == 100 else f"{self.size // 1024} KiB"
        if self.kind == "produce":
            return f"produce {size} acks={self.acks}"
        return f"fetch {size}"

    @property
    def key(self) -> str:
        return f"{self.kind}-{self.size}" + (f"-acks{self.acks}" if self.acks else "")


CASES = [Case("produce", s, a) for s in SIZES for a in ACKS] + [Case("fetch", s) for s in SIZES]


RDK_LOGGER = common.RDK_LOGGER


def produce(
    bootstrap: str, topic: str, size: int, count: int, acks: str, extra: dict | None = None
) -> float:
    """Produce ``count`` messages; return elapsed seconds (first produce .. flush done).
    `extra`: more client properties (security settings for bench/security.py)."""
    errors: list[str] = []  # delivery failures (only failures are reported)

    def dr(err, _msg):
        if err is not None:
            errors.append(str(err))

    def on_error(err):  # client-level: transient connection errors are retried
        if err.fatal():
            errors.append(str(err))

    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": acks,
            "linger.ms": 5,
            "batch.size": 1_000_000,
            "compression.type": "none",
            "enable.idempotence": False,
            "queue.buffering.max.messages": 2_000_000,
            "queue.buffering.max.kbytes": 2_097_151,
            "delivery.report.only.error": True,
            "on_delivery": dr,
            "error_cb": on_error,
            "logger": RDK_LOGGER,
            **(extra or {}),
        }
    )
    try:
        p.list_topics(topic, timeout=10)  # metadata + connection ready before timing
        payload = b"x" * size
        prod = p.produce
        t0 = time.perf_counter()
        for _ in range(count):
            try:
                prod(topic, payload)
            except BufferError:
                p.poll(0.005)
                prod(topic, payload)
        remaining = p.flush(CASE_TIMEOUT_S)
        elapsed = time.perf_counter() - t0
        if remaining:
            raise RuntimeError(f"{remaining} messages still undelivered after flush")
        if errors:
            raise RuntimeError(f"{len(errors)} produce errors, first: {errors[0]}")
        return elapsed
    finally:
        del p


def high_watermark(bootstrap: str, topic: str) -> int:
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-hwm-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "logger": RDK_LOGGER,
        }
    )
    try:
        _low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        return high
    finally:
        c.close()


def fetch(bootstrap: str, topic: str, size: int, count: int) -> float:
    """Read ``count`` messages from offset 0; return elapsed seconds (assign .. last seen)."""
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            # confluent-kafka insists on a group.id; nothing is subscribed or committed.
            "group.id": f"bench-fetch-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": False,
            "auto.offset.reset": "earliest",
            # Let the client prefetch everything: with the default queued.min.messages
            # (100k) the fetcher pauses once its local queue is full and then waits
            # fetch.queue.backoff.ms (1 s) before the next Fetch, a client-side stall
            # that would dominate the timing. fetch.max.bytes and
            # max.partition.fetch.bytes stay at their defaults.
            "queued.min.messages": 10_000_000,
            "queued.max.messages.kbytes": 2_097_151,
            "logger": RDK_LOGGER,
        }
    )
    try:
        c.list_topics(topic, timeout=10)
        seen = 0
        last = -1
        t0 = time.perf_counter()
        c.assign([TopicPartition(topic, 0, 0)])
        deadline = t0 + CASE_TIMEOUT_S
        while last < count - 1:
            if time.perf_counter() > deadline:
                raise RuntimeError(f"fetch timed out after {seen}/{count} messages")
            for m in c.consume(num_messages=10_000, timeout=1.0):
                err = m.error()
                if err is not None:
                    if err.fatal() or not err.retriable():
                        raise KafkaException(err)
                    continue
                if len(m.value()) != size:
                    raise RuntimeError(f"bad message size {len(m.value())} at {m.offset()}")
                seen += 1
                last = m.offset()
        elapsed = time.perf_counter() - t0
        if seen != count:
            raise RuntimeError(f"fetched {seen} messages, expected {count}")
        return elapsed
    finally:
        c.close()


def run_broker_once(
    name: str,
    counts: dict[int, int],
    muster_settings: dict[str, str],
    results: dict,
    run_no: int,
    warnings: list[str],
) -> None:
    kw = {"settings": muster_settings} if name == "muster" else {}
    with common.running(name, **kw) as b:
        try:
            common.console.print(f"[dim]run {run_no}: {name} on {b.bootstrap}[/dim]")
            fetch_topic: dict[int, str] = {}
            for case in CASES:
                n = counts[case.size]
                if case.kind == "produce":
                    topic = f"bench-{case.key}-{uuid.uuid4().hex[:8]}"
                    create_topic(b.bootstrap, topic)
                    cpu0 = common.cpu_seconds(b.proc.pid)  # type: ignore[union-attr]
                    secs = produce(b.bootstrap, topic, case.size, n, case.acks or "all")
                    cpu = common.cpu_seconds(b.proc.pid) - cpu0  # type: ignore[union-attr]
                    hwm = high_watermark(b.bootstrap, topic)
                    if hwm != n:
                        # Not fatal: Tansu 0.6 is known to misreport ListOffsets latest.
                        # The fetch phase checks that every message is really there.
                        warnings.append(f"{name}: {case.label}: high watermark {hwm} != {n}")
                    if case.acks == "all":
                        fetch_topic[case.size] = topic
                else:
                    cpu0 = common.cpu_seconds(b.proc.pid)  # type: ignore[union-attr]
                    secs = fetch(b.bootstrap, fetch_topic[case.size], case.size, n)
                    cpu = common.cpu_seconds(b.proc.pid) - cpu0  # type: ignore[union-attr]
                if not b.alive():
                    raise RuntimeError(f"broker exited during {case.label}")
                results[name][case.key].append(secs)
                # the broker's CPU seconds for the case: less moved by the machine's
                # load than the wall time (raw figures only, under "<broker>-cpu")
                results.setdefault(f"{name}-cpu", {}).setdefault(case.key, []).append(cpu)
                common.console.print(
                    f"[dim]  {case.label:<24} {n / secs:>12,.0f} msgs/s "
                    f"{n * case.size / secs / 1e6:>8.1f} MB/s ({secs:.2f} s, "
                    f"broker CPU {cpu:.2f} s)[/dim]"
                )
        except Exception as e:
            raise RuntimeError(
                f"{name} (run {run_no}): {type(e).__name__}: {e}\n"
                f"last lines of {b.log_path}:\n{b.log_tail(15)}"
            ) from e


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--runs", type=int, default=3, help="repetitions per broker (default 3)")
    ap.add_argument("--quick", action="store_true", help="10x smaller message counts (smoke test)")
    ap.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="multiply the message counts (e.g. 5 for longer, steadier runs)",
    )
    ap.add_argument("--only", choices=BROKERS, help="run one broker only (no ratio)")
    ap.add_argument(
        "--peer",
        choices=BROKERS[1:],
        default="tansu",
        help="the broker muster is compared with (kafka: Apache Kafka 4.4, which does not "
        "fsync either; bench/KAFKA.md)",
    )
    ap.add_argument("--json", metavar="FILE", help="write raw timings and medians as JSON")
    ap.add_argument(
        "--muster-set",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="extra muster --set option (e.g. muster.fsync=never); the published figures use none",
    )
    args = ap.parse_args(argv)

    common.install_signal_handlers()
    counts = QUICK_COUNTS if args.quick else FULL_COUNTS
    counts = {size: max(1, int(n * args.scale)) for size, n in counts.items()}
    brokers = [args.only] if args.only else ["muster", args.peer]
    muster_settings = dict(kv.split("=", 1) for kv in args.muster_set)
    warnings: list[str] = []
    results: dict[str, dict[str, list[float]]] = {b: {c.key: [] for c in CASES} for b in brokers}

    try:
        for run in range(args.runs):
            order = brokers if run % 2 == 0 else list(reversed(brokers))
            for name in order:
                run_broker_once(name, counts, muster_settings, results, run + 1, warnings)
    except KeyboardInterrupt:
        common.console.print("[red]interrupted[/red]")
        return 130
    except Exception as e:
        common.console.print(f"[red]error:[/red] {escape(str(e))}")
        return 1
    finally:
        common.stop_all()

    rows = []
    summary: dict[str, dict] = {}
    for case in CASES:
        n = counts[case.size]
        amount = f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else f"{n:,}"
        row: dict[str, object] = {"label": f"{case.label} ({amount})"}
        for b in brokers:
            med = common.median(results[b][case.key])
            vals = {
                "msgs/s": n / med if med else None,
                "MB/s": n * case.size / med / 1e6 if med else None,
            }
            row[b] = vals
            summary.setdefault(b, {})[case.key] = {"median_s": med, **vals}
        rows.append(row)

    fsync = muster_settings.get("muster.fsync", "always (default)")
    common.print_ratio_table(
        f"produce/fetch throughput, median of {args.runs} run(s) "
        f"[muster fsync={fsync}; "
        + ("tansu memory://, no fsync]" if "tansu" in brokers else "kafka: no fsync]"),
        rows,
        [common.Column("msgs/s"), common.Column("MB/s", 1)],
        brokers=brokers,
        ratio_column="msgs/s",
    )

    if warnings:
        by_broker: dict[str, list[str]] = {}
        for w in warnings:
            by_broker.setdefault(w.split(":", 1)[0], []).append(w)
        for b, ws in by_broker.items():
            total = args.runs * sum(c.kind == "produce" for c in CASES)
            common.console.print(
                f"[yellow]warning:[/yellow] {b}: ListOffsets latest != messages written in "
                f"{len(ws)}/{total} produce cases (e.g. {ws[0].split(': ', 1)[1]}); "
                "all messages were fetched"
            )

    if args.json:
        out = {
            "warnings": warnings,
            "benchmark": "produce_fetch",
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "host": platform.node(),
            "runs": args.runs,
            "quick": args.quick,
            "counts": counts,
            "muster_settings": muster_settings,
            "raw_seconds": results,
            "medians": summary,
            "ratios": {
                c.key: common.ratio(
                    summary["muster"][c.key]["msgs/s"], summary[brokers[1]][c.key]["msgs/s"]
                )
                for c in CASES
            }
            if len(brokers) == 2
            else {},
        }
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
        common.console.print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
