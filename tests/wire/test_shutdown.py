"""SIGTERM stops the broker promptly even while clients hold parked requests."""

from __future__ import annotations

import struct
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


def test_sigterm_answers_requests_already_read_before_closing(tmp_path: Path) -> None:
    # Kafka's clean shutdown answers what it has read; muster used to cancel
    # every request in flight at SIGTERM, so a write already stored could go
    # unanswered (and be written again by the client's retry)
    import signal
    import socket

    from tests.protocol.test_pipelining import frame, long_poll_fetch, read_frame

    broker = MusterProcess(tmp_path / "data")
    broker.start()
    try:
        create_topic(broker.bootstrap, "draining")
        fetch = long_poll_fetch("draining", 1500)  # parked, within the 3 s drain
        with socket.create_connection(("127.0.0.1", broker.port), timeout=15) as sock:
            sock.sendall(frame(1, 11, 77, fetch, False))
            time.sleep(0.3)
            assert broker.proc is not None
            broker.proc.send_signal(signal.SIGTERM)
            answer = read_frame(sock)  # "connection closed" before the fix
            assert struct.unpack_from(">i", answer)[0] == 77
            assert sock.recv(1) == b""  # then closed
        assert broker.proc.wait(timeout=15) == 0
    finally:
        broker.close()
