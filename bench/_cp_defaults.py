"""The classic and the consumer (KIP-848) group protocol side by side on
muster, and the consumer protocol on kfake (franz-go's fake broker, a peer
with KIP-848), in one run, with confluent-kafka 2.16 consumers.

Setups (fresh broker processes per run, every broker with its defaults):
- muster classic: `group.protocol=classic`, the client's default eager
  range,roundrobin assignment, session/heartbeat at librdkafka's defaults
  (45 s / 3 s), muster's default `group.initial.rebalance.delay.ms` (3 s);
- muster consumer: `group.protocol=consumer`, the broker's defaults
  (heartbeat interval 5 s, session 45 s, uniform assignor);
- kfake consumer: the same client settings against `kfake`.

Scenarios, each member a consumer polled on its own thread, assignments
tracked through the rebalance callbacks (assign adds, revoke/lost remove):
1. formation of N members (default 10) on a 20-partition topic: from the
   subscribe()s until the members hold an exact cover;
2. one more member joins the stable group: time until a new exact cover, and
   per original member the time it held no partition at all (it could not
   consume) — 0 ms when its assignment was untouched;
3. partitions added: the topic of a stable group of N grows by K (default
   100; the published KIP-848 figure is for 900): time until the new
   partitions are covered. A classic group sees them only once a member's
   metadata refresh does (`topic.metadata.refresh.interval.ms`, set to 30 s
   for every client here instead of librdkafka's 5 min); with the consumer
   protocol the broker notices them at the next heartbeat.

    .venv/bin/python bench/consumer_protocol.py --runs 3
    .venv/bin/python bench/consumer_protocol.py --runs 1 --members 5 --added 900
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions

PARTITIONS = 20
TIMEOUT_S = 420.0
KFAKE = common.REPO_ROOT.parent / "shared" / "peers" / "kfake"
SETUPS = ("muster-classic", "muster-consumer", "kfake-consumer")


class Member:
    """One consumer on its own thread; records when it held nothing."""

    def __init__(self, bootstrap: str, group: str, topic: str, protocol: str, name: str) -> None:
        self.conf = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": protocol,
            "client.id": name,
            "enable.auto.commit": False,
            # classic consumers notice new partitions only at a metadata refresh
            # (librdkafka's default: every 5 min); 30 s for both protocols here
            "topic.metadata.refresh.interval.ms": 300_000,
            "logger": common.RDK_LOGGER,
        }
        self.topic = topic
        self.lock = threading.Lock()
        self.owned: set[int] = set()
        self.empty_since: float | None = None  # lost everything at this time
        self.idle_ms: list[float] = []  # spans with nothing assigned, after having had some
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _assign(self, _c: object, parts: list[TopicPartition]) -> None:
        with self.lock:
            if self.empty_since is not None and parts:
                self.idle_ms.append((time.monotonic() - self.empty_since) * 1000)
                self.empty_since = None
            self.owned |= {p.partition for p in parts}

    def _revoke(self, _c: object, parts: list[TopicPartition]) -> None:
        with self.lock:
            self.owned -= {p.partition for p in parts}
            if not self.owned and parts:
                self.empty_since = time.monotonic()

    def _run(self) -> None:
        c = Consumer(self.conf)
        c.subscribe(
            [self.topic], on_assign=self._assign, on_revoke=self._revoke, on_lost=self._revoke
        )
        while not self.stop.is_set():
            c.poll(0.05)
        c.close()

    def partitions(self) -> frozenset[int]:
        with self.lock:
            return frozenset(self.owned)


def covered(members: list[Member], n: int) -> bool:
    sets = [m.partitions() for m in members]
    return all(sets) and sum(map(len, sets)) == n and set().union(*sets) == set(range(n))


def wait(pred: object, what: str) -> float:
    t0 = time.monotonic()
    while not pred():  # type: ignore[operator]
        if time.monotonic() - t0 > TIMEOUT_S:
            raise RuntimeError(f"{what}: not within {TIMEOUT_S:.0f} s")
        time.sleep(0.01)
    return time.monotonic() - t0


def start(setup: str) -> common.Broker:
    if setup.startswith("muster"):
        return common.start_muster()
    port = common.free_port()
    return common.Broker(
        name="kfake",
        argv=[str(KFAKE), "-ports", str(port), "-log-level", "none"],
        host="127.0.0.1",
        port=port,
        log_path=common.RESULTS_DIR / "logs" / f"kfake-{port}.log",
    ).start()


def one_run(setup: str, n: int, added: int) -> dict[str, float]:
    protocol = setup.split("-")[1]
    out: dict[str, float] = {}
    with start(setup) as broker:
        b = broker.bootstrap
        admin = AdminClient({"bootstrap.servers": b, "logger": common.RDK_LOGGER})
        topic, group = f"cp-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}"
        common.create_topic(b, topic, PARTITIONS)
        members = [Member(b, group, topic, protocol, f"m{i}") for i in range(n)]
        try:
            out["formation_s"] = wait(lambda: covered(members, PARTITIONS), "formation")
            time.sleep(1.0)
            for m in members:
                with m.lock:
                    m.idle_ms.clear()
            members.append(Member(b, group, topic, protocol, "late"))
            out["join_s"] = wait(lambda: covered(members, PARTITIONS), "join")
            idle = [sum(m.idle_ms) + _still_idle(m) for m in members[:-1]]
            out["idle_median_ms"] = statistics.median(idle)
            out["idle_max_ms"] = max(idle)
            time.sleep(1.0)
            admin.create_partitions([NewPartitions(topic, PARTITIONS + added)])[topic].result(30)
            out["added_s"] = wait(lambda: covered(members, PARTITIONS + added), "added")
        finally:
            for m in members:
                m.stop.set()
            for m in members:
                m.thread.join(30)
    return out


def _still_idle(m: Member) -> float:
    with m.lock:
        return 0.0 if m.empty_since is None else (time.monotonic() - m.empty_since) * 1000


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--members", type=int, default=10)
    ap.add_argument("--added", type=int, default=100)
    ap.add_argument("--only", choices=SETUPS, action="append")
    args = ap.parse_args(argv)
    common.install_signal_handlers()
    setups = args.only or [s for s in SETUPS if s != "kfake-consumer" or KFAKE.exists()]
    figures: dict[str, dict[str, list[float]]] = {s: {} for s in setups}
    for run in range(args.runs):
        order = setups if run % 2 == 0 else list(reversed(setups))
        for setup in order:
            got = one_run(setup, args.members, args.added)
            print(f"run {run + 1} {setup}: " + ", ".join(f"{k}={v:.2f}" for k, v in got.items()))
            for k, v in got.items():
                figures[setup].setdefault(k, []).append(v)
    keys = ("formation_s", "join_s", "idle_median_ms", "idle_max_ms", "added_s")
    print(f"\nmedians of {args.runs} run(s), {args.members} members, +{args.added} partitions")
    print("setup".ljust(18) + "".join(k.rjust(16) for k in keys))
    for setup in setups:
        row = [statistics.median(figures[setup][k]) for k in keys]
        print(setup.ljust(18) + "".join(f"{v:16.2f}" for v in row))
    if "muster-classic" in figures and "muster-consumer" in figures:
        c, k = figures["muster-classic"], figures["muster-consumer"]
        ratio = statistics.median(c["added_s"]) / statistics.median(k["added_s"])
        print(f"partitions added: consumer protocol {ratio:.1f}x faster than classic on muster")
    return 0


if __name__ == "__main__":
    sys.exit(main())
