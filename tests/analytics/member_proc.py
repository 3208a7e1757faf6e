"""One group member as its own process, so a test can SIGKILL it (session
expiry) or SIGTERM it (a clean close: LeaveGroup). Usage:
    python -m tests.analytics.member_proc confluent|muster BOOTSTRAP GROUP TOPIC
Short timeouts (3 s session and rebalance timeout) keep churn tests fast."""

from __future__ import annotations

import signal
import sys
from typing import Any

CONFIG = {
    "auto.offset.reset": "earliest",
    "enable.auto.commit": True,
    "auto.commit.interval.ms": 200,
    "session.timeout.ms": 3000,
    "heartbeat.interval.ms": 300,
    "max.poll.interval.ms": 3000,  # the rebalance timeout this member asks for
}


def main() -> None:
    kind, bootstrap, group, topic = sys.argv[1:5]
    stop = False

    def on_term(_signum: int, _frame: Any) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    config = {"bootstrap.servers": bootstrap, "group.id": group, "client.id": kind, **CONFIG}
    if kind == "confluent":
        from confluent_kafka import Consumer
    else:
        from muster.client import Consumer  # type: ignore[assignment]
    consumer: Any = Consumer(config)
    consumer.subscribe([topic])
    while not stop:
        consumer.poll(0.1)
    consumer.close()  # commits (auto-commit) and sends LeaveGroup


if __name__ == "__main__":
    main()
