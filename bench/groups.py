"""Consumer-group benchmarks, muster vs the peer broker Tansu, in one run.

For each run and each broker (fresh broker processes per run; the order of the
brokers alternates between runs), with confluent-kafka consumers
(session.timeout.ms=10000, heartbeat.interval.ms=1000, the default eager
"range,roundrobin" assignment), each consumer created, subscribed, polled and
closed on its own thread (assignments are observed through on_assign/on_revoke
callbacks, never by calling assignment() from another thread), on a 20-partition
topic created up front:

1. group formation for 1, 5 and 20 consumers: from the first subscribe() (all
   consumers are created first and released together) until every member has an
   assignment and their union covers the 20 partitions exactly once. muster is
   measured twice, with ``group.initial.rebalance.delay.ms=0`` and with its
   default (3000 ms), each on its own broker process; Tansu has no such setting
   and runs as is (the same Tansu figures are compared with both muster rows).
2. rebalance on join: a 6th member subscribes to a stable group of 5; time until
   all 6 have a new assignment (received after the join) covering all partitions
   exactly once. Rebalance on leave: one of the 6 close()s (LeaveGroup); time from
   close() until the 5 survivors hold a new exact cover.
3. session-expiry takeover: a 5th member runs in a child process and is killed
   with SIGKILL (no LeaveGroup); time from the kill until the 4 survivors hold a
   new exact cover. Target <= session timeout + 1.5 s.
4. sync-commit rate of one client: a confluent-kafka consumer (assign mode,
   group.id set, ``commit(offsets=[...], asynchronous=False)`` with a new offset
   each time) and a kafka-python KafkaConsumer (``commit({tp:
   OffsetAndMetadata(...)})``), each for N seconds.
5. 20 concurrent committers: 20 threads, each with its own confluent-kafka
   consumer in its own group, committing synchronously for N seconds; total
   commits/s.

Everything except the delay-0 formation rows runs against muster with its
defaults (``muster.fsync=always``: every commit is fsynced before it is
answered). Tansu runs with in-memory storage and never fsyncs.

    .venv/bin/python bench/groups.py                      # full run, both brokers
    .venv/bin/python bench/groups.py --quick --runs 1
    .venv/bin/python bench/groups.py --only muster --json bench/results/groups.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import queue
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
from common import create_topic
from confluent_kafka import Consumer, TopicPartition
from rich.markup import escape
from rich.table import Table

BROKERS = ("muster", "tansu")
PARTITIONS = 20
SESSION_MS = 10_000
HEARTBEAT_MS = 1_000
FORMATION_SIZES = (1, 5, 20)
FORMATION_TIMEOUT_S = 30.0
REBALANCE_TIMEOUT_S = 30.0
EXPIRY_TIMEOUT_S = SESSION_MS / 1000 + 15.0
CLOSE_TIMEOUT_S = 15.0
COMMITTERS = 20
SCENARIOS = ("formation", "rebalance", "expiry", "commits", "commit-20")


RDK_LOGGER = common.RDK_LOGGER


def group_conf(bootstrap: str, group: str) -> dict:
    return {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "session.timeout.ms": SESSION_MS,
        "heartbeat.interval.ms": HEARTBEAT_MS,
        "enable.auto.commit": False,
        "auto.offset.reset": "latest",
        "logger": RDK_LOGGER,
    }


class ScenarioFailed(RuntimeError):
    pass


# ---------------------------------------------------------------------------
# topic


# ---------------------------------------------------------------------------
# group members: one thread per confluent-kafka consumer


class Member:
    """A confluent-kafka consumer living entirely on its own thread.

    The thread creates the consumer, waits for ``go``, subscribes, polls until
    ``leave()``, then close()s it. Assignments are recorded by the rebalance
    callbacks (which run inside poll() on that same thread) together with the
    time.monotonic() at which they were received.
    """

    def __init__(self, name: str, bootstrap: str, topic: str, group: str) -> None:
        self.name = name
        self.conf = group_conf(bootstrap, group)
        self.conf["client.id"] = name
        self.topic = topic
        self.lock = threading.Lock()
        self.assigned: frozenset[int] | None = None
        self.assign_t: float | None = None
        self.subscribed_t: float | None = None
        self.close_t: float | None = None
        self.closed = threading.Event()
        self.created = threading.Event()
        self.go = threading.Event()
        self._stop = threading.Event()
        self.error: str | None = None
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)

    # callbacks (run in poll(), on this member's thread)
    def _on_assign(self, _c: Consumer, parts: list[TopicPartition]) -> None:
        t = time.monotonic()
        with self.lock:
            self.assigned = frozenset(p.partition for p in parts)
            self.assign_t = t

    def _on_revoke(self, _c: Consumer, _parts: list[TopicPartition]) -> None:
        with self.lock:
            self.assigned = None
            self.assign_t = None

    def _run(self) -> None:
        try:
            c = Consumer(self.conf)
        except Exception as e:  # pragma: no cover - configuration errors
            self.error = f"{type(e).__name__}: {e}"
            self.created.set()
            self.closed.set()
            return
        self.created.set()
        try:
            self.go.wait()
            if not self._stop.is_set():
                self.subscribed_t = time.monotonic()
                c.subscribe(
                    [self.topic],
                    on_assign=self._on_assign,
                    on_revoke=self._on_revoke,
                    on_lost=self._on_revoke,
                )
                while not self._stop.is_set():
                    c.poll(0.05)
        except Exception as e:
            self.error = f"{type(e).__name__}: {e}"
        finally:
            self.close_t = time.monotonic()
            try:
                c.close()
            except Exception as e:
                self.error = self.error or f"close: {type(e).__name__}: {e}"
            self.closed.set()

    def start(self) -> Member:
        self.thread.start()
        return self

    def leave(self) -> None:
        self._stop.set()
        self.go.set()

    def snapshot(self) -> tuple[frozenset[int] | None, float | None]:
        with self.lock:
            return self.assigned, self.assign_t


def start_members(
    n: int, bootstrap: str, topic: str, group: str, prefix: str = "m"
) -> list[Member]:
    members = [Member(f"{prefix}{i}", bootstrap, topic, group).start() for i in range(n)]
    for m in members:
        if not m.created.wait(30):
            raise ScenarioFailed(f"consumer {m.name} not created after 30 s")
    return members


def close_members(members: Sequence[Member], timeout: float = CLOSE_TIMEOUT_S) -> list[str]:
    """close() all of them in parallel (each on its own thread); names that hung."""
    for m in members:
        m.leave()
    deadline = time.monotonic() + timeout
    hung = []
    for m in members:
        if not m.closed.wait(max(0.0, deadline - time.monotonic())):
            hung.append(m.name)
    return hung


@dataclass
class View:
    """An assignment as seen by the observer: one entry per member."""

    name: str
    assigned: frozenset[int] | None
    assign_t: float | None


def describe(views: Sequence[View]) -> str:
    have = [v for v in views if v.assigned is not None]
    covered: set[int] = set()
    dup = 0
    for v in have:
        dup += len(covered & v.assigned)  # type: ignore[operator]
        covered |= v.assigned  # type: ignore[operator]
    return (
        f"{len(have)}/{len(views)} members assigned, {len(covered)}/{PARTITIONS} partitions "
        f"covered, {dup} assigned twice"
    )


def exact_cover(views: Sequence[View], after: float) -> float | None:
    """max(assign time) if every member holds an assignment received after ``after``
    and together they cover all partitions exactly once, else None."""
    seen: set[int] = set()
    total = 0
    latest = after
    for v in views:
        if v.assigned is None or v.assign_t is None or v.assign_t < after:
            return None
        seen |= v.assigned
        total += len(v.assigned)
        latest = max(latest, v.assign_t)
    if total != PARTITIONS or seen != set(range(PARTITIONS)):
        return None
    return latest


def wait_cover(
    get_views: Callable[[], list[View]],
    after: float,
    timeout: float,
    what: str,
    alive: Callable[[], bool] | None = None,
) -> float:
    """Seconds from ``after`` until the members hold a fresh exact cover."""
    deadline = time.monotonic() + timeout
    while True:
        views = get_views()
        done = exact_cover(views, after)
        if done is not None:
            return done - after
        if time.monotonic() > deadline:
            raise ScenarioFailed(
                f"{what}: no exact cover after {timeout:.0f} s ({describe(views)})"
            )
        if alive is not None and not alive():
            raise ScenarioFailed(f"{what}: broker exited")
        time.sleep(0.002)


def views_of(members: Sequence[Member]) -> list[View]:
    return [View(m.name, *m.snapshot()) for m in members]


# ---------------------------------------------------------------------------
# scenarios 1-3


def settle() -> None:
    """Let a formed group run for 1-2 s before the timed event.

    The members' heartbeats tick every heartbeat.interval.ms from the moment they
    got their assignment, and a join/leave/kill is noticed on the next heartbeat, so
    a fixed pause would always hit the same phase of that cycle (a fixed 1.0 s is the
    worst case: the event lands just after a heartbeat). A random extra 0-1 s spreads
    the phase uniformly, as for events in a real deployment.
    """
    time.sleep(1.0 + random.uniform(0.0, HEARTBEAT_MS / 1000))


def formation(bootstrap: str, topic: str, n: int, alive: Callable[[], bool]) -> float:
    group = f"bench-form{n}-{uuid.uuid4().hex[:8]}"
    members = start_members(n, bootstrap, topic, group)
    try:
        t0 = time.monotonic()
        for m in members:
            m.go.set()
        return wait_cover(
            lambda: views_of(members), t0, FORMATION_TIMEOUT_S, f"formation of {n}", alive
        )
    finally:
        close_members(members)


def join_and_leave(bootstrap: str, topic: str, alive: Callable[[], bool]) -> tuple[float, float]:
    group = f"bench-rebal-{uuid.uuid4().hex[:8]}"
    members = start_members(5, bootstrap, topic, group)
    extra: list[Member] = []
    try:
        t0 = time.monotonic()
        for m in members:
            m.go.set()
        wait_cover(lambda: views_of(members), t0, FORMATION_TIMEOUT_S, "forming 5", alive)
        settle()
        extra = start_members(1, bootstrap, topic, group, prefix="j")
        six = members + extra
        t_join = time.monotonic()
        extra[0].go.set()
        join_s = wait_cover(lambda: views_of(six), t_join, REBALANCE_TIMEOUT_S, "join", alive)
        settle()
        leaver = six[0]
        rest = six[1:]
        leaver.leave()  # its thread stamps close_t and calls close() right away
        while leaver.close_t is None:
            time.sleep(0.001)
        t_leave = leaver.close_t
        leave_s = wait_cover(lambda: views_of(rest), t_leave, REBALANCE_TIMEOUT_S, "leave", alive)
        return join_s, leave_s
    finally:
        close_members(members + extra)


CHILD_CODE = r"""
import sys, time, logging
from confluent_kafka import Consumer
bootstrap, topic, group, session, hb = sys.argv[1:6]
log = logging.getLogger("child"); log.addHandler(logging.NullHandler()); log.propagate = False
c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": "victim",
              "session.timeout.ms": int(session), "heartbeat.interval.ms": int(hb),
              "enable.auto.commit": False, "auto.offset.reset": "latest", "logger": log})
def on_assign(_c, parts):
    print("A", time.monotonic(), ",".join(str(p.partition) for p in parts), flush=True)
def on_revoke(_c, parts):
    print("R", time.monotonic(), flush=True)
c.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
print("S", time.monotonic(), flush=True)
while True:
    c.poll(0.05)
"""


class ChildMember:
    """The victim: a consumer in a child process reporting its assignments on stdout."""

    def __init__(self, bootstrap: str, topic: str, group: str) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                CHILD_CODE,
                bootstrap,
                topic,
                group,
                str(SESSION_MS),
                str(HEARTBEAT_MS),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            preexec_fn=common._pdeathsig if sys.platform.startswith("linux") else None,
        )
        self.lock = threading.Lock()
        self.assigned: frozenset[int] | None = None
        self.assign_t: float | None = None
        self.subscribed = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            parts = line.split()
            if not parts:
                continue
            with self.lock:
                if parts[0] == "A":
                    self.assign_t = float(parts[1])
                    self.assigned = (
                        frozenset(int(p) for p in parts[2].split(","))
                        if len(parts) > 2
                        else frozenset()
                    )
                elif parts[0] == "R":
                    self.assigned = None
                    self.assign_t = None
                elif parts[0] == "S":
                    self.subscribed.set()

    def view(self) -> View:
        with self.lock:
            return View("victim", self.assigned, self.assign_t)

    def kill(self) -> float:
        t = time.monotonic()
        self.proc.send_signal(signal.SIGKILL)
        return t

    def cleanup(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def expiry_takeover(bootstrap: str, topic: str, alive: Callable[[], bool]) -> float:
    group = f"bench-expiry-{uuid.uuid4().hex[:8]}"
    survivors = start_members(4, bootstrap, topic, group, prefix="s")
    child = ChildMember(bootstrap, topic, group)
    try:
        if not child.subscribed.wait(30):
            raise ScenarioFailed("victim process did not subscribe within 30 s")
        t0 = time.monotonic()
        for m in survivors:
            m.go.set()
        wait_cover(
            lambda: [*views_of(survivors), child.view()],
            t0,
            FORMATION_TIMEOUT_S + SESSION_MS / 1000,
            "forming 4 + victim",
            alive,
        )
        settle()
        t_kill = child.kill()
        return wait_cover(
            lambda: views_of(survivors), t_kill, EXPIRY_TIMEOUT_S, "takeover after SIGKILL", alive
        )
    finally:
        child.cleanup()
        close_members(survivors)


# ---------------------------------------------------------------------------
# scenarios 4-5: commit rates


def confluent_committer(
    bootstrap: str,
    topic: str,
    seconds: float,
    start: threading.Barrier | None = None,
    extra: dict | None = None,
) -> tuple[int, float]:
    """Sync commits in a loop from this thread; (commits, elapsed seconds).
    `extra`: more client properties (security settings for bench/security.py)."""
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-commit-{uuid.uuid4().hex[:10]}",
            "enable.auto.commit": False,
            "logger": RDK_LOGGER,
            **(extra or {}),
        }
    )
    try:
        tp = TopicPartition(topic, 0, 0)
        c.assign([tp])
        c.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)  # warm up
        if start is not None:
            start.wait(60)
        n = 0
        t0 = time.monotonic()
        end = t0 + seconds
        while True:
            n += 1
            c.commit(offsets=[TopicPartition(topic, 0, n)], asynchronous=False)
            now = time.monotonic()
            if now >= end:
                break
        elapsed = now - t0
        got = c.committed([TopicPartition(topic, 0)], timeout=10)[0].offset
        if got != n:
            raise ScenarioFailed(f"committed offset reads back {got}, expected {n}")
        return n, elapsed
    finally:
        c.close()


def kafka_python_committer(bootstrap: str, topic: str, seconds: float) -> tuple[int, float]:
    from kafka import KafkaConsumer
    from kafka.structs import OffsetAndMetadata
    from kafka.structs import TopicPartition as KTP

    c = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=f"bench-kp-{uuid.uuid4().hex[:10]}",
        enable_auto_commit=False,
        request_timeout_ms=30_000,
    )
    try:
        tp = KTP(topic, 0)
        c.assign([tp])
        c.commit({tp: OffsetAndMetadata(0, "", -1)})  # warm up (coordinator lookup)
        n = 0
        t0 = time.monotonic()
        end = t0 + seconds
        while True:
            n += 1
            c.commit({tp: OffsetAndMetadata(n, "", -1)})
            now = time.monotonic()
            if now >= end:
                break
        elapsed = now - t0
        got = c.committed(tp)
        if got != n:
            raise ScenarioFailed(f"committed offset reads back {got}, expected {n}")
        return n, elapsed
    finally:
        c.close()


def run_in_thread(fn: Callable[[], tuple[int, float]], timeout: float) -> tuple[int, float]:
    out: queue.Queue = queue.Queue()

    def body() -> None:
        try:
            out.put(("ok", fn()))
        except BaseException as e:
            out.put(("err", e))

    threading.Thread(target=body, daemon=True).start()
    try:
        kind, val = out.get(timeout=timeout)
    except queue.Empty:
        raise ScenarioFailed(f"no answer after {timeout:.0f} s") from None
    if kind == "err":
        raise val
    return val


def concurrent_commits(bootstrap: str, topic: str, seconds: float, n: int) -> float:
    """Total commits/s of ``n`` threads, each with its own consumer and group."""
    barrier = threading.Barrier(n)
    results: list[tuple[int, float] | BaseException | None] = [None] * n

    def body(i: int) -> None:
        try:
            results[i] = confluent_committer(bootstrap, topic, seconds, barrier)
        except BaseException as e:
            results[i] = e
            barrier.abort()

    threads = [threading.Thread(target=body, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + seconds + 90
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    errors = [r for r in results if isinstance(r, BaseException)]
    missing = sum(r is None for r in results)
    if errors or missing:
        first = errors[0] if errors else "timeout"
        raise ScenarioFailed(f"{len(errors)} committers failed, {missing} hung; first: {first}")
    total = sum(r[0] for r in results)  # type: ignore[index]
    span = max(r[1] for r in results)  # type: ignore[index]
    return total / span


# ---------------------------------------------------------------------------
# rows and one run


@dataclass(frozen=True)
class Row:
    key: str
    label: str
    unit: str  # "s" or "commits/s"
    target: str = ""  # shown in the table
    ratio_max: float | None = None  # pass if muster/tansu <= this
    ratio_min: float | None = None  # pass if muster/tansu >= this
    abs_max: float | None = None  # pass if muster value <= this (seconds)
    tansu_key: str | None = None  # which Tansu figure to compare with

    @property
    def lower_is_better(self) -> bool:
        return self.unit == "s"


ROWS = [
    *(
        Row(
            f"form{n}-d0",
            f"formation of {n} (muster delay=0)",
            "s",
            "<= 0.10x" if n == 20 else "",
            ratio_max=0.10 if n == 20 else None,
            tansu_key=f"form{n}",
        )
        for n in FORMATION_SIZES
    ),
    *(
        Row(
            f"form{n}-d3000",
            f"formation of {n} (muster default delay 3000 ms)",
            "s",
            tansu_key=f"form{n}",
        )
        for n in FORMATION_SIZES
    ),
    Row("join", "rebalance on join (5 -> 6)", "s", "<= 0.15x", ratio_max=0.15),
    Row("leave", "rebalance on leave (6 -> 5, close())", "s", "<= 0.15x", ratio_max=0.15),
    Row(
        "expiry",
        "session-expiry takeover (SIGKILL, 1 of 5)",
        "s",
        f"<= {SESSION_MS / 1000 + 1.5:.1f} s",
        abs_max=SESSION_MS / 1000 + 1.5,
    ),
    Row(
        "commit-ck", "sync commits, 1 confluent-kafka client", "commits/s", ">= 1.0x", ratio_min=1.0
    ),
    Row("commit-kp", "sync commits, 1 kafka-python client", "commits/s", ">= 1.0x", ratio_min=1.0),
    Row("commit-20", f"sync commits, {COMMITTERS} concurrent committers (total)", "commits/s"),
]


@dataclass
class Results:
    values: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    def add(self, broker: str, key: str, v: float) -> None:
        self.values.setdefault(broker, {}).setdefault(key, []).append(v)


def attempt(
    results: Results, broker: str, run_no: int, key: str, what: str, fn: Callable[[], object]
) -> object | None:
    try:
        return fn()
    except Exception as e:
        msg = f"{broker} run {run_no}: {what}: {type(e).__name__}: {e}"
        results.failures.append(msg)
        common.console.print(f"[yellow]  {escape(msg)}[/yellow]")
        return None


def say(msg: str) -> None:
    common.console.print(f"[dim]{escape(msg)}[/dim]")


def run_formations(
    b: common.Broker, results: Results, key_of: Callable[[int], str], run_no: int
) -> None:
    topic = f"bench-groups-{uuid.uuid4().hex[:8]}"
    create_topic(b.bootstrap, topic, PARTITIONS)
    for n in FORMATION_SIZES:
        secs = attempt(
            results,
            b.name,
            run_no,
            key_of(n),
            f"formation of {n}",
            lambda n=n: formation(b.bootstrap, topic, n, b.alive),
        )
        if secs is not None:
            results.add(b.name, key_of(n), secs)  # type: ignore[arg-type]
            say(f"  formation of {n:<2} {secs * 1000:>9.0f} ms")


def run_rest(
    b: common.Broker, results: Results, run_no: int, commit_s: float, only: set[str]
) -> None:
    topic = f"bench-groups-{uuid.uuid4().hex[:8]}"
    create_topic(b.bootstrap, topic, PARTITIONS)
    jl = None
    if "rebalance" in only:
        jl = attempt(
            results,
            b.name,
            run_no,
            "join",
            "join/leave",
            lambda: join_and_leave(b.bootstrap, topic, b.alive),
        )
    if jl is not None:
        join_s, leave_s = jl  # type: ignore[misc]
        results.add(b.name, "join", join_s)
        results.add(b.name, "leave", leave_s)
        say(f"  rebalance on join  {join_s * 1000:>9.0f} ms")
        say(f"  rebalance on leave {leave_s * 1000:>9.0f} ms")
    secs = None
    if "expiry" in only:
        secs = attempt(
            results,
            b.name,
            run_no,
            "expiry",
            "session-expiry takeover",
            lambda: expiry_takeover(b.bootstrap, topic, b.alive),
        )
    if secs is not None:
        results.add(b.name, "expiry", secs)  # type: ignore[arg-type]
        say(f"  expiry takeover    {secs * 1000:>9.0f} ms")
    for key, what, fn in (
        (
            "commit-ck",
            "confluent-kafka sync commits",
            lambda: run_in_thread(
                lambda: confluent_committer(b.bootstrap, topic, commit_s), commit_s + 60
            ),
        ),
        (
            "commit-kp",
            "kafka-python sync commits",
            lambda: run_in_thread(
                lambda: kafka_python_committer(b.bootstrap, topic, commit_s), commit_s + 60
            ),
        ),
    ):
        if "commits" not in only:
            continue
        cpu0 = common.cpu_seconds(b.proc.pid)  # type: ignore[union-attr]
        r = attempt(results, b.name, run_no, key, what, fn)
        if r is not None:
            n, el = r  # type: ignore[misc]
            results.add(b.name, key, n / el)
            # the broker's CPU per commit: unlike the rate, barely moved by the
            # machine's load or the disk's fsync latency (raw figures only)
            cpu_us = (common.cpu_seconds(b.proc.pid) - cpu0) / max(n, 1) * 1e6  # type: ignore[union-attr]
            results.add(b.name, f"{key}-cpu-us", cpu_us)
            say(
                f"  {what:<30} {n / el:>9,.0f} commits/s ({n} in {el:.1f} s, "
                f"{cpu_us:,.0f} us broker CPU each)"
            )
    rate = None
    if "commit-20" in only:
        rate = attempt(
            results,
            b.name,
            run_no,
            "commit-20",
            f"{COMMITTERS} concurrent committers",
            lambda: concurrent_commits(b.bootstrap, topic, commit_s, COMMITTERS),
        )
    if rate is not None:
        results.add(b.name, "commit-20", rate)  # type: ignore[arg-type]
        say(f"  {COMMITTERS} concurrent committers {rate:>9,.0f} commits/s")


def run_broker_once(
    name: str,
    results: Results,
    run_no: int,
    commit_s: float,
    extra: dict[str, str],
    only: set[str],
) -> None:
    formations = "formation" in only
    rest = bool(only - {"formation"})
    if name == "muster":
        if formations:
            d0 = {**extra, "group.initial.rebalance.delay.ms": "0"}
            with common.running("muster", settings=d0) as b:
                say(f"run {run_no}: muster (group.initial.rebalance.delay.ms=0) on {b.bootstrap}")
                run_formations(b, results, lambda n: f"form{n}-d0", run_no)
        with common.running("muster", settings=extra) as b:
            say(f"run {run_no}: muster (defaults) on {b.bootstrap}")
            if formations:
                run_formations(b, results, lambda n: f"form{n}-d3000", run_no)
            if rest:
                run_rest(b, results, run_no, commit_s, only)
    else:
        with common.running("tansu") as b:
            say(f"run {run_no}: tansu on {b.bootstrap}")
            if formations:
                run_formations(b, results, lambda n: f"form{n}", run_no)
            if rest:
                run_rest(b, results, run_no, commit_s, only)
            if not b.alive():
                results.failures.append(
                    f"tansu run {run_no}: broker exited; log tail:\n{b.log_tail(10)}"
                )


# ---------------------------------------------------------------------------
# output


def fmt_value(v: float | None, unit: str) -> str:
    if v is None:
        return "failed"
    if unit == "s":
        return f"{v * 1000:,.0f} ms"
    return f"{v:,.0f}/s"


def verdict(row: Row, m: float | None, r: float | None) -> str:
    if row.abs_max is not None:
        if m is None:
            return "[red]no figure[/red]"
        return "[green]met[/green]" if m <= row.abs_max else "[red]missed[/red]"
    if row.ratio_max is not None or row.ratio_min is not None:
        if r is None:
            return "[yellow]no ratio[/yellow]"
        ok = r <= row.ratio_max if row.ratio_max is not None else r >= row.ratio_min  # type: ignore[operator]
        return "[green]met[/green]" if ok else "[red]missed[/red]"
    return ""


def scenario_of(key: str) -> str:
    """Which --scenarios entry measures the row with this key."""
    if key.startswith("form"):
        return "formation"
    if key in ("join", "leave"):
        return "rebalance"
    if key in ("commit-ck", "commit-kp"):
        return "commits"
    return key  # "expiry", "commit-20"


def build_summary(
    results: Results, brokers: Sequence[str], only: Collection[str] = SCENARIOS
) -> list[dict]:
    out = []
    for row in ROWS:
        if scenario_of(row.key) not in only:
            continue
        m_vals = results.values.get("muster", {}).get(row.key, [])
        t_vals = results.values.get("tansu", {}).get(row.tansu_key or row.key, [])
        m = common.median(m_vals) if "muster" in brokers else None
        t = common.median(t_vals) if "tansu" in brokers else None
        out.append(
            {
                "key": row.key,
                "label": row.label,
                "unit": row.unit,
                "muster": m,
                "tansu": t,
                "muster_n": len(m_vals),
                "tansu_n": len(t_vals),
                "ratio": common.ratio(m, t),
                "target": row.target,
            }
        )
    return out


def print_table(
    summary: list[dict], brokers: Sequence[str], runs: int, fsync: str = "always (default)"
) -> None:
    table = Table(
        title=(
            f"consumer groups, median of {runs} run(s) [muster fsync={fsync}; "
            "tansu memory://, no fsync; confluent-kafka session 10 s, heartbeat 1 s]"
        ),
        title_justify="left",
    )
    table.add_column("figure", style="bold")
    for b in brokers:
        table.add_column(f"{b}\nmedian", justify="right")
    both = len(brokers) == 2
    if both:
        table.add_column(
            "muster/tansu\n(times: lower is better;\nrates: higher is better)", justify="right"
        )
    table.add_column("target", justify="right")
    table.add_column("", justify="left")
    rows_by_key = {r.key: r for r in ROWS}
    for s in summary:
        row = rows_by_key[s["key"]]
        cells = [s["label"]]
        for b in brokers:
            v = fmt_value(s[b], row.unit)
            n = s[f"{b}_n"]
            if 0 < n < runs:
                v += f" ({n}/{runs})"
            cells.append(v)
        r = s["ratio"]
        if both:
            if r is None:
                cells.append("-")
            else:
                good_dir = 1.0
                good = r <= good_dir if row.lower_is_better else r >= good_dir
                colour = "green" if good else "red"
                cells.append(f"[{colour}]{r:.2f}x[/{colour}]")
        cells.append(row.target or "-")
        cells.append(verdict(row, s["muster"], r) if "muster" in brokers else "")
        table.add_row(*cells)
    common.console.print(table)
    common.console.print(
        "[dim]times: lower is better, ratio < 1 means muster is faster; rates: higher is "
        "better. Tansu has no group.initial.rebalance.delay.ms: its formation figures are "
        "measured once as is and compared with both muster rows. (n/runs) = successful runs "
        "when some failed.[/dim]"
    )


# ---------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--runs", type=int, default=3, help="repetitions per broker (default 3)")
    ap.add_argument(
        "--quick", action="store_true", help="2 s commit phases instead of 10 s (smoke test)"
    )
    ap.add_argument("--commit-seconds", type=float, help="length of each commit-rate phase")
    ap.add_argument("--only", choices=BROKERS, help="run one broker only (no ratio)")
    ap.add_argument("--json", metavar="FILE", help="write raw figures, medians and ratios as JSON")
    ap.add_argument(
        "--muster-set",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="extra muster --set option (e.g. muster.fsync=never); the published figures use none",
    )
    ap.add_argument(
        "--scenarios",
        default=",".join(SCENARIOS),
        help=f"comma-separated subset of {','.join(SCENARIOS)} (default: all)",
    )
    args = ap.parse_args(argv)
    only = set(args.scenarios.split(","))
    if not only <= set(SCENARIOS):
        ap.error(f"unknown scenario(s): {', '.join(sorted(only - set(SCENARIOS)))}")
    extra = dict(kv.split("=", 1) for kv in args.muster_set)

    common.install_signal_handlers()
    commit_s = args.commit_seconds or (2.0 if args.quick else 10.0)
    brokers = [args.only] if args.only else list(BROKERS)
    results = Results()
    rc = 0
    try:
        for run in range(args.runs):
            order = brokers if run % 2 == 0 else list(reversed(brokers))
            for name in order:
                try:
                    run_broker_once(name, results, run + 1, commit_s, extra, only)
                except Exception as e:
                    msg = f"{name} run {run + 1}: {type(e).__name__}: {e}"
                    results.failures.append(msg)
                    common.console.print(f"[red]error:[/red] {escape(msg)}")
    except KeyboardInterrupt:
        common.console.print("[red]interrupted[/red]")
        rc = 130
    finally:
        common.stop_all()

    summary = build_summary(results, brokers, only)
    print_table(summary, brokers, args.runs, extra.get("muster.fsync", "always (default)"))
    if results.failures:
        common.console.print(f"[yellow]{len(results.failures)} scenario failure(s):[/yellow]")
        for f in results.failures:
            common.console.print(f"  {escape(f)}")

    if args.json:
        out = {
            "benchmark": "groups",
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "host": platform.node(),
            "runs": args.runs,
            "quick": args.quick,
            "commit_seconds": commit_s,
            "muster_settings": extra,
            "session_timeout_ms": SESSION_MS,
            "heartbeat_interval_ms": HEARTBEAT_MS,
            "partitions": PARTITIONS,
            "raw": results.values,
            "summary": summary,
            "failures": results.failures,
        }
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
        common.console.print(f"wrote {args.json}")
    sys.stdout.flush()
    sys.stderr.flush()
    # Consumers whose close() hung (a broker that never answers LeaveGroup) would keep
    # the interpreter from exiting; the brokers are already stopped.
    os._exit(rc)


if __name__ == "__main__":
    main()
