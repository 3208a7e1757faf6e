"""group.protocol=consumer (KIP-848): muster's own consumer against
confluent-kafka's, both on franz-go's kfake (../shared/peers/kfake) in the
same run: time until a group of N covers every partition exactly once
(formation), and until the rest cover them again after one member closes
(rebalance on a leave), nan when not within 20 s. Medians of --runs; the
ratio is muster / confluent.

    python bench/client_consumer_protocol.py --members 3 10 --runs 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import Consumer as CConsumer

from muster.client import Admin, Consumer, NewTopic
from tests.support.brokers import KfakeProcess

PARTITIONS = 24


def muster_member(bootstrap: str, group: str, topic: str) -> tuple[Any, Callable[[], set[int]]]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer"})
    c.subscribe([topic])
    return c, lambda: {tp.partition for tp in c.assignment()}


def confluent_member(bootstrap: str, group: str, topic: str) -> tuple[Any, Callable[[], set[int]]]:
    c = CConsumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer"})
    c.subscribe([topic])
    return c, lambda: {tp.partition for tp in c.assignment()}


def covered(members: list[tuple[Any, Callable[[], set[int]]]]) -> bool:
    sets = [parts() for _, parts in members]
    union = set().union(*sets)
    return all(sets) and len(union) == PARTITIONS == sum(map(len, sets))


def until_covered(members: list[tuple[Any, Callable[[], set[int]]]], timeout: float = 20) -> float:
    start = time.monotonic()
    while not covered(members):
        if time.monotonic() - start > timeout:
            return float("nan")
        for consumer, _ in members:
            consumer.poll(0.01)
    return time.monotonic() - start


def one_run(kind: str, bootstrap: str, n: int, run: int) -> tuple[float, float]:
    topic = group = f"{kind}-{n}-{run}"
    admin = Admin({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS)])
    admin.close()
    make = muster_member if kind == "muster" else confluent_member
    start = time.monotonic()
    members = [make(bootstrap, group, topic) for _ in range(n)]
    waited = until_covered(members)
    formation = time.monotonic() - start if waited == waited else waited  # nan: never
    members.pop(0)[0].close()
    leave = until_covered(members)
    for consumer, _ in members:
        consumer.close()
    return formation, leave


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--members", type=int, nargs="+", default=[3, 10])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--heartbeat-ms", type=int, default=500)
    args = parser.parse_args()
    setting = f"group.consumer.heartbeat.interval.ms={args.heartbeat_ms}"
    print(f"kfake, {PARTITIONS} partitions, heartbeat {args.heartbeat_ms} ms, runs {args.runs}")
    print(f"{'members':>7} {'what':>10} {'muster s':>9} {'confluent s':>11} {'ratio':>6}")
    for n in args.members:
        results: dict[str, list[tuple[float, float]]] = {"muster": [], "confluent": []}
        for run in range(args.runs):
            for kind in results:  # alternate, so load hits both alike
                # a fresh kfake each time: after a muster group, a confluent
                # group on the same kfake did not settle (see the report)
                broker = KfakeProcess(setting).start()
                try:
                    results[kind].append(one_run(kind, broker.bootstrap, n, run))
                finally:
                    broker.close()
        for i, what in enumerate(("formation", "one leave")):
            m = statistics.median(r[i] for r in results["muster"])
            c = statistics.median(r[i] for r in results["confluent"])
            print(f"{n:>7} {what:>10} {m:>9.2f} {c:>11.2f} {m / c:>6.2f}")


if __name__ == "__main__":
    main()
