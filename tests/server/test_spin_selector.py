"""Busy polling (muster.poll.spin.us): the loop polls without sleeping for a
window after activity, sleeps when idle, and a broker so configured serves a
real client's synchronous commits; uvloop with it is refused in one line."""

from __future__ import annotations

import selectors
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from muster.server.spin_selector import SpinningSelector
from tests.support.brokers import MusterProcess
from tests.wire.clients import create_topic


def _cpu_during(call: object) -> tuple[float, object]:
    start = time.thread_time()
    result = call()  # type: ignore[operator]
    return time.thread_time() - start, result


@contextmanager
def _hot(spin: float) -> Iterator[tuple[SpinningSelector, socket.socket, socket.socket]]:
    """A selector watching one socket of a pair, its window opened by an event."""
    a, b = socket.socketpair()
    sel = SpinningSelector(spin)
    try:
        sel.register(a, selectors.EVENT_READ)
        b.send(b"x")
        assert sel.select(1.0)  # an event: the window opens
        a.recv(1)
        yield sel, a, b
    finally:
        sel.close()
        a.close()
        b.close()


def test_spins_after_activity_and_sleeps_when_idle() -> None:
    with _hot(0.3) as (sel, _a, _b):
        hot_cpu, ready = _cpu_during(lambda: sel.select(0.3))
        assert ready == []
        # the window is spent polling, not sleeping (generous: a loaded
        # machine may run this thread a fraction of the time)
        assert hot_cpu > 0.05, hot_cpu
        idle_cpu, ready = _cpu_during(lambda: sel.select(0.3))
        assert ready == []
        assert idle_cpu < 0.03, idle_cpu  # no event since: blocked in epoll


def test_an_event_during_the_spin_is_returned_at_once() -> None:
    with _hot(5.0) as (sel, a, b):
        timer = threading.Timer(0.05, b.send, args=(b"y",))
        timer.start()
        started = time.monotonic()
        ready = sel.select(None)  # would block for ever without the event
        assert [key.fileobj for key, _ in ready] == [a]
        assert time.monotonic() - started < 2.0
        timer.join()
        assert sel.select(0) and a.recv(1) == b"y"


def test_a_spinning_broker_serves_sync_commits(tmp_path: Path) -> None:
    broker = MusterProcess(
        tmp_path / "data", {"muster.poll.spin.us": "300", "muster.fsync": "never"}
    ).start()
    try:
        create_topic(broker.bootstrap, "spin")
        consumer = Consumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": f"spin-{uuid.uuid4().hex[:8]}",
                "enable.auto.commit": False,
            }
        )
        try:
            for offset in range(1, 201):
                consumer.commit(offsets=[TopicPartition("spin", 0, offset)], asynchronous=False)
            got = consumer.committed([TopicPartition("spin", 0)], timeout=10)
            assert got[0].offset == 200
        finally:
            consumer.close()
        assert "Traceback" not in broker.log_text()
    finally:
        broker.close()


def test_spin_on_uvloop_is_refused_in_two_lines(tmp_path: Path) -> None:
    data = tmp_path / "data"
    done = subprocess.run(
        [
            *(sys.executable, "-m", "muster", "serve", "--data-dir", str(data)),
            *("--listen", "127.0.0.1:0", "--set", "muster.event.loop=uvloop"),
            *("--set", "muster.poll.spin.us=100"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "muster.poll.spin.us works with the standard loop only" in done.stderr
    assert "Traceback" not in done.stderr
    assert not data.exists()
