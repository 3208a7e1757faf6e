"""Scale curves: how a broker's cost grows with members, groups, partitions and
connections; muster vs Tansu and kfake in the same run.

Every client here is the raw pipelined driver of ``bench/scale_client.py`` (one
asyncio process, Kafka frames from kio's schemas), so thousands of members or
connections cost the driver little. Broker CPU is read from /proc/PID/stat
(utime + stime, every thread), memory from /proc/PID/status (VmRSS).

Curves (``--curves members,groups,partitions,connections``; each a table with one row
per size, one column per broker, the muster/best-peer ratio and the growth exponent
of muster's figure between consecutive sizes: log(f2/f1) / log(n2/n1), so 0 is
constant, 1 linear, 2 quadratic):

* members: N members of one classic group (10/100/500/1,000), each on its own
  connection: time to form (all JoinGroup at once, then heartbeats until every
  member holds the same generation), time to rebalance when one more member
  joins (the others notice on their next heartbeat, sent at once here, so the
  heartbeat interval is not in the figure), broker CPU per heartbeat in the
  stable group (every member heartbeats, rounds until ~4,000 heartbeats);
* groups: G groups of 2 members (100/1,000/10,000), formed in waves of 250
  groups; then heartbeats at a fixed 1,000/s spread over every member (each
  member every G/500 s) for ``--hb-seconds`` on 8 shared connections: latency
  p50/p99 and broker RSS growth per group;
* partitions: one consumer of a P-partition topic (1,000/10,000), idle (no data):
  broker CPU and latency per Fetch v12 poll (max_wait 0) without a fetch
  session (every poll names every partition) and with one (KIP-227: after the
  first, an incremental poll names nothing);
* connections: 1,000 idle clients (connected, one ApiVersions each): broker RSS per
  connection, and a busy client's Metadata latency p50/p99 before and meanwhile.

    .venv/bin/python bench/scale.py                       # every curve, muster, Tansu, kfake
    .venv/bin/python bench/scale.py --quick               # smallest two sizes of each curve
    .venv/bin/python bench/scale.py --curves partitions --brokers muster,kfake
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import math
import os
import random
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
from rich.table import Table
from scale_client import (
    API_VERSIONS,
    FETCH,
    ILLEGAL_GENERATION,
    METADATA,
    REBALANCE_IN_PROGRESS,
    UNKNOWN_MEMBER_ID,
    Member,
    RawConn,
)

SIZES = {
    "members": (10, 100, 500, 1000),
    "groups": (100, 1000, 10_000),
    "partitions": (1000, 10_000),
    "connections": (1000,),
}
HOST = "127.0.0.1"
WAVE_GROUPS = 250
HB_RATE = 1000.0
MUSTER_SETTINGS = {"group.initial.rebalance.delay.ms": "0"}


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


async def gather_limited(calls: list[Callable[[], Awaitable[Any]]], limit: int = 500) -> list:
    sem = asyncio.Semaphore(limit)

    async def one(c: Callable[[], Awaitable[Any]]) -> Any:
        async with sem:
            return await c()

    return await asyncio.gather(*(one(c) for c in calls))


async def open_conns(port: int, n: int) -> list[RawConn]:
    return await gather_limited([lambda: RawConn.open(HOST, port) for _ in range(n)], 200)


async def stabilize(
    members: list[Member],
    partitions: int,
    pending: dict[Member, asyncio.Task[Any]] | None = None,
    deadline_s: float = 120.0,
) -> None:
    """Heartbeat every member not joining; whoever hears REBALANCE_IN_PROGRESS joins
    again (as a client does on its next heartbeat; UNKNOWN_MEMBER_ID: with a new id),
    until every member's join is done and its heartbeat accepted."""
    pending = dict(pending or {})
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        for m, t in list(pending.items()):
            if t.done():
                t.result()  # a join that failed fails the curve
                del pending[m]
        idle = [m for m in members if m not in pending]
        codes = await asyncio.gather(*(m.heartbeat() for m in idle))
        ok = 0
        for m, (_, code) in zip(idle, codes, strict=True):
            if code in (REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION):
                if code == UNKNOWN_MEMBER_ID:
                    m.member_id = ""
                pending[m] = asyncio.create_task(m.join(partitions))
            elif code == 0:
                ok += 1
            else:
                raise RuntimeError(f"heartbeat error {code} in {m.group}")
        if ok == len(members):
            for t in pending.values():
                await t  # raise what a finished join raised
            return
        await asyncio.sleep(0.01)
    raise TimeoutError(f"group(s) not stable after {deadline_s:.0f}s")


async def form(members: list[Member], partitions: int) -> float:
    t0 = time.perf_counter()
    joins = {m: asyncio.create_task(m.join(partitions)) for m in members}
    await stabilize(members, partitions, joins)
    return time.perf_counter() - t0


# ---------------------------------------------------------------- curves


async def curve_members(b: common.Broker, n: int) -> dict[str, float]:
    assert b.proc is not None
    topic = "scale-members"
    conns = await open_conns(b.port, n + 1)
    try:
        group = f"members-{n}"
        # session 10 s: Tansu holds a JoinGroup for half the session timeout
        members = [Member(c, group, topic, session_ms=10_000) for c in conns[:n]]
        formed = await form(members, 64)
        newcomer = Member(conns[n], group, topic, session_ms=10_000)
        t0 = time.perf_counter()
        joining = asyncio.create_task(newcomer.join(64))
        await asyncio.sleep(0)  # the JoinGroup is on the wire before the heartbeats
        await stabilize([*members, newcomer], 64, {newcomer: joining})
        rebalance = time.perf_counter() - t0
        everyone = [*members, newcomer]
        rounds = max(3, 4000 // len(everyone))
        cpu0 = common.cpu_seconds(b.proc.pid)
        lat: list[float] = []
        for _ in range(rounds):
            for secs, code in await asyncio.gather(*(m.heartbeat() for m in everyone)):
                if code != 0:
                    raise RuntimeError(f"heartbeat error {code}")
                lat.append(secs)
        per_hb = (common.cpu_seconds(b.proc.pid) - cpu0) / len(lat)
        return {
            "form_s": formed,
            "rebalance_s": rebalance,
            "cpu_us_per_hb": per_hb * 1e6,
            "hb_p50_ms": statistics.median(lat) * 1e3,
        }
    finally:
        await asyncio.gather(*(c.close() for c in conns))


async def curve_groups(b: common.Broker, g: int, hb_seconds: float) -> dict[str, float]:
    assert b.proc is not None
    topic = "scale-groups"
    rss0 = rss_mib(b.proc.pid)
    members: list[Member] = []
    t0 = time.perf_counter()
    for start in range(0, g, WAVE_GROUPS):
        count = min(WAVE_GROUPS, g - start)
        conns = await open_conns(b.port, 2 * count)
        wave = [
            Member(conns[2 * i + k], f"groups-{g}-{start + i}", topic, session_ms=300_000)
            for i in range(count)
            for k in (0, 1)
        ]
        await form(wave, 8)
        members += wave
        shared = await open_conns(b.port, 1)
        for m in wave:  # a member's heartbeats need not use the connection it joined on
            m.conn = shared[0]
        await asyncio.gather(*(c.close() for c in conns))
    formed = time.perf_counter() - t0
    rss = rss_mib(b.proc.pid)
    pool = await open_conns(b.port, 8)
    lat: list[float] = []
    random.shuffle(members)
    loop_t0 = time.perf_counter()
    tasks = []
    i = 0
    while (now := time.perf_counter() - loop_t0) < hb_seconds:
        due = int(now * HB_RATE)
        while i < due:
            m = members[i % len(members)]
            tasks.append(asyncio.create_task(m.heartbeat(pool[i % len(pool)])))
            i += 1
        await asyncio.sleep(0.002)
    for secs, code in await asyncio.gather(*tasks):
        if code != 0:
            raise RuntimeError(f"heartbeat error {code}")
        lat.append(secs)
    await asyncio.gather(*(c.close() for c in pool))
    shared = {id(m.conn): m.conn for m in members}
    await asyncio.gather(*(c.close() for c in shared.values()))
    return {
        "form_s": formed,
        "hb_p50_ms": statistics.median(lat) * 1e3,
        "hb_p99_ms": pct(lat, 0.99) * 1e3,
        "rss_mib": rss - rss0,
        "kib_per_group": (rss - rss0) * 1024 / g,
    }


def fetch_body(topic: str, parts: int, session_id: int, epoch: int, full: bool) -> dict:
    return {
        "replica_id": -1,
        "max_wait": 0,
        "min_bytes": 1,
        "max_bytes": 50 << 20,
        "isolation_level": 0,
        "session_id": session_id,
        "session_epoch": epoch,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {"partition": p, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
                    for p in range(parts)
                ],
            }
        ]
        if full
        else [],
        "forgotten_topics_data": [],
        "rack_id": "",
    }


async def curve_partitions(b: common.Broker, parts: int) -> dict[str, float]:
    assert b.proc is not None
    topic = f"scale-parts-{parts}"
    common.create_topic(b.bootstrap, topic, parts, timeout=300)
    (conn,) = await open_conns(b.port, 1)
    polls = max(20, 200_000 // parts)
    out: dict[str, float] = {}
    try:
        for mode in ("full", "session"):
            session_id, epoch = 0, (-1 if mode == "full" else 0)
            first = await conn.call(FETCH, 12, fetch_body(topic, parts, session_id, epoch, True))
            if int(first.error_code) != 0:
                raise RuntimeError(f"fetch error {first.error_code}")
            if mode == "session":
                session_id, epoch = int(first.session_id), 1
                if session_id == 0:
                    out["session_us_per_poll"] = float("nan")  # no sessions: say so
                    continue
            cpu0 = common.cpu_seconds(b.proc.pid)
            lat = []
            for _ in range(polls):
                body = fetch_body(topic, parts, session_id, epoch, mode == "full")
                secs, ans = await conn.timed(FETCH, 12, body)
                if int(ans.error_code) != 0:
                    raise RuntimeError(f"{mode} fetch error {ans.error_code}")
                lat.append(secs)
                if mode == "session":
                    epoch += 1
            out[f"{mode}_us_per_poll"] = (common.cpu_seconds(b.proc.pid) - cpu0) / polls * 1e6
            out[f"{mode}_p50_ms"] = statistics.median(lat) * 1e3
    finally:
        await conn.close()
    return out


async def metadata_latency(conn: RawConn, n: int) -> list[float]:
    lat = []
    for _ in range(n):
        secs, _ = await conn.timed(METADATA, 9, {"topics": [], "allow_auto_topic_creation": False})
        lat.append(secs)
    return lat


async def curve_connections(b: common.Broker, n: int) -> dict[str, float]:
    assert b.proc is not None
    (busy,) = await open_conns(b.port, 1)
    await metadata_latency(busy, 200)  # warm
    before = await metadata_latency(busy, 2000)
    rss0 = rss_mib(b.proc.pid)
    idle = await open_conns(b.port, n)
    await gather_limited(
        [lambda c=c: c.call(API_VERSIONS, 3, {"client_software_name": "scale",
                                               "client_software_version": "1"}) for c in idle]
    )  # fmt: skip
    await asyncio.sleep(0.5)
    rss1 = rss_mib(b.proc.pid)
    during = await metadata_latency(busy, 2000)
    await asyncio.gather(*(c.close() for c in [busy, *idle]))
    return {
        "kib_per_conn": (rss1 - rss0) * 1024 / n,
        "busy_p50_ms_before": statistics.median(before) * 1e3,
        "busy_p99_ms_before": pct(before, 0.99) * 1e3,
        "busy_p50_ms_during": statistics.median(during) * 1e3,
        "busy_p99_ms_during": pct(during, 0.99) * 1e3,
    }


# ---------------------------------------------------------------- driver

CURVE_FIGURES = {
    "members": [("form_s", "time to form (s)"), ("rebalance_s", "rebalance on +1 join (s)"),
                ("cpu_us_per_hb", "broker CPU per heartbeat (us)")],
    "groups": [("hb_p50_ms", "heartbeat p50 (ms)"), ("hb_p99_ms", "heartbeat p99 (ms)"),
               ("kib_per_group", "broker RSS per group (KiB)"), ("form_s", "time to form all (s)")],
    "partitions": [("full_us_per_poll", "CPU per idle poll, no session (us)"),
                   ("session_us_per_poll", "CPU per idle poll, fetch session (us)"),
                   ("full_p50_ms", "poll p50, no session (ms)"),
                   ("session_p50_ms", "poll p50, fetch session (ms)")],
    "connections": [("kib_per_conn", "broker RSS per idle connection (KiB)"),
                    ("busy_p50_ms_before", "busy client p50, alone (ms)"),
                    ("busy_p50_ms_during", "busy client p50, with idle ones (ms)"),
                    ("busy_p99_ms_during", "busy client p99, with idle ones (ms)")],
}  # fmt: skip


def run_curve(curve: str, name: str, size: int, hb_seconds: float) -> dict[str, float]:
    if curve == "groups" and name == "tansu":
        # groups need a long session (they are formed over minutes); Tansu holds every
        # JoinGroup for half the session timeout, so a wave would take minutes
        raise NotImplementedError("Tansu holds each JoinGroup for session.timeout/2")
    kw: dict[str, Any] = {"settings": MUSTER_SETTINGS} if name == "muster" else {}
    with common.running(name, **kw) as b:
        if curve == "members":
            common.create_topic(b.bootstrap, "scale-members", 64)
            coro = curve_members(b, size)
        elif curve == "groups":
            common.create_topic(b.bootstrap, "scale-groups", 8)
            coro = curve_groups(b, size, hb_seconds)
        elif curve == "partitions":
            coro = curve_partitions(b, size)
        else:
            coro = curve_connections(b, size)
        return asyncio.run(asyncio.wait_for(coro, 900))


def growth(sizes: list[int], values: list[float | None]) -> list[str]:
    out = [""]
    points = list(zip(sizes, values, strict=True))
    for (n1, f1), (n2, f2) in itertools.pairwise(points):
        if not f1 or not f2 or f1 <= 0 or f2 <= 0 or math.isnan(f1) or math.isnan(f2):
            out.append("-")
        else:
            out.append(f"{math.log(f2 / f1) / math.log(n2 / n1):+.2f}")
    return out


def print_curve(curve: str, sizes: list[int], brokers: list[str], res: dict) -> None:
    peers = [b for b in brokers if b != "muster"]
    for key, title in CURVE_FIGURES[curve]:
        table = Table(title=f"{curve}: {title}", title_justify="left")
        table.add_column("size", justify="right")
        for b in brokers:
            table.add_column(b, justify="right")
        if "muster" in brokers and peers:
            table.add_column("muster/best peer", justify="right")
        if "muster" in brokers:
            table.add_column("muster growth", justify="right")
        vals = [res.get("muster", {}).get(str(s), {}).get(key) for s in sizes]
        grow = growth(sizes, vals)
        for i, s in enumerate(sizes):
            cells = [f"{s:,}"]
            figs = {b: res.get(b, {}).get(str(s), {}).get(key) for b in brokers}
            for b in brokers:
                v = figs[b]
                cells.append("-" if v is None or math.isnan(v) else f"{v:,.2f}")
            if "muster" in brokers and peers:
                pv = [figs[p] for p in peers if figs[p] is not None and not math.isnan(figs[p])]
                r = common.ratio(figs["muster"], min(pv)) if pv else None
                cells.append(common.fmt_ratio(r, higher_is_better=False))
            if "muster" in brokers:
                cells.append(grow[i])
            table.add_row(*cells)
        common.console.print(table)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--curves", default="members,groups,partitions,connections")
    ap.add_argument("--brokers", default="muster,tansu,kfake")
    ap.add_argument("--quick", action="store_true", help="the two smallest sizes of each curve")
    ap.add_argument("--sizes", help="override, e.g. members=10,100;groups=100")
    ap.add_argument("--hb-seconds", type=float, default=10.0, help="groups: heartbeat phase")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args(argv)
    common.install_signal_handlers()
    sizes = {k: list(v[:2] if args.quick else v) for k, v in SIZES.items()}
    for spec in filter(None, (args.sizes or "").split(";")):
        k, v = spec.split("=")
        sizes[k] = [int(x) for x in v.split(",")]
    brokers = args.brokers.split(",")
    results: dict[str, dict[str, dict[str, dict]]] = {}
    failures: list[str] = []
    common.console.print(f"load average at start: {os.getloadavg()}")
    try:
        for curve in args.curves.split(","):
            res = results.setdefault(curve, {})
            for size in sizes[curve]:
                for name in brokers:
                    try:
                        figs = run_curve(curve, name, size, args.hb_seconds)
                    except Exception as e:  # a peer that cannot do it: a dash, reason below
                        failures.append(f"{curve} {size} {name}: {type(e).__name__}: {e}"[:300])
                        common.console.print(f"[yellow]{failures[-1]}[/yellow]")
                        continue
                    res.setdefault(name, {})[str(size)] = figs
                    common.console.print(
                        f"[dim]{curve} {size:,} {name}: "
                        + ", ".join(f"{k}={v:.3g}" for k, v in figs.items())
                        + "[/dim]"
                    )
            print_curve(curve, sizes[curve], brokers, res)
    finally:
        common.stop_all()
    common.console.print(f"load average at end: {os.getloadavg()}")
    for f in failures:
        common.console.print(f"[yellow]not measured:[/yellow] {f}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(
            json.dumps({"sizes": sizes, "results": results, "failures": failures}, indent=2)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
