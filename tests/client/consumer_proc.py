"""A muster group consumer as its own process (for kill -9 tests): prints
each processed value, then commits synchronously (at-least-once)."""

from __future__ import annotations

import sys
import time

from muster.client import Consumer


def main() -> None:
    bootstrap, group, topic = sys.argv[1:4]
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 3000,
            "heartbeat.interval.ms": 300,
            "max.poll.records": 50,
        }
    )
    consumer.subscribe([topic])
    idle_since = time.monotonic()
    while time.monotonic() - idle_since < 6:
        records = consumer.poll(0.2)
        if not records:
            continue
        idle_since = time.monotonic()
        for r in records:
            time.sleep(0.002)  # "processing"
            print(r.value.decode(), flush=True)
        try:
            consumer.commit()
        except Exception as exc:  # a rebalance: the records will come again
            print(f"# commit failed: {exc!r}", flush=True)
    consumer.close()


if __name__ == "__main__":
    main()
