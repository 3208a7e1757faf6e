"""`muster serve` failing at start, as a person running it sees it.

Each test runs the real command in a subprocess and checks what the issue
asks for: one or two lines saying what is wrong and what to do, a non-zero
exit, no traceback, and nothing written to disk when the broker could not
listen. Also: the data-directory lock, Kafka's own server.properties, and the
CLI's fast failure when nothing listens.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from tests.support.brokers import MusterProcess, free_port, wait_for_port

# kio imports hypothesis when it is installed (the test extra), and hypothesis
# writes .hypothesis/ into the working directory; keep it out of the directory
# whose emptiness the tests check.
ENV = {**os.environ, "HYPOTHESIS_STORAGE_DIRECTORY": "/tmp/muster-test-hypothesis"}


def serve(tmp_path: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "muster", "serve", *args]
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout, cwd=tmp_path, env=ENV
    )


def error_lines(done: subprocess.CompletedProcess[str]) -> list[str]:
    assert done.returncode != 0, done.stderr
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert 1 <= len(lines) <= 2, done.stderr
    assert lines[0].startswith("error: "), lines
    return lines


def test_port_in_use_is_two_lines_and_creates_nothing(tmp_path: Path) -> None:
    holder = socket.create_server(("127.0.0.1", 0))
    port = holder.getsockname()[1]
    data = tmp_path / "data"
    try:
        done = serve(tmp_path, "--data-dir", str(data), "--listen", f"127.0.0.1:{port}")
    finally:
        holder.close()
    lines = error_lines(done)
    assert done.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}: address already in use" in lines[0]
    assert "--listen HOST:PORT" in lines[1]
    assert not data.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_missing_nested_data_dir_is_created_and_logged(tmp_path: Path) -> None:
    """As Kafka does with log.dirs: a data directory whose parents do not exist
    either is created, and the log says so in Kafka's words (a mistyped path
    shows there), instead of the broker stopping."""
    data = tmp_path / "nope" / "deeper" / "data"
    port = free_port()
    log = tmp_path / "serve.log"
    argv = [sys.executable, "-m", "muster", "serve", "--data-dir", str(data)]
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [*argv, "--listen", f"127.0.0.1:{port}"], stderr=out, cwd=tmp_path, env=ENV
        )
    try:
        wait_for_port(port, proc)
        assert data.is_dir()
        assert (data / ".lock").read_text().strip() == str(proc.pid)
        assert f"Log directory {data} not found, created it." in log.read_text()
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0


def test_port_in_use_creates_no_missing_parent(tmp_path: Path) -> None:
    """A nested data directory is only created once the broker can start."""
    holder = socket.create_server(("127.0.0.1", 0))
    port = holder.getsockname()[1]
    try:
        done = serve(tmp_path, "--data-dir", "nope/deeper/data", "--listen", f"127.0.0.1:{port}")
    finally:
        holder.close()
    error_lines(done)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_metrics_port_in_use_creates_nothing(tmp_path: Path) -> None:
    holder = socket.create_server(("127.0.0.1", 0))
    mport = holder.getsockname()[1]
    data = tmp_path / "data"
    try:
        done = serve(
            tmp_path,
            "--data-dir",
            str(data),
            "--listen",
            f"127.0.0.1:{free_port()}",
            "--set",
            f"muster.metrics.listen=127.0.0.1:{mport}",
        )
    finally:
        holder.close()
    lines = error_lines(done)
    assert f"cannot serve metrics on 127.0.0.1:{mport}" in lines[0]
    assert not data.exists()


@pytest.mark.parametrize(
    ("data_dir", "expected"),
    [
        ("/proc/nonexistent", "cannot create data directory /proc/nonexistent"),
        ("{tmp}/a-file/data", "cannot create data directory {tmp}/a-file/data (not a directory)"),
        # /sys refuses writes even to root, which CI runs as
        ("/sys", "data directory /sys is not writable"),
    ],
)
def test_unusable_data_dir_is_two_lines(tmp_path: Path, data_dir: str, expected: str) -> None:
    (tmp_path / "a-file").write_text("not a directory")
    port = free_port()
    data_dir = data_dir.format(tmp=tmp_path)
    done = serve(tmp_path, "--data-dir", data_dir, "--listen", f"127.0.0.1:{port}")
    lines = error_lines(done)
    assert expected.format(tmp=tmp_path) in lines[0]
    assert "--data-dir DIR" in lines[1]
    # the listener was released: the port can be bound again at once
    socket.create_server(("127.0.0.1", port)).close()


def test_data_dir_is_locked_for_the_brokers_lifetime(tmp_path: Path) -> None:
    first = MusterProcess(tmp_path / "data").start()
    try:
        assert first.proc is not None
        lock = tmp_path / "data" / ".lock"
        assert lock.read_text().strip() == str(first.proc.pid)
        second = free_port()
        done = serve(
            tmp_path, "--data-dir", str(tmp_path / "data"), "--listen", f"127.0.0.1:{second}"
        )
        lines = error_lines(done)
        assert f"is in use by another muster broker (pid {first.proc.pid})" in lines[0]
        # the first broker keeps serving, its lock file untouched
        with socket.create_connection(("127.0.0.1", first.port), 2):
            pass
        assert lock.read_text().strip() == str(first.proc.pid)
        # kill -9 leaves no stale lock: the kernel drops the flock with the process
        first.kill()
        first.start()
        assert lock.read_text().strip() == str(first.proc.pid)
    finally:
        first.close()


KRAFT_SERVER_PROPERTIES = """\
# The shape of Kafka's config/kraft/server.properties (combined broker+controller)
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@localhost:{controller}
listeners=PLAINTEXT://:{port},CONTROLLER://:{controller}
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://localhost:{port},CONTROLLER://localhost:{controller}
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600
log.dirs={log_dirs}
num.partitions=1
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
log.retention.hours=168
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
no.such.thing=1
"""


def test_kafka_kraft_server_properties_starts_the_plaintext_listener(tmp_path: Path) -> None:
    port, controller = free_port(), free_port()
    log_dirs = tmp_path / "kraft-combined-logs"
    props = tmp_path / "server.properties"
    props.write_text(
        KRAFT_SERVER_PROPERTIES.format(port=port, controller=controller, log_dirs=log_dirs)
    )
    log = tmp_path / "serve.log"
    argv = [sys.executable, "-m", "muster", "serve", "--config", str(props)]
    argv += ["--set", "group.initial.rebalance.delay.ms=0"]
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path)
    try:
        wait_for_port(port, proc)
        bootstrap = f"127.0.0.1:{port}"
        metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
        # node.id from the file, advertised as the file's PLAINTEXT listener says
        assert [(b.id, b.host, b.port) for b in metadata.brokers.values()] == [
            (1, "localhost", port)
        ]
        producer = Producer({"bootstrap.servers": bootstrap})
        producer.produce("kraft-file", b"hello")
        assert producer.flush(10) == 0
        consumer = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": "g", "auto.offset.reset": "earliest"}
        )
        consumer.subscribe(["kraft-file"])
        deadline = time.monotonic() + 30
        msg = None
        while msg is None and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error():
                msg = None
        consumer.close()
        assert msg is not None and msg.value() == b"hello"
        # nothing listens on the CONTROLLER port: muster has no controller quorum
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", controller), 1).close()
        assert (log_dirs / "kraft-file-0").is_dir()
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
    text = log.read_text()
    assert code == 0, text
    ignored = [line for line in text.splitlines() if "ignoring Kafka properties" in line]
    assert len(ignored) == 1, text
    for name in ("process.roles", "controller.quorum.voters", "num.network.threads"):
        assert name in ignored[0]
    assert "ignoring unknown properties (see `muster serve --help`): no.such.thing" in text
    assert "Traceback" not in text


def test_produce_to_missing_topic_says_so(tmp_path: Path) -> None:
    broker = MusterProcess(tmp_path / "data", {"auto.create.topics.enable": "false"}).start()
    try:
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "muster", "produce", "nosuch", "x", "-b", broker.bootstrap],
            capture_output=True,
            text=True,
            timeout=60,
        )
        elapsed = time.monotonic() - started
    finally:
        broker.close()
    lines = error_lines(done)
    assert lines == [
        "error: topic 'nosuch' does not exist and the broker does not create topics on "
        "produce; create it first: muster topics create nosuch -b " + broker.bootstrap
    ]
    # well inside the 10 s request timeout that used to end in _MSG_TIMED_OUT
    assert elapsed < 8


def test_cli_with_no_broker_fails_fast_in_a_subprocess(tmp_path: Path) -> None:
    address = f"127.0.0.1:{free_port()}"
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "muster", "topics", "list", "-b", address],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "200"},
    )
    elapsed = time.monotonic() - started
    lines = error_lines(done)
    assert lines[0].startswith(f"error: cannot connect to {address} (connection refused)")
    # interpreter start included; the in-process bound (2 s) is in test_cli_offline
    assert elapsed < 8
