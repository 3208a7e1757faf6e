"""Client throughput: the muster Python client vs confluent-kafka, same broker, same data.

One muster broker (its defaults). For each message size (100 B and 1 KiB):

* N messages are produced once with confluent-kafka into a 1-partition topic;
* then, ``--runs`` times, alternating which client goes first:

  - consume: an assign-mode consumer reads all N messages from offset 0, timed from
    ``assign()`` until the last message has been seen. confluent-kafka loops on
    ``consume(10000, 1.0)`` with an unbounded local prefetch queue (as
    produce_fetch.py); muster loops on ``poll(1.0)`` (which returns lists) with
    ``max.poll.records=10000`` to match;
  - produce: N messages into a fresh 1-partition topic, timed from the first
    ``produce()`` to the end of ``flush()``; both producers use acks=all,
    linger.ms=5, batch.size=1000000, no compression, no idempotence, no delivery
    callback. muster's producer also gets max.in.flight.requests.per.connection=5
    (Java's default; muster's own default is 1, librdkafka's 1000000), so it
    pipelines Produce requests as confluent-kafka does.

Prints the median msgs/s and MB/s of each client and the muster/confluent ratio
(issue 4's target: >= 0.5x for 1 KiB messages).

    .venv/bin/python bench/client_throughput.py
    .venv/bin/python bench/client_throughput.py --quick --runs 1
    .venv/bin/python bench/client_throughput.py --runs 5 --json bench/results/ct.json
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
import confluent_kafka
from common import RDK_LOGGER, create_topic
from produce_fetch import produce as ck_produce_once
from rich.markup import escape

import muster.client

CLIENTS = ("muster", "confluent")
SIZES = (100, 1024)
KINDS = ("consume", "produce")
FULL_COUNTS = {100: 200_000, 1024: 100_000}
QUICK_COUNTS = {100: 20_000, 1024: 10_000}
CASE_TIMEOUT_S = 300.0
PRODUCER_CONF = {
    "acks": "all",
    "linger.ms": 5,
    "batch.size": 1_000_000,
    "compression.type": "none",
    "enable.idempotence": False,
}


def label(kind: str, size: int) -> str:
    return f"{kind} {'100 B' if size == 100 else f'{size // 1024} KiB'}"


def key(kind: str, size: int) -> str:
    return f"{kind}-{size}"


# ---------------------------------------------------------------- consume


def consume_confluent(bootstrap: str, topic: str, size: int, count: int) -> float:
    c = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-ct-{uuid.uuid4().hex}",  # required; nothing committed
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": False,
            "auto.offset.reset": "earliest",
            "queued.min.messages": 10_000_000,
            "queued.max.messages.kbytes": 2_097_151,
            "logger": RDK_LOGGER,
        }
    )
    try:
        c.list_topics(topic, timeout=10)
        seen, last = 0, -1
        t0 = time.perf_counter()
        c.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
        deadline = t0 + CASE_TIMEOUT_S
        while last < count - 1:
            if time.perf_counter() > deadline:
                raise RuntimeError(f"confluent consume timed out after {seen}/{count}")
            for m in c.consume(num_messages=10_000, timeout=1.0):
                err = m.error()
                if err is not None:
                    if err.fatal() or not err.retriable():
                        raise confluent_kafka.KafkaException(err)
                    continue
                if len(m.value()) != size:
                    raise RuntimeError(f"bad message size {len(m.value())} at {m.offset()}")
                seen += 1
                last = m.offset()
        elapsed = time.perf_counter() - t0
        if seen != count:
            raise RuntimeError(f"confluent consumed {seen} messages, expected {count}")
        return elapsed
    finally:
        c.close()


def consume_muster(bootstrap: str, topic: str, size: int, count: int) -> float:
    c = muster.client.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "max.poll.records": 10_000,
        }
    )
    try:
        seen, last = 0, -1
        t0 = time.perf_counter()
        c.assign([muster.client.TopicPartition(topic, 0)])
        c.seek(muster.client.TopicPartition(topic, 0), 0)
        deadline = t0 + CASE_TIMEOUT_S
        while last < count - 1:
            if time.perf_counter() > deadline:
                raise RuntimeError(f"muster consume timed out after {seen}/{count}")
            for r in c.poll(1.0):
                if len(r.value) != size:
                    raise RuntimeError(f"bad message size {len(r.value)} at {r.offset}")
                seen += 1
                last = r.offset
        elapsed = time.perf_counter() - t0
        if seen != count:
            raise RuntimeError(f"muster consumed {seen} messages, expected {count}")
        return elapsed
    finally:
        c.close()


# ---------------------------------------------------------------- produce


def produce_confluent(bootstrap: str, topic: str, size: int, count: int) -> float:
    return ck_produce_once(bootstrap, topic, size, count, "all")


def produce_muster(bootstrap: str, topic: str, size: int, count: int) -> float:
    p = muster.client.Producer(
        {
            "bootstrap.servers": bootstrap,
            **PRODUCER_CONF,
            "max.in.flight.requests.per.connection": 5,
        }
    )
    try:
        payload = b"x" * size
        prod = p.produce
        t0 = time.perf_counter()
        for _ in range(count):
            prod(topic, payload)
        remaining = p.flush(CASE_TIMEOUT_S)
        elapsed = time.perf_counter() - t0
        if remaining:
            raise RuntimeError(f"{remaining} messages still undelivered after flush")
        return elapsed
    finally:
        p.close()


RUNNERS = {
    ("consume", "muster"): consume_muster,
    ("consume", "confluent"): consume_confluent,
    ("produce", "muster"): produce_muster,
    ("produce", "confluent"): produce_confluent,
}


def run_all(b: common.Broker, counts: dict[int, int], runs: int, results: dict, cpu: dict) -> None:
    """Wall seconds into `results`, this process's CPU seconds (the client's
    work, whichever machine load; the broker is another process) into `cpu`."""
    data_topic: dict[int, str] = {}
    for size in SIZES:
        topic = f"bench-ct-data-{size}-{uuid.uuid4().hex[:8]}"
        create_topic(b.bootstrap, topic)
        ck_produce_once(b.bootstrap, topic, size, counts[size], "all")
        data_topic[size] = topic
    for run in range(runs):
        order = CLIENTS if run % 2 == 0 else tuple(reversed(CLIENTS))
        for size in SIZES:
            n = counts[size]
            for kind in KINDS:
                for client in order:
                    if kind == "consume":
                        topic = data_topic[size]
                    else:
                        topic = f"bench-ct-{client}-{size}-{uuid.uuid4().hex[:8]}"
                        create_topic(b.bootstrap, topic)
                    cpu0 = time.process_time()
                    secs = RUNNERS[(kind, client)](b.bootstrap, topic, size, n)
                    cpu[client][key(kind, size)].append(time.process_time() - cpu0)
                    if not b.alive():
                        raise RuntimeError(f"broker exited during {label(kind, size)}")
                    results[client][key(kind, size)].append(secs)
                    common.console.print(
                        f"[dim]run {run + 1}: {label(kind, size):<14} {client:<9} "
                        f"{n / secs:>12,.0f} msgs/s {n * size / secs / 1e6:>8.1f} MB/s "
                        f"({secs:.2f} s, client CPU "
                        f"{cpu[client][key(kind, size)][-1]:.2f} s)[/dim]"
                    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--runs", type=int, default=3, help="repetitions per client (default 3)")
    ap.add_argument("--quick", action="store_true", help="10x smaller message counts (smoke test)")
    ap.add_argument("--json", metavar="FILE", help="write raw timings and medians as JSON")
    ap.add_argument(
        "--scale", type=float, default=1.0, help="multiply the message counts (steadier figures)"
    )
    args = ap.parse_args(argv)

    common.install_signal_handlers()
    base_counts = QUICK_COUNTS if args.quick else FULL_COUNTS
    counts = {size: int(n * args.scale) for size, n in base_counts.items()}
    cases = [(k, s) for s in SIZES for k in KINDS]
    results: dict[str, dict[str, list[float]]] = {
        c: {key(k, s): [] for k, s in cases} for c in CLIENTS
    }
    cpu: dict[str, dict[str, list[float]]] = {c: {key(k, s): [] for k, s in cases} for c in CLIENTS}
    try:
        with common.running("muster") as b:
            common.console.print(f"[dim]muster broker on {b.bootstrap}[/dim]")
            try:
                run_all(b, counts, args.runs, results, cpu)
            except Exception as e:
                raise RuntimeError(
                    f"{type(e).__name__}: {e}\nlast lines of {b.log_path}:\n{b.log_tail(15)}"
                ) from e
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
    for kind, size in cases:
        n = counts[size]
        amount = f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else f"{n:,}"
        row: dict[str, object] = {"label": f"{label(kind, size)} ({amount})"}
        for c in CLIENTS:
            med = common.median(results[c][key(kind, size)])
            vals = {
                "msgs/s": n / med if med else None,
                "MB/s": n * size / med / 1e6 if med else None,
            }
            row[c] = vals
            summary.setdefault(c, {})[key(kind, size)] = {"median_s": med, **vals}
        rows.append(row)

    common.print_ratio_table(
        f"client throughput on one muster broker, median of {args.runs} run(s) "
        "[muster.client vs confluent-kafka; target >= 0.5x for 1 KiB]",
        rows,
        [common.Column("msgs/s"), common.Column("MB/s", 1)],
        brokers=CLIENTS,
        ratio_column="msgs/s",
        target=0.5,
    )

    if args.json:
        out = {
            "benchmark": "client_throughput",
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "host": platform.node(),
            "runs": args.runs,
            "quick": args.quick,
            "counts": counts,
            "producer_conf": PRODUCER_CONF,
            "raw_seconds": results,
            "client_cpu_seconds": cpu,
            "medians": summary,
            "ratios": {
                key(k, s): common.ratio(
                    summary["muster"][key(k, s)]["msgs/s"],
                    summary["confluent"][key(k, s)]["msgs/s"],
                )
                for k, s in cases
            },
        }
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
        common.console.print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
