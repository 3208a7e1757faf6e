"""A group consumer as its own process (for kill -9 tests), muster's or
(with a 4th argument "confluent") confluent-kafka's: prints each processed
value, then commits synchronously (at-least-once)."""

from __future__ import annotations

import sys
import time

from muster.client import Consumer


def confluent_main(bootstrap: str, group: str, topic: str) -> None:
    from confluent_kafka import Consumer as CConsumer

    consumer = CConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 3000,
            "heartbeat.interval.ms": 300,
        }
    )
    consumer.subscribe([topic])
    idle_since = time.monotonic()
    while time.monotonic() - idle_since < 6:
        msgs = [m for m in consumer.consume(50, 0.2) if not m.error()]
        if not msgs:
            continue
        idle_since = time.monotonic()
        for m in msgs:
            time.sleep(0.002)
            print(m.value().decode(), flush=True)
        try:
            consumer.commit(asynchronous=False)
        except Exception as exc:
            print(f"# commit failed: {exc!r}", flush=True)
    consumer.close()


def main() -> None:
    bootstrap, group, topic = sys.argv[1:4]
    if len(sys.argv) > 4 and sys.argv[4] == "confluent":
        confluent_main(bootstrap, group, topic)
        return
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
