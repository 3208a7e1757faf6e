"""The cost of one small request: muster against Tansu and kfake, in the same run.

Four brokers are started fresh in every run (order rotated between runs):
muster with ``muster.fsync=never`` (Kafka's own durability: written before the
answer, survives a process crash), muster with its default ``muster.fsync=always``,
Tansu 0.6 (in memory) and kfake (franz-go's fake cluster, in memory, from
``../shared/peers/``). Against each one:

1. **sync-commit loop**, one confluent-kafka consumer (``commit(...,
   asynchronous=False)`` with a new offset each time, bench/groups.py's
   committer) for ``--seconds``; the broker's CPU time over the loop divided by
   the commits is shown too;
2. the same with one kafka-python consumer;
3. **per-request broker CPU**: a raw client (muster's codec over one socket, one
   request in flight) sends one request type for ``--raw-seconds`` and the broker
   process's CPU time (the sum of its threads' ``/proc/PID/task/*/schedstat`` run
   time, nanoseconds) before and after is divided by the requests answered:
   OffsetCommit (1 partition), Heartbeat, JoinGroup+SyncGroup (one pair: the only
   member rejoins its group and syncs), Metadata (one topic), Fetch that returns
   nothing (max_wait_ms=0, at the log end), Produce (one 100 B record, one
   partition, acks=1). Wall-clock rate is shown as well;
4. **produce requests/s**: one confluent-kafka producer (``acks=1``,
   ``linger.ms=0``) sends a 100 B record to one partition and ``flush()``es,
   in a loop for ``--seconds``: one small Produce request per record, each
   answered before the next; the broker's CPU per request is shown too.

It also prints the disk's fsync latency (``os.write`` of 100 B + ``os.fsync``,
median of 200, on the directory muster's data goes to) next to the fsync=always
commit figures: a synchronous commit cannot be answered before one fsync.

    .venv/bin/python bench/request_path.py                       # 3 runs, 5 s loops
    .venv/bin/python bench/request_path.py --runs 5 --seconds 5 --json bench/results/rp.json
    .venv/bin/python bench/request_path.py --runs 1 --seconds 2 --raw-seconds 1   # smoke
    .venv/bin/python bench/request_path.py --brokers muster-never,tansu \
        --muster-set muster.event.loop=uvloop
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import struct
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import common
from groups import confluent_committer, kafka_python_committer, run_in_thread
from rich.table import Table

from muster.records.batch import build_batch
from reliability.campaign_support import RawClient

BROKERS = ("muster-never", "muster-always", "tansu", "kfake")
PEERS = ("tansu", "kfake")

# The version each raw request is sent at: the broker's highest up to these.
PREFERRED = {8: 8, 12: 4, 11: 7, 14: 5, 3: 9, 1: 11, 10: 3, 18: 2, 0: 9}
RAW_KINDS = (
    "OffsetCommit",
    "Heartbeat",
    "JoinGroup+SyncGroup",
    "Metadata",
    "Fetch (empty)",
    "Produce (100 B)",
)


# ---------------------------------------------------------------------------
# brokers


def start(name: str, extra: dict[str, str]) -> common.Broker:
    if name == "kfake":
        return common.start_kfake()
    if name == "tansu":
        return common.start_tansu()
    fsync = name.removeprefix("muster-")
    b = common.start_muster({**extra, "muster.fsync": fsync})
    b.name = name
    return b


def cpu_ns(pid: int) -> int:
    """Run time of every live thread of `pid`, in nanoseconds."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # the thread ended meanwhile
    return total


# ---------------------------------------------------------------------------
# the raw client's requests


def _string(s: str) -> bytes:
    raw = s.encode()
    return struct.pack(">h", len(raw)) + raw


def subscription(topic: str) -> bytes:
    """ConsumerProtocolSubscription v0: one topic, no user data."""
    return struct.pack(">hi", 0, 1) + _string(topic) + struct.pack(">i", -1)


def assignment(topic: str) -> bytes:
    """ConsumerProtocolAssignment v0: partition 0 of one topic."""
    return struct.pack(">hi", 0, 1) + _string(topic) + struct.pack(">iii", 1, 0, -1)


class Raw(RawClient):
    def __init__(self, port: int) -> None:
        super().__init__(port, timeout=30.0)
        answer = self.call(18, 0, {})
        self.max = {int(k.api_key): int(k.max_version) for k in answer.api_keys}

    def v(self, key: int) -> int:
        return min(PREFERRED[key], self.max[key])

    def find_coordinator(self, group: str) -> None:
        """Until the broker names itself coordinator of `group` (loading is retried)."""
        deadline = time.monotonic() + 30
        while True:
            a = self.call(10, self.v(10), {"key": group, "key_type": 0})
            if int(a.error_code) == 0:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"FindCoordinator({group}): error {int(a.error_code)}")
            time.sleep(0.1)


class Group:
    """One member of one classic group, driven by a raw client."""

    def __init__(self, raw: Raw, topic: str) -> None:
        self.raw = raw
        self.topic = topic
        self.group = f"rp-{uuid.uuid4().hex[:10]}"
        self.member = ""
        self.generation = -1
        raw.find_coordinator(self.group)

    def join(self) -> None:
        v = self.raw.v(11)
        body = {
            "group_id": self.group,
            "session_timeout": 30_000,
            "rebalance_timeout": 30_000,
            "member_id": self.member,
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": subscription(self.topic)}],
            "reason": "bench",
        }
        for _ in range(3):  # v4+: the first join of a new member asks for a member id
            a = self.raw.call(11, v, body)
            if int(a.error_code) == 79:  # MEMBER_ID_REQUIRED
                body["member_id"] = self.member = a.member_id
                continue
            if int(a.error_code):
                raise RuntimeError(f"JoinGroup: error {int(a.error_code)}")
            self.member, self.generation = a.member_id, int(a.generation_id)
            return
        raise RuntimeError("JoinGroup: no member id")

    def sync(self) -> None:
        a = self.raw.call(
            14,
            self.raw.v(14),
            {
                "group_id": self.group,
                "generation_id": self.generation,
                "member_id": self.member,
                "protocol_type": "consumer",
                "protocol_name": "range",
                "assignments": [{"member_id": self.member, "assignment": assignment(self.topic)}],
            },
        )
        if int(a.error_code):
            raise RuntimeError(f"SyncGroup: error {int(a.error_code)}")

    def heartbeat(self) -> None:
        a = self.raw.call(
            12,
            self.raw.v(12),
            {"group_id": self.group, "generation_id": self.generation, "member_id": self.member},
        )
        if int(a.error_code):
            raise RuntimeError(f"Heartbeat: error {int(a.error_code)}")


def raw_steps(raw: Raw, topic: str) -> dict[str, Callable[[], None]]:
    """One zero-argument step per request kind, each checked for errors."""
    commit_group = Group(raw, topic)
    member = Group(raw, topic)
    member.join()
    member.sync()
    offset = [0]

    def commit() -> None:
        offset[0] += 1
        a = raw.call(
            8,
            raw.v(8),
            {
                "group_id": commit_group.group,
                "generation_id_or_member_epoch": -1,
                "member_id": "",
                "topics": [
                    {
                        "name": topic,
                        "partitions": [{"partition_index": 0, "committed_offset": offset[0]}],
                    }
                ],
            },
        )
        if int(a.topics[0].partitions[0].error_code):
            raise RuntimeError(f"OffsetCommit: error {int(a.topics[0].partitions[0].error_code)}")

    def rejoin() -> None:
        member.join()
        member.sync()

    def metadata() -> None:
        a = raw.call(3, raw.v(3), {"topics": [{"name": topic}], "allow_auto_topic_creation": False})
        if int(a.topics[0].error_code):
            raise RuntimeError(f"Metadata: error {int(a.topics[0].error_code)}")

    fetch_body = {
        "replica_id": -1,
        "max_wait": 0,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {
                        "partition": 0,
                        "current_leader_epoch": -1,
                        "fetch_offset": 0,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1 << 20,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }

    def fetch() -> None:
        a = raw.call(1, raw.v(1), fetch_body)
        if int(a.error_code):
            raise RuntimeError(f"Fetch: error {int(a.error_code)}")
        for t in a.responses:  # Tansu leaves out a partition with nothing to say
            for p in t.partitions:
                if int(p.error_code) or p.records:
                    raise RuntimeError(f"Fetch: error {int(p.error_code)}, {p.records!r:.40}")

    def produce() -> None:
        # a fresh batch each time, as a producer's differ (timestamps, values)
        offset[0] += 1
        batch = build_batch(
            [(None, offset[0].to_bytes(8, "big") * 12 + b"rpxx")],
            timestamp_ms=int(time.time() * 1000),
        )
        a = raw.call(
            0,
            raw.v(0),
            {
                "transactional_id": None,
                "acks": 1,
                "timeout": 30_000,
                "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
            },
        )
        p = a.responses[0].partition_responses[0]
        if int(p.error_code):
            raise RuntimeError(f"Produce: error {int(p.error_code)}")

    return {
        "OffsetCommit": commit,
        "Heartbeat": member.heartbeat,
        "JoinGroup+SyncGroup": rejoin,
        "Metadata": metadata,
        "Fetch (empty)": fetch,
        "Produce (100 B)": produce,
    }


def produce_loop(bootstrap: str, topic: str, seconds: float) -> tuple[int, float]:
    """confluent-kafka: produce one 100 B record and flush, in a loop; (requests, s)."""
    from confluent_kafka import Producer

    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": 1,
            "linger.ms": 0,
            "enable.idempotence": False,
            "logger": common.RDK_LOGGER,
        }
    )
    value = b"x" * 100
    p.produce(topic, value, partition=0)
    p.flush(10)  # warm up: metadata, the connection
    n = 0
    t0 = time.monotonic()
    end = t0 + seconds
    while True:
        p.produce(topic, value, partition=0)
        if p.flush(10):
            raise RuntimeError("a produce was not acknowledged within 10 s")
        n += 1
        now = time.monotonic()
        if now >= end:
            return n, now - t0


def per_request_cpu(b: common.Broker, topic: str, seconds: float) -> dict[str, tuple[float, float]]:
    """kind -> (broker CPU µs per request, requests/s wall)."""
    assert b.proc is not None
    raw = Raw(b.port)
    out: dict[str, tuple[float, float]] = {}
    try:
        steps = raw_steps(raw, topic)
        for kind, step in steps.items():
            warm = time.monotonic() + 0.5
            for _ in range(20):  # warm up (first-use caches, coordinator loading)
                step()
                if time.monotonic() > warm:
                    break
            n = 0
            c0 = cpu_ns(b.proc.pid)
            t0 = time.monotonic()
            end = t0 + seconds
            while True:
                step()
                n += 1
                now = time.monotonic()
                if now >= end or (kind.startswith("Join") and now - t0 > 1 and n < 20):
                    break
            c1 = cpu_ns(b.proc.pid)
            out[kind] = ((c1 - c0) / n / 1000, n / (now - t0))
    finally:
        raw.close()
    return out


# ---------------------------------------------------------------------------
# the disk


def fsync_latency_us(directory: Path, n: int = 200) -> float:
    """Median µs of one 100-byte append + fsync in `directory`."""
    path = directory / f"fsync-probe-{uuid.uuid4().hex[:8]}"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    times = []
    try:
        for _ in range(n):
            t0 = time.perf_counter()
            os.write(fd, b"x" * 100)
            os.fsync(fd)
            times.append(time.perf_counter() - t0)
    finally:
        os.close(fd)
        path.unlink()
    return statistics.median(times) * 1e6


# ---------------------------------------------------------------------------
# one run, the table


Values = dict[str, dict[str, list[float]]]  # broker -> figure -> one value per run


def one_broker(name: str, args: argparse.Namespace, extra: dict[str, str], values: Values) -> None:
    b = start(name, extra)
    put = values.setdefault(name, {})
    try:
        topic = f"rp-{uuid.uuid4().hex[:8]}"
        common.create_topic(b.bootstrap, topic, 1)
        assert b.proc is not None
        pid = b.proc.pid

        def loop(fn: Callable[[], tuple[int, float]]) -> tuple[float, float]:
            """(per second, broker µs CPU per request) of one client loop."""
            c0 = cpu_ns(pid)
            n, elapsed = run_in_thread(fn, args.seconds + 60)
            return n / elapsed, (cpu_ns(pid) - c0) / n / 1000

        ck, cpu = loop(lambda: confluent_committer(b.bootstrap, topic, args.seconds))
        put.setdefault("ck", []).append(ck)
        put.setdefault("ck-cpu", []).append(cpu)
        kp, _ = loop(lambda: kafka_python_committer(b.bootstrap, topic, args.seconds))
        put.setdefault("kp", []).append(kp)
        # a topic of its own: the raw empty Fetch reads the commit topic's end at 0
        produced = f"{topic}-p"
        common.create_topic(b.bootstrap, produced, 1)
        rate, pcpu = loop(lambda: produce_loop(b.bootstrap, produced, args.seconds))
        put.setdefault("produce", []).append(rate)
        put.setdefault("produce-cpu", []).append(pcpu)
        line = (
            f"  {name:<14} ck {ck:>7,.0f}/s ({cpu:,.0f} µs CPU)  kp {kp:>7,.0f}/s"
            f"  produce {rate:>7,.0f}/s ({pcpu:,.0f} µs CPU)"
        )
        if not args.no_raw:
            for kind, (us, rate) in per_request_cpu(b, topic, args.raw_seconds).items():
                put.setdefault(f"cpu:{kind}", []).append(us)
                put.setdefault(f"rate:{kind}", []).append(rate)
                line += f" | {kind} {us:,.0f} µs"
        common.console.print(f"[dim]{line}[/dim]")
    finally:
        b.stop()


def med(values: Values, broker: str, key: str) -> float | None:
    return common.median(values.get(broker, {}).get(key, []))


def print_tables(values: Values, brokers: list[str], fsync_us: float) -> None:
    peers = [p for p in PEERS if p in brokers]
    musters = [b for b in brokers if b.startswith("muster")]
    t = Table(
        title="sync OffsetCommit and produce loops, one client (medians, per second)",
        title_justify="left",
    )
    t.add_column("figure", style="bold")
    for b in brokers:
        t.add_column(b, justify="right")
    for m in musters:
        for p in peers:
            t.add_column(f"{m.removeprefix('muster-')}/{p}", justify="right")
    for key, label in (
        ("ck", "confluent-kafka"),
        ("kp", "kafka-python"),
        ("ck-cpu", "broker CPU µs per commit (confluent loop)"),
        ("produce", "produce requests/s (confluent-kafka, acks=1, 100 B)"),
        ("produce-cpu", "broker CPU µs per produce request"),
    ):
        cells = [label] + [common.fmt_num(med(values, b, key)) for b in brokers]
        for m in musters:
            for p in peers:
                r = common.ratio(med(values, m, key), med(values, p, key))
                cells.append(common.fmt_ratio(r, higher_is_better=not key.endswith("cpu")))
        t.add_row(*cells)
    common.console.print(t)
    bound = 1e6 / fsync_us if fsync_us else 0
    common.console.print(
        f"disk fsync latency (100 B append + fsync, median of 200): {fsync_us:,.0f} µs "
        f"-> at most {bound:,.0f} commits/s for muster-always even with a free round trip"
    )
    if not any(values.get(b, {}).get("cpu:OffsetCommit") for b in brokers):
        return
    t = Table(
        title="broker CPU per request (µs, medians; raw client, one in flight)",
        title_justify="left",
    )
    t.add_column("request", style="bold")
    for b in brokers:
        t.add_column(f"{b}\nµs CPU", justify="right")
        t.add_column(f"{b}\nreq/s", justify="right")
    for m in musters[:1]:
        for p in peers:
            t.add_column(f"{m.removeprefix('muster-')}/{p}\n(CPU)", justify="right")
    for kind in RAW_KINDS:
        cells = [kind]
        for b in brokers:
            cells.append(common.fmt_num(med(values, b, f"cpu:{kind}")))
            cells.append(common.fmt_num(med(values, b, f"rate:{kind}")))
        for m in musters[:1]:
            for p in peers:
                r = common.ratio(med(values, m, f"cpu:{kind}"), med(values, p, f"cpu:{kind}"))
                cells.append(common.fmt_ratio(r, higher_is_better=False))
        t.add_row(*cells)
    common.console.print(t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5.0, help="length of each commit loop")
    ap.add_argument("--raw-seconds", type=float, default=1.5, help="per raw request kind")
    ap.add_argument("--brokers", default=",".join(BROKERS))
    ap.add_argument("--no-raw", action="store_true", help="commit loops only")
    ap.add_argument("--muster-set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    common.install_signal_handlers()
    brokers = [b for b in args.brokers.split(",") if b]
    for b in brokers:
        if b not in BROKERS:
            ap.error(f"unknown broker {b!r} (known: {', '.join(BROKERS)})")
    extra = dict(kv.split("=", 1) for kv in args.muster_set)
    probe = common.temp_data_dir("muster-fsync-probe-")
    fsync_us = fsync_latency_us(probe)
    probe.rmdir()
    common.console.print(
        f"{platform.node()} load average {os.getloadavg()[0]:.2f}; "
        f"fsync {fsync_us:,.0f} µs; muster extra settings {extra or 'none'}"
    )
    values: Values = {}
    for run in range(args.runs):
        order = brokers[run % len(brokers) :] + brokers[: run % len(brokers)]
        common.console.print(f"[dim]run {run + 1}/{args.runs}: {', '.join(order)}[/dim]")
        for name in order:
            one_broker(name, args, extra, values)
    common.console.print(f"load average at the end {os.getloadavg()[0]:.2f}")
    print_tables(values, brokers, fsync_us)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        out: dict[str, Any] = {"runs": values, "fsync_us": fsync_us, "extra": extra}
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
