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
   protocol the broker notices them at the next heartbeat;
4. scaling 1 -> N -> 1 (its own fresh broker): one member, then members added
   `--step` at a time up to N, then closed `--step` at a time back to 1; each
   step waits for the exact cover of the members present. Figures: the total
   time of the up and of the down phase; the partitions revoked from members
   that stay in the group against those that actually moved away from them
   (equal when only moved partitions are revoked); per member, the time it
   held nothing while it was a member (after its first assignment, until it
   was told to leave).

    .venv/bin/python bench/consumer_protocol.py --runs 3
    .venv/bin/python bench/consumer_protocol.py --runs 1 --members 5 --added 900
    .venv/bin/python bench/consumer_protocol.py --runs 3 --members 20 --scenario scaling
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
TIMEOUT_S = 120.0
# classic consumers notice new partitions only at a metadata refresh; librdkafka's
# default is 5 min (the published KIP-848 figure is with the clients' defaults)
REFRESH_MS = 30_000
SETUPS = ("muster-classic", "muster-consumer", "kfake-consumer", "kafka-classic", "kafka-consumer")
# Apache Kafka 4.4 (bench/common.start_kafka) and muster run with these group
# settings alike (the rest at both brokers' defaults, which agree: offsets topic
# of 50 partitions, session bounds 6 s .. 30 min, consumer-protocol heartbeat
# 5 s and session 45 s). muster's own rows keep its defaults (delay 3 s).
KAFKA_ALIKE = {"group.initial.rebalance.delay.ms": "3000", "offsets.topic.num.partitions": "50"}
SCENARIOS = ("formation", "join", "added", "scaling")
# broker settings for every setup (muster and Kafka; bench/kafka_compare.py sets
# the group settings alike on both here)
BROKER_SETTINGS: dict[str, str] = {}


class Member:
    """One consumer on its own thread; records when it held nothing."""

    def __init__(self, bootstrap: str, group: str, topic: str, protocol: str, name: str) -> None:
        self.conf = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": protocol,
            "client.id": name,
            "enable.auto.commit": False,
            "topic.metadata.refresh.interval.ms": REFRESH_MS,  # the same for both protocols
            "logger": common.RDK_LOGGER,
        }
        self.topic = topic
        self.lock = threading.Lock()
        self.owned: set[int] = set()
        self.empty_since: float | None = None  # lost everything at this time
        self.idle_ms: list[float] = []  # spans with nothing assigned, after having had some
        self.revoked = 0  # partitions taken away by the revoke/lost callbacks
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
            self.revoked += len(parts)
            self.owned -= {p.partition for p in parts}
            if not self.owned and parts and not self.stop.is_set():
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
        return common.start_muster(settings=BROKER_SETTINGS)
    if setup.startswith("kafka"):
        return common.start_kafka({**KAFKA_ALIKE, **BROKER_SETTINGS})
    port = common.free_port()
    return common.Broker(
        name="kfake",
        argv=[str(common.kfake_binary()), "-ports", str(port), "-log-level", "none"],
        host="127.0.0.1",
        port=port,
        log_path=common.RESULTS_DIR / "logs" / f"kfake-{port}.log",
    ).start()


def one_run(setup: str, n: int, added: int, scenarios: set[str]) -> dict[str, float]:
    """Formation, then (if asked) one join, then (if asked) partitions added."""
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
            if "join" in scenarios:
                time.sleep(1.0)
                for m in members:
                    with m.lock:
                        m.idle_ms.clear()
                members.append(Member(b, group, topic, protocol, "late"))
                out["join_s"] = wait(lambda: covered(members, PARTITIONS), "join")
                idle = [sum(m.idle_ms) + _still_idle(m) for m in members[:-1]]
                out["idle_median_ms"] = statistics.median(idle)
                out["idle_max_ms"] = max(idle)
            if "added" in scenarios:
                time.sleep(1.0)
                grown = [NewPartitions(topic, PARTITIONS + added)]
                admin.create_partitions(grown)[topic].result(30)
                out["added_s"] = wait(lambda: covered(members, PARTITIONS + added), "added")
        finally:
            _close(members)
    return out


def _close(members: list[Member]) -> None:
    for m in members:
        m.stop.set()
    for m in members:
        m.thread.join(30)


def _owners(members: list[Member]) -> dict[int, int]:
    return {p: i for i, m in enumerate(members) for p in m.partitions()}


def _step(
    members: list[Member], change: object, staying: list[Member], what: str
) -> tuple[float, int, int]:
    """Apply one membership change and wait for the new exact cover. Returns
    the seconds, the partitions revoked from members that stay, and the
    partitions that really moved away from them."""
    before = {p: id(m) for m in staying for p in m.partitions()}
    revoked0 = {id(m): m.revoked for m in staying}
    t = time.monotonic()
    change()  # type: ignore[operator]
    wait(lambda: covered(members, PARTITIONS), what)
    took = time.monotonic() - t
    after = {p: id(m) for m in members for p in m.partitions()}
    moved = sum(1 for p, owner in before.items() if after.get(p) != owner)
    revoked = sum(m.revoked - revoked0[id(m)] for m in staying)
    return took, revoked, moved


def scaling_run(setup: str, n: int, step: int) -> dict[str, float]:
    """1 -> n -> 1 members on a fresh broker, `step` members per change."""
    protocol = setup.split("-")[1]
    out: dict[str, float] = {}
    with start(setup) as broker:
        b = broker.bootstrap
        topic, group = f"sc-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}"
        common.create_topic(b, topic, PARTITIONS)
        members = [Member(b, group, topic, protocol, "m0")]
        everyone = list(members)
        idle_until: dict[int, float] = {}  # member -> when it was told to leave
        up = down = 0.0
        revoked = moved = 0
        try:
            wait(lambda: covered(members, PARTITIONS), "scaling: first member")
            while len(members) < n:
                k = min(step, n - len(members))
                staying = list(members)

                def grow(k: int = k) -> None:
                    for _ in range(k):
                        m = Member(b, group, topic, protocol, f"m{len(everyone)}")
                        members.append(m)
                        everyone.append(m)

                s, r, mv = _step(members, grow, staying, f"scaling up to {len(members) + k}")
                up, revoked, moved = up + s, revoked + r, moved + mv
            while len(members) > 1:
                k = min(step, len(members) - 1)
                leaving, staying = members[-k:], members[:-k]

                def shrink(leaving: list[Member] = leaving) -> None:
                    for m in leaving:
                        idle_until[id(m)] = _idle_total(m)
                        m.stop.set()
                        members.remove(m)

                s, r, mv = _step(members, shrink, staying, f"scaling down to {len(staying)}")
                down, revoked, moved = down + s, revoked + r, moved + mv
        finally:
            idle = [idle_until.get(id(m), _idle_total(m)) for m in everyone]
            _close(everyone)
    out["up_s"], out["down_s"] = up, down
    out["revoked"], out["moved"] = float(revoked), float(moved)
    out["held_nothing_median_ms"] = statistics.median(idle)
    out["held_nothing_max_ms"] = max(idle)
    return out


def _idle_total(m: Member) -> float:
    with m.lock:
        spans = sum(m.idle_ms)
    return spans + _still_idle(m)


def _still_idle(m: Member) -> float:
    with m.lock:
        return 0.0 if m.empty_since is None else (time.monotonic() - m.empty_since) * 1000


GROUP_KEYS = ("formation_s", "join_s", "idle_median_ms", "idle_max_ms", "added_s")
SCALING_KEYS = (
    "up_s",
    "down_s",
    "revoked",
    "moved",
    "held_nothing_median_ms",
    "held_nothing_max_ms",
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--members", type=int, default=10)
    ap.add_argument("--added", type=int, default=100)
    ap.add_argument("--step", type=int, default=1, help="members added/removed per scaling step")
    ap.add_argument("--only", choices=SETUPS, action="append")
    ap.add_argument(
        "--scenario",
        choices=SCENARIOS,
        action="append",
        help="run only these (repeatable; default all); join and added include a formation",
    )
    ap.add_argument("--partitions", type=int, default=PARTITIONS, help="of the topic")
    ap.add_argument(
        "--metadata-refresh-ms",
        type=int,
        default=30_000,
        help="every client's topic.metadata.refresh.interval.ms (300000: librdkafka's default)",
    )
    args = ap.parse_args(argv)
    _set_refresh(args.metadata_refresh_ms)
    scenarios = set(args.scenario or SCENARIOS)
    # an exact cover needs a partition for every member, the late joiner included
    most = args.partitions - 1 if "join" in scenarios else args.partitions
    if not 1 <= args.members <= most:
        ap.error(f"--members must be 1..{most} with --partitions {args.partitions}")
    _set_partitions(args.partitions)
    common.install_signal_handlers()
    group_run = bool(scenarios & {"formation", "join", "added"})
    setups = args.only or [s for s in SETUPS if s != "kfake-consumer" or _has_kfake()]
    figures: dict[str, dict[str, list[float]]] = {s: {} for s in setups}
    for run in range(args.runs):
        order = setups if run % 2 == 0 else list(reversed(setups))
        for setup in order:
            got: dict[str, float] = {}
            if group_run:
                got |= one_run(setup, args.members, args.added, scenarios)
            if "scaling" in scenarios:
                got |= scaling_run(setup, args.members, args.step)
            print(f"run {run + 1} {setup}: " + ", ".join(f"{k}={v:.2f}" for k, v in got.items()))
            for k, v in got.items():
                figures[setup].setdefault(k, []).append(v)
    print(f"\nmedians of {args.runs} run(s), {args.members} members, {args.partitions} partitions")
    for title, keys in (
        (
            ", ".join(x for x in SCENARIOS[:3] if x in scenarios or x == "formation")
            + (f" (+{args.added} partitions)" if "added" in scenarios else ""),
            GROUP_KEYS,
        ),
        (f"scaling 1->{args.members}->1, step {args.step}", SCALING_KEYS),
    ):
        keys = tuple(k for k in keys if k in figures[setups[0]])
        if not keys:
            continue
        print(title)
        print("setup".ljust(18) + "".join(k.rjust(24) for k in keys))
        for setup in setups:
            row = [statistics.median(figures[setup][k]) for k in keys]
            print(setup.ljust(18) + "".join(f"{v:24.2f}" for v in row))
    if "muster-classic" in figures and "muster-consumer" in figures and "added" in scenarios:
        c, k = figures["muster-classic"], figures["muster-consumer"]
        ratio = statistics.median(c["added_s"]) / statistics.median(k["added_s"])
        print(f"partitions added: consumer protocol {ratio:.1f}x faster than classic on muster")
    return 0


def _set_partitions(n: int) -> None:
    global PARTITIONS  # read by every scenario; one value per invocation
    PARTITIONS = n


def _has_kfake() -> bool:
    try:
        common.kfake_binary()
    except FileNotFoundError:
        return False
    return True


def _set_refresh(ms: int) -> None:
    global REFRESH_MS, TIMEOUT_S  # read by every Member; one value per invocation
    REFRESH_MS = ms
    TIMEOUT_S = max(TIMEOUT_S, ms / 1000 + 120)  # a classic group waits for a refresh


if __name__ == "__main__":
    sys.exit(main())
