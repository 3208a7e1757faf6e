"""The broker on uvloop (muster.event.loop=uvloop) serves what it serves on
asyncio's loop: produce, a group's fetch and commits, an idle connection
closed; and a loop it does not know is refused before anything starts."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

from tests.support.brokers import MusterProcess, peer_closed
from tests.support.security import librdkafka_conf, secured_settings
from tests.wire.clients import create_topic


def test_uvloop_broker_serves_produce_group_fetch_commit_and_idle_close(tmp_path: Path) -> None:
    broker = MusterProcess(
        tmp_path / "data", {"muster.event.loop": "uvloop", "connections.max.idle.ms": "1500"}
    ).start()
    try:
        create_topic(broker.bootstrap, "loop")
        producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
        for i in range(20):
            producer.produce("loop", f"v{i}".encode())
        assert producer.flush(15) == 0
        group = f"g-{uuid.uuid4().hex[:8]}"
        consumer = Consumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": group,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        try:
            consumer.subscribe(["loop"])
            seen: list[bytes] = []
            deadline = time.monotonic() + 30
            while len(seen) < 20 and time.monotonic() < deadline:
                msg = consumer.poll(0.5)
                if msg is not None and msg.error() is None:
                    seen.append(msg.value())
            assert seen == [f"v{i}".encode() for i in range(20)]
            consumer.commit(asynchronous=False)
            got = consumer.committed([TopicPartition("loop", 0)], timeout=10)[0]
            assert got.offset == 20
        finally:
            consumer.close()
        # the idle bound holds on this loop too (its watchdog is a loop timer)
        with socket.create_connection(("127.0.0.1", broker.port)) as sock:
            assert peer_closed(sock, 6.0)
        log = broker.log_text()
        assert "idle for 2s" in log  # 1.5 s, as the log line rounds it
        assert "Traceback" not in log
    finally:
        broker.close()


def test_uvloop_broker_serves_tls_listeners(tmp_path: Path, certs: Path) -> None:
    # On uvloop a TLS listener once lost the ClientHello that arrived before
    # the handshake began: every TLS client timed out in its handshake.
    broker = MusterProcess(
        tmp_path / "data",
        secured_settings(certs, **{"muster.event.loop": "uvloop"}),
        {"PLAINTEXT": "PLAINTEXT", "SSL": "SSL", "SASL_SSL": "SASL_SSL"},
    ).start()
    try:
        create_topic(broker.bootstrap, "tls-loop")
        sasl = librdkafka_conf(certs, "PLAIN", "alice", "alice-secret")
        producer = Producer({**sasl, "bootstrap.servers": broker.address("SASL_SSL")})
        payload = bytes(range(256)) * 4
        for i in range(2000):
            producer.produce("tls-loop", payload, key=str(i).encode())
        assert producer.flush(30) == 0
        mutual = librdkafka_conf(certs, None, cert="alice")
        consumer = Consumer(
            {
                **mutual,
                "bootstrap.servers": broker.address("SSL"),
                "group.id": f"g-{uuid.uuid4().hex[:8]}",
                "auto.offset.reset": "earliest",
            }
        )
        try:
            consumer.subscribe(["tls-loop"])
            keys: list[bytes] = []
            deadline = time.monotonic() + 30
            while len(keys) < 2000 and time.monotonic() < deadline:
                msg = consumer.poll(0.5)
                if msg is not None and msg.error() is None:
                    assert msg.value() == payload
                    keys.append(msg.key())
            assert keys == [str(i).encode() for i in range(2000)]
        finally:
            consumer.close()
        assert "Traceback" not in broker.log_text()
    finally:
        broker.close()


def test_unknown_event_loop_is_refused_in_one_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    done = subprocess.run(
        [
            *(sys.executable, "-m", "muster", "serve", "--data-dir", str(data)),
            *("--listen", "127.0.0.1:0", "--set", "muster.event.loop=trio"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "muster.event.loop must be asyncio or uvloop, not 'trio'" in done.stderr
    assert "Traceback" not in done.stderr
    assert not data.exists()
