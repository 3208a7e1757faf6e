"""Consumer bounce soak (Kafka's ConsumerBounceTest, for a whole group).

    .venv/bin/python reliability/bounce_soak.py [--seconds 600] [--mode cooperative-static]

One muster broker, one topic of 20 partitions, an idempotent acks=all
confluent-kafka producer writing throughout, and `--members` (10)
confluent-kafka consumers of one group, each its own process: it consumes,
writes every record it got (partition, offset, the assignment it came under,
the time) to its own file, flushes, then commits synchronously. At random
moments a member is killed (SIGKILL: its session has to run out) or stopped
(SIGTERM: `close()` leaves the group) and started again a little later; with
static members (`group.instance.id`) the new process takes the old identity.
Afterwards every member runs until the group has consumed everything.

Modes: `eager` (range assignor), `cooperative` (cooperative-sticky),
`static` (range, every member static), `cooperative-static` (cooperative-sticky,
half the members static).

Checked:
- lost: an acknowledged record no member ever consumed (must be 0);
- duplicates: records consumed more than once (counted: a killed member's
  uncommitted records are consumed again, as Kafka allows);
- overlap: two members consuming one partition at the same time, measured
  per partition as the overlap of their assignment spans (first to last
  record consumed under one assignment); it must stay under one session
  timeout (a revoked member may still be finishing its last poll).

Closing line: `bounce-soak: MODE, N members, S s, K kills + T stops, A acked
records, 0 lost, D duplicates, max overlap X s (bound 6 s)`.
"""

from __future__ import annotations

import argparse
import itertools
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]

from campaign_support import (  # noqa: E402
    MusterProcess,
    add_keep_option,
    campaign_workdir,
    create_topic,
)
from confluent_kafka import Consumer, KafkaException, Producer  # noqa: E402

TOPIC, PARTITIONS, GROUP = "bounce", 20, "bounce-group"
SESSION_MS = 6000
MODES = {  # mode -> (assignor, which member slots are static)
    "eager": ("range", lambda slot: False),
    "cooperative": ("cooperative-sticky", lambda slot: False),
    "static": ("range", lambda slot: True),
    "cooperative-static": ("cooperative-sticky", lambda slot: slot % 2 == 0),
}


# ---- one member (its own process) ---------------------------------------------


def member_main(bootstrap: str, slot: int, mode: str, out_path: str) -> None:
    assignor, static = MODES[mode]
    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": GROUP,
        "partition.assignment.strategy": assignor,
        "session.timeout.ms": SESSION_MS,
        "heartbeat.interval.ms": 1000,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    }
    if static(slot):
        conf["group.instance.id"] = f"member-{slot}"
    out = open(out_path, "a")
    epochs: dict[int, int] = {}  # partition -> the assignment it is consumed under
    counter = itertools.count(1)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())

    def assigned(_c: Any, parts: list[Any]) -> None:
        for tp in parts:
            epochs[tp.partition] = next(counter)
            out.write(f"A {time.time():.3f} {tp.partition} {epochs[tp.partition]}\n")
        out.flush()

    def revoked(_c: Any, parts: list[Any]) -> None:
        for tp in parts:
            epochs.pop(tp.partition, None)
            out.write(f"R {time.time():.3f} {tp.partition}\n")
        out.flush()

    consumer = Consumer(conf)
    consumer.subscribe([TOPIC], on_assign=assigned, on_revoke=revoked, on_lost=revoked)
    while not stop.is_set():
        msgs = consumer.consume(200, 0.5)
        got = [m for m in msgs if m.error() is None]
        if not got:
            continue
        now = time.time()
        for m in got:
            out.write(f"C {now:.3f} {m.partition()} {m.offset()} {epochs.get(m.partition(), 0)}\n")
        out.flush()  # what is committed below is on file even after a SIGKILL
        try:
            consumer.commit(asynchronous=False)
            out.write(f"K {time.time():.3f}\n")
        except KafkaException as exc:
            out.write(f"E {time.time():.3f} {exc.args[0].code()}\n")
    consumer.close()
    out.close()


# ---- the controller ----------------------------------------------------------------


@dataclass
class Figures:
    mode: str
    members: int
    seconds: float = 0.0
    kills: int = 0
    stops: int = 0
    acked: int = 0
    lost: int = 0
    duplicates: int = 0
    consumed: int = 0
    commits: int = 0
    commit_errors: int = 0
    max_overlap_s: float = 0.0
    overlap_where: str = ""
    lost_examples: list[tuple[int, int]] = field(default_factory=list)

    def line(self) -> str:
        return (
            f"bounce-soak: {self.mode}, {self.members} members, {self.seconds:.0f}s, "
            f"{self.kills} kills (-9) + {self.stops} clean stops, {self.acked:,} acked records, "
            f"{self.lost:,} lost, {self.duplicates:,} duplicates "
            f"({100 * self.duplicates / max(1, self.acked):.1f}%), "
            f"{self.commits:,} commits ({self.commit_errors} refused), "
            f"max overlap {self.max_overlap_s:.1f}s (bound {SESSION_MS / 1000:.0f}s)"
        )


class Member:
    def __init__(self, slot: int, bootstrap: str, mode: str, workdir: Path) -> None:
        self.slot, self.bootstrap, self.mode, self.workdir = slot, bootstrap, mode, workdir
        self.proc: subprocess.Popen[bytes] | None = None
        self.runs = 0

    def start(self) -> None:
        self.runs += 1
        out = self.workdir / f"member-{self.slot}-{self.runs}.log"
        cmd = [sys.executable, __file__, "--member", str(self.slot), "--mode", self.mode]
        cmd += ["--bootstrap", self.bootstrap, "--out", str(out)]
        self.proc = subprocess.Popen(cmd)

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(30)
            self.proc = None

    def stop(self) -> None:
        self.signal_stop()
        self.wait()

    def signal_stop(self) -> None:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGTERM)

    def wait(self) -> None:
        if self.proc is not None:
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)
            self.proc = None


def _produce(bootstrap: str, acked: set[tuple[int, int]], stop: threading.Event) -> None:
    producer = Producer(
        {"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all", "linger.ms": 5}
    )

    def on_delivery(err: Any, msg: Any) -> None:
        if err is None:
            acked.add((msg.partition(), msg.offset()))

    for n in itertools.count():
        if stop.is_set():
            break
        try:
            producer.produce(
                TOPIC, f"r{n}".encode(), partition=n % PARTITIONS, on_delivery=on_delivery
            )
        except BufferError:
            producer.poll(0.1)
        producer.poll(0.005)  # about 150 records a second
    producer.flush(60)


def _read_logs(workdir: Path) -> tuple[list[tuple[str, ...]], list[str]]:
    """Each member file's lines (split), tagged with the file (one process run)."""
    rows: list[tuple[str, ...]] = []
    files = sorted(workdir.glob("member-*.log"))
    for f in files:
        for line in f.read_text().splitlines():
            parts = line.split()
            if parts:
                rows.append((f.name, *parts))
    return rows, [f.name for f in files]


def _consumed(workdir: Path) -> Counter[tuple[int, int]]:
    rows, _ = _read_logs(workdir)
    return Counter((int(r[3]), int(r[4])) for r in rows if r[1] == "C" and len(r) == 6)


def analyse(workdir: Path, acked: set[tuple[int, int]], fig: Figures) -> None:
    rows, _ = _read_logs(workdir)
    seen: Counter[tuple[int, int]] = Counter()
    spans: dict[tuple[str, int, str], list[float]] = {}  # (run, partition, epoch) -> [first, last]
    for row in rows:
        run, kind = row[0], row[1]
        if kind == "C" and len(row) == 6:
            t, p, o, epoch = float(row[2]), int(row[3]), int(row[4]), row[5]
            seen[(p, o)] += 1
            span = spans.setdefault((run, p, epoch), [t, t])
            span[0], span[1] = min(span[0], t), max(span[1], t)
        elif kind == "K":
            fig.commits += 1
        elif kind == "E":
            fig.commit_errors += 1
    lost = sorted(acked - set(seen))
    fig.acked, fig.lost, fig.lost_examples = len(acked), len(lost), lost[:10]
    fig.consumed = sum(seen.values())
    fig.duplicates = sum(n - 1 for n in seen.values() if n > 1)
    by_partition: dict[int, list[tuple[float, float, str]]] = defaultdict(list)
    for (run, p, _epoch), (first, last) in spans.items():
        by_partition[p].append((first, last, run))
    for p, intervals in by_partition.items():
        for (a0, a1, ra), (b0, b1, rb) in itertools.combinations(intervals, 2):
            if ra == rb:
                continue
            overlap = min(a1, b1) - max(a0, b0)
            if overlap > fig.max_overlap_s:
                fig.max_overlap_s, fig.overlap_where = overlap, f"partition {p}: {ra} and {rb}"


def run(seconds: float, mode: str, members: int, seed: int, workdir: Path) -> Figures:
    rng = random.Random(seed)
    fig = Figures(mode, members)
    broker = MusterProcess(workdir / "data")
    broker.start()
    acked: set[tuple[int, int]] = set()
    stop = threading.Event()
    producer = threading.Thread(target=_produce, args=(broker.bootstrap, acked, stop))
    group = [Member(slot, broker.bootstrap, mode, workdir) for slot in range(members)]
    try:
        create_topic(broker.bootstrap, TOPIC, PARTITIONS)
        producer.start()
        for m in group:
            m.start()
        started = time.monotonic()
        down: dict[int, float] = {}  # slot -> when to start it again
        while time.monotonic() - started < seconds:
            time.sleep(rng.uniform(0.5, 3.0))
            now = time.monotonic()
            for slot, when in list(down.items()):
                if when <= now:
                    group[slot].start()
                    del down[slot]
            up = [m for m in group if m.proc is not None]
            if up and len(down) < members // 2:
                victim = rng.choice(up)
                if rng.random() < 0.5:
                    victim.kill()
                    fig.kills += 1
                else:
                    victim.stop()
                    fig.stops += 1
                down[victim.slot] = now + rng.uniform(0.0, 8.0)
        fig.seconds = time.monotonic() - started
        for slot in down:
            group[slot].start()
        stop.set()
        producer.join(120)
        deadline = time.monotonic() + 180  # every member up: the group drains the topic
        while time.monotonic() < deadline and not acked <= set(_consumed(workdir)):
            time.sleep(0.5)
    finally:
        stop.set()
        for m in group:  # all at once: each close() leaves the group
            m.signal_stop()
        for m in group:
            m.wait()
        broker.close()
    analyse(workdir, acked, fig)
    return fig


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--mode", choices=sorted(MODES), default="cooperative-static")
    parser.add_argument("--members", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--member", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    add_keep_option(parser)
    args = parser.parse_args(argv)
    if args.member is not None:
        member_main(args.bootstrap, args.member, args.mode, args.out)
        return 0
    workdir = campaign_workdir(args.keep, "muster-bounce-")
    fig = run(args.seconds, args.mode, args.members, args.seed, workdir)
    if fig.lost:
        print(f"lost, e.g. (partition, offset): {fig.lost_examples}")
    if fig.overlap_where:
        print(f"largest overlap: {fig.overlap_where}")
    print(fig.line())
    return 1 if fig.lost or fig.max_overlap_s > SESSION_MS / 1000 else 0


if __name__ == "__main__":
    sys.exit(main())
