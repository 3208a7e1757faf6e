"""How soon a KIP-848 regex subscription picks up new topics and drops a deleted
one, on Kafka 4.4 and on muster, with confluent-kafka consumers (the steps of
librdkafka's test 0113 `n_wildcard`, whose 30 s budget this measures against).

Per run and broker (a fresh broker each, session 6 s as conformance/run.py sets
in this mode): two `group.protocol=consumer` consumers subscribe to `^base_.`;
2 s later two 2-partition topics matching it are created; figures are the time
from creation until both consumers hold 2 partitions, then from deleting one
topic until both hold 1. Kafka re-resolves a group's regexes at most every 10 s
(so does muster), and a member learns a new target at its next heartbeat (5 s).

    .venv/bin/python bench/regex_pickup.py --runs 3
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import install_signal_handlers, median, running
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

SESSION = {"group.consumer.session.timeout.ms": "6000"}
SETTINGS = {
    "muster": {**SESSION, "muster.fsync": "never"},
    "kafka": {**SESSION, "group.consumer.min.session.timeout.ms": "6000"},
}


def _poll_until(consumers: list[Consumer], done: object, limit: float) -> float | None:
    start = time.monotonic()
    while time.monotonic() - start < limit:
        for c in consumers:
            c.poll(0.05)
        if done():  # type: ignore[operator]
            return time.monotonic() - start
    return None


def one_run(bootstrap: str) -> tuple[float | None, float | None]:
    base = "rx_" + uuid.uuid4().hex[:8]
    consumers = [
        Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"g-{base}",
                "group.protocol": "consumer",
                "topic.metadata.refresh.interval.ms": 3000,
            }
        )
        for _ in range(2)
    ]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        for c in consumers:
            c.subscribe([f"^{base}_."])
        _poll_until(consumers, lambda: False, 2.0)
        topics = [NewTopic(f"{base}_{i}", 2, 1) for i in (1, 2)]
        for f in admin.create_topics(topics).values():
            f.result()
        assigned = _poll_until(
            consumers, lambda: all(len(c.assignment()) == 2 for c in consumers), 60
        )
        if assigned is None:
            return None, None
        for f in admin.delete_topics([f"{base}_1"]).values():
            f.result()
        dropped = _poll_until(
            consumers, lambda: all(len(c.assignment()) == 1 for c in consumers), 60
        )
        return assigned, dropped
    finally:
        for c in consumers:
            c.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--brokers", default="kafka,muster")
    args = ap.parse_args(argv)
    install_signal_handlers()
    results: dict[str, list[tuple[float | None, float | None]]] = {}
    for _ in range(args.runs):
        for name in args.brokers.split(","):  # alternating brokers, one run each
            with running(name, settings=SETTINGS[name]) as broker:
                results.setdefault(name, []).append(one_run(broker.bootstrap))
    print(f"{'broker':8} {'assigned after create (s)':>28} {'revoked after delete (s)':>26}")
    for name, runs in results.items():
        a = median(r[0] for r in runs if r[0] is not None)
        d = median(r[1] for r in runs if r[1] is not None)
        shown = " ".join(f"{r[0]:.1f}/{r[1]:.1f}" if None not in r else "timeout" for r in runs)
        print(f"{name:8} {a or float('nan'):>28.1f} {d or float('nan'):>26.1f}   runs: {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
