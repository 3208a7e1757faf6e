"""The floor of a Python broker's request path: a canned-answer server against
muster, Tansu and kfake, the same sync-commit loops, in the same run.

``floor_server.py`` answers every OffsetCommit from a cache (no coordinator, no
record, no disk): what is left is Python reading a frame and writing an answer
on an event loop. Brokers, each started fresh in every run (order rotated):

* ``floor-asyncio`` / ``floor-uvloop``: the canned server, an
  ``asyncio.Protocol`` parsing frames out of one buffer, on each loop;
* ``floor-streams``: the same answers read through asyncio's StreamReader
  (``readexactly`` twice per request, as muster reads), asyncio's loop;
* ``muster-never`` (``muster.fsync=never``), ``muster-uvloop`` (the same on
  ``muster.event.loop=uvloop``), ``muster-spin`` (``fsync=never`` with busy
  polling, ``muster.poll.spin.us``: ``--spin-us``, 500 by default),
  ``tansu``, ``kfake``.

``--pin`` puts every broker thread on CPU 0 and the clients (this process's
threads) on CPU 1, the same for every broker: the scheduler no longer moves
the broker between the cores of the client's wake-ups, so its caches stay warm.

Against each: request_path.py's sync-commit loops (one confluent-kafka
consumer, one kafka-python consumer; commits/s, the last offset read back) and
the broker's CPU µs per commit over the confluent-kafka loop.

    .venv/bin/python bench/request_floor.py                         # 3 runs, 5 s loops
    .venv/bin/python bench/request_floor.py --runs 1 --seconds 2    # smoke
    .venv/bin/python bench/request_floor.py --brokers floor-uvloop,muster-never,kfake
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import common
from groups import confluent_committer, kafka_python_committer, run_in_thread
from request_path import cpu_ns
from rich.table import Table
from saturate import pin

FLOORS = ("floor-asyncio", "floor-uvloop", "floor-streams")
BROKERS = (*FLOORS, "muster-never", "muster-uvloop", "muster-spin", "tansu", "kfake")
DEFAULT = ("floor-asyncio", "floor-uvloop", "floor-streams", "muster-never", "tansu", "kfake")
PEERS = ("tansu", "kfake")
HERE = Path(__file__).resolve().parent
BROKER_CPU, CLIENT_CPU = 0, 1
PIN = [False]  # --pin
SPIN_US = [500]  # muster-spin's muster.poll.spin.us (--spin-us)

Values = dict[str, dict[str, list[float]]]


def start(name: str) -> common.Broker:
    if name == "kfake":
        return common.start_kfake()
    if name == "tansu":
        return common.start_tansu()
    if name.startswith("muster-"):
        extra = {"muster.fsync": "never"}
        if name == "muster-uvloop":
            extra["muster.event.loop"] = "uvloop"
        if name == "muster-spin":
            extra["muster.poll.spin.us"] = str(SPIN_US[0])
        b = common.start_muster(extra)
        b.name = name
        return b
    port = common.free_port()
    framing = "streams" if name == "floor-streams" else "protocol"
    loop = "uvloop" if name == "floor-uvloop" else "asyncio"
    argv = [sys.executable, str(HERE / "floor_server.py"), "--port", str(port)]
    argv += ["--loop", loop, "--framing", framing]
    b = common.Broker(
        name=name,
        argv=argv,
        host="127.0.0.1",
        port=port,
        log_path=common.RESULTS_DIR / "logs" / f"{name}-{port}.log",
    )
    return b.start()


def one_broker(name: str, seconds: float, values: Values) -> None:
    b = start(name)
    if PIN[0]:
        assert b.proc is not None
        pin(b.proc.pid, BROKER_CPU)
    put = values.setdefault(name, {})
    try:
        topic = f"rf-{uuid.uuid4().hex[:8]}"
        common.create_topic(b.bootstrap, topic, 1)
        assert b.proc is not None
        c0 = cpu_ns(b.proc.pid)
        n, el = run_in_thread(
            lambda: confluent_committer(b.bootstrap, topic, seconds), seconds + 60
        )
        cpu = (cpu_ns(b.proc.pid) - c0) / n / 1000
        c1 = cpu_ns(b.proc.pid)
        n2, el2 = run_in_thread(
            lambda: kafka_python_committer(b.bootstrap, topic, seconds), seconds + 60
        )
        cpu2 = (cpu_ns(b.proc.pid) - c1) / n2 / 1000
        for key, v in (("ck", n / el), ("ck-cpu", cpu), ("kp", n2 / el2), ("kp-cpu", cpu2)):
            put.setdefault(key, []).append(v)
        common.console.print(
            f"[dim]  {name:<14} ck {n / el:>7,.0f}/s ({cpu:,.0f} µs CPU)"
            f"  kp {n2 / el2:>7,.0f}/s ({cpu2:,.0f} µs CPU)[/dim]"
        )
    finally:
        b.stop()


def med(values: Values, broker: str, key: str) -> float | None:
    return common.median(values.get(broker, {}).get(key, []))


def print_table(values: Values, brokers: list[str]) -> None:
    peers = [p for p in PEERS if p in brokers]
    t = Table(title="sync OffsetCommit loop, one client (medians)", title_justify="left")
    t.add_column("broker", style="bold")
    for label in ("confluent-kafka/s", "µs CPU/commit", "kafka-python/s", "µs CPU/commit"):
        t.add_column(label, justify="right")
    for p in peers:
        t.add_column(f"ck /{p}", justify="right")
        t.add_column(f"kp /{p}", justify="right")
    for b in brokers:
        cells = [b] + [common.fmt_num(med(values, b, k)) for k in ("ck", "ck-cpu", "kp", "kp-cpu")]
        for p in peers:
            for k in ("ck", "kp"):
                r = common.ratio(med(values, b, k), med(values, p, k))
                cells.append(common.fmt_ratio(r))
        t.add_row(*cells)
    common.console.print(t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5.0, help="length of each commit loop")
    ap.add_argument("--brokers", default=",".join(DEFAULT))
    ap.add_argument("--json", type=Path)
    ap.add_argument(
        "--pin",
        action="store_true",
        help="every broker thread on CPU 0, the clients (this process) on CPU 1",
    )
    ap.add_argument(
        "--spin-us", type=int, default=500, help="muster-spin's muster.poll.spin.us (busy polling)"
    )
    args = ap.parse_args()
    SPIN_US[0] = args.spin_us
    PIN[0] = args.pin
    if args.pin:
        os.sched_setaffinity(0, {CLIENT_CPU})  # the client threads made later inherit it
    common.install_signal_handlers()
    brokers = [b for b in args.brokers.split(",") if b]
    for b in brokers:
        if b not in BROKERS:
            ap.error(f"unknown broker {b!r} (known: {', '.join(BROKERS)})")
    common.console.print(f"{platform.node()} load average {os.getloadavg()[0]:.2f}")
    values: Values = {}
    for run in range(args.runs):
        order = brokers[run % len(brokers) :] + brokers[: run % len(brokers)]
        common.console.print(f"[dim]run {run + 1}/{args.runs}: {', '.join(order)}[/dim]")
        for name in order:
            one_broker(name, args.seconds, values)
    common.console.print(f"load average at the end {os.getloadavg()[0]:.2f}")
    print_table(values, brokers)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        out: dict[str, Any] = {"runs": values}
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
