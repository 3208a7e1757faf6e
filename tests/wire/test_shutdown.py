"""SIGTERM stops the broker promptly even while clients hold parked requests."""

from __future__ import annotations

import time
from pathlib import Path

from confluent_kafka import Consumer

from tests.support.brokers import MusterProcess
from tests.wire.clients import create_topic


def test_sigterm_with_members_waiting_in_join(tmp_path: Path) -> None:
    # a long initial delay keeps the members' JoinGroup requests parked at the broker
    broker = MusterProcess(tmp_path / "data", {"group.initial.rebalance.delay.ms": "20000"})
    broker.start()
    consumers = []
    try:
        create_topic(broker.bootstrap, "stopping", partitions=2)
        consumers = [
            Consumer(
                {
                    "bootstrap.servers": broker.bootstrap,
                    "group.id": "parked",
                    "session.timeout.ms": 30000,
                }
            )
            for _ in range(2)
        ]
        for c in consumers:
            c.subscribe(["stopping"])
        for _ in range(4):
            for c in consumers:
                c.poll(0.25)
        started = time.monotonic()
        assert broker.stop() == 0
        assert time.monotonic() - started < 10
        assert "muster stopped" in broker.log_text()
    finally:
        broker.close()
        for c in consumers:
            c.close()
