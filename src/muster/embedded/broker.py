"""`muster.Broker`: a real muster broker for a test, in a thread or a subprocess.

    with muster.Broker() as broker:               # thread, memory storage, free port
        Producer({"bootstrap.servers": broker.bootstrap_servers})

    with muster.Broker(mode="process", storage="disk") as broker:
        ...
        broker.kill()        # kill -9 the broker process
        broker.start()       # same port, same data directory: recovery from the log

It never takes 127.0.0.1:9092 unless asked to (port 0 by default: a free one).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from muster.config import BY_NAME, BrokerConfig, ConfigError

Mode = Literal["thread", "process"]
Storage = Literal["memory", "disk"]

# Settings that suit tests; every one can be overridden per broker. A 100 ms
# initial rebalance delay still gathers members that subscribe together into
# one generation (20 confluent-kafka consumers form one in ~0.3 s), where
# Kafka's 3 s default makes every group test wait.
TEST_DEFAULTS: dict[str, Any] = {
    "group.initial.rebalance.delay.ms": 100,
    "group.min.session.timeout.ms": 1000,
    "offsets.topic.num.partitions": 5,
    "transaction.state.log.num.partitions": 5,
    "share.coordinator.state.topic.num.partitions": 5,
}


def _free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])



# The line the broker logs once both coordinators serve (server/transactions.py).
LOADED_LINE = b"transaction coordinator loaded"


def wait_until_loaded(
    log_path: Path, offset: int, proc: subprocess.Popen[bytes], deadline: float
) -> None:
    """Waits for the broker's "coordinators loaded" log line past `offset`.

    A broker listens before its coordinators have replayed their logs (group
    requests answer COORDINATOR_LOAD_IN_PROGRESS meanwhile, as Kafka's do);
    a test's first raw request should not have to retry that.
    """
    while time.monotonic() < deadline and proc.poll() is None:
        with open(log_path, "rb") as log:
            log.seek(offset)
            if LOADED_LINE in log.read():
                return
        time.sleep(0.01)

class Broker:
    """One muster broker; a context manager that starts it and stops it.

    mode: "thread" runs the broker on a daemon thread of this process (fast
    start, nothing to install); "process" runs `python -m muster serve` (can be
    killed with SIGKILL: `kill()`).
    storage: "memory" (nothing on disk, gone when the broker stops) or "disk"
    (data_dir, a temporary directory by default, kept across restarts).
    settings: broker properties by Kafka's names, over `TEST_DEFAULTS`.
    """

    def __init__(
        self,
        settings: Mapping[str, Any] | None = None,
        *,
        mode: Mode = "thread",
        storage: Storage = "memory",
        data_dir: str | os.PathLike[str] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        start_timeout: float = 30.0,
    ) -> None:
        if mode not in ("thread", "process"):
            raise ValueError(f"mode must be 'thread' or 'process', not {mode!r}")
        if storage not in ("memory", "disk"):
            raise ValueError(f"storage must be 'memory' or 'disk', not {storage!r}")
        if data_dir is not None and storage == "memory":
            raise ValueError("data_dir needs storage='disk'")
        self.settings = {**TEST_DEFAULTS, **(settings or {})}
        for name in self.settings:
            if name not in BY_NAME:
                raise ConfigError(f"unknown property {name!r} (see `muster serve --help`)")
        self.mode: Mode = mode
        self.storage: Storage = storage
        self.host = host
        self.start_timeout = start_timeout
        # A temporary directory holds a process's log, and the data when no
        # data_dir is given; close() removes it. A thread broker in memory
        # touches no disk at all.
        self._own_dir: str | None = None
        if mode == "process" or (storage == "disk" and data_dir is None):
            self._own_dir = tempfile.mkdtemp(prefix="muster-")
        self.data_dir: Path | None = None
        if storage == "disk":
            self.data_dir = Path(data_dir) if data_dir is not None else self._dir() / "data"
        # a thread broker logs through the logging module, in this process
        self.log_path = self._dir() / "muster-broker.log" if mode == "process" else None
        # A process broker needs its port before it starts; a thread broker binds
        # port 0 itself. Either way a restart comes back on the same port.
        self.port = port if port or mode == "thread" else _free_port(host)
        self._thread: Any = None
        self._proc: subprocess.Popen[bytes] | None = None

    def _dir(self) -> Path:
        assert self._own_dir is not None
        return Path(self._own_dir)

    # ------------------------------------------------------------ lifecycle

    @property
    def bootstrap_servers(self) -> str:
        """HOST:PORT for a client's bootstrap.servers."""
        if not self.port:
            raise RuntimeError("the broker has not started yet")
        host = "127.0.0.1" if self.host in ("", "0.0.0.0") else self.host
        return f"{host}:{self.port}"

    @property
    def running(self) -> bool:
        if self.mode == "thread":
            return self._thread is not None
        return self._proc is not None and self._proc.poll() is None

    def _config(self) -> BrokerConfig:
        config = BrokerConfig(self.settings)
        config.set("listeners", f"PLAINTEXT://{self.host}:{self.port}")
        config.set("muster.storage", self.storage)
        if self.data_dir is not None:
            config.set("log.dirs", str(self.data_dir))
        return config

    def start(self) -> Broker:
        """Starts the broker and returns once it answers requests."""
        if self.running:
            raise RuntimeError("the broker is already running")
        if self.mode == "thread":
            from muster.embedded.thread import BrokerThread

            thread = BrokerThread(self._config()).start(self.start_timeout)
            self._thread = thread
            self.port = thread.port
        else:
            self._start_process()
        return self

    def _start_process(self) -> None:
        argv = [sys.executable, "-m", "muster", "serve", "--listen", f"{self.host}:{self.port}"]
        settings = {**self.settings, "muster.storage": self.storage}
        if self.data_dir is not None:
            argv += ["--data-dir", str(self.data_dir)]
        for name, value in settings.items():
            shown = str(value).lower() if isinstance(value, bool) else value
            argv += ["--set", f"{name}={shown}"]
        assert self.log_path is not None
        with open(self.log_path, "ab") as log:
            log_start = log.tell()
            self._proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                code, self._proc = self._proc.returncode, None
                raise RuntimeError(
                    f"muster serve exited with {code} before listening:\n{self.log_text()[-2000:]}"
                )
            # The port refuses connections until the broker has loaded its logs
            # (it is bound, not listening, meanwhile), so a connect means ready.
            with contextlib.suppress(OSError):
                host = self.bootstrap_servers.rsplit(":", 1)[0]
                socket.create_connection((host, self.port), 0.2).close()
                if str(settings.get("muster.log.level", "INFO")).upper() in ("INFO", "DEBUG"):
                    wait_until_loaded(self.log_path, log_start, self._proc, deadline)
                return
            time.sleep(0.02)
        self._proc.kill()
        self._proc.wait()
        self._proc = None
        raise TimeoutError(f"muster serve did not listen within {self.start_timeout} s")

    def stop(self) -> None:
        """Stops the broker cleanly (SIGTERM for a process); its data stays on disk."""
        if self._thread is not None:
            thread, self._thread = self._thread, None
            thread.stop()
        if self._proc is not None:
            proc, self._proc = self._proc, None
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()

    def kill(self) -> None:
        """`kill -9` the broker process: no flush, no clean shutdown marker."""
        if self.mode != "process":
            raise RuntimeError("kill() needs Broker(mode='process'): a thread cannot be killed -9")
        if self._proc is None:
            raise RuntimeError("the broker is not running")
        proc, self._proc = self._proc, None
        proc.send_signal(signal.SIGKILL)
        proc.wait()

    def restart(self, hard: bool = False) -> Broker:
        """Stops (or with hard=True, kills) the broker and starts it again on the same
        port; with disk storage it recovers its data (memory storage starts empty)."""
        if hard:
            self.kill()
        else:
            self.stop()
        return self.start()

    def close(self) -> None:
        """Stops the broker and removes the temporary directory it made."""
        try:
            self.stop()
        finally:
            if self._own_dir is not None:
                shutil.rmtree(self._own_dir, ignore_errors=True)
                self._own_dir = None

    def __enter__(self) -> Broker:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # ------------------------------------------------------------ helpers

    def create_topic(
        self, name: str, partitions: int = 1, config: Mapping[str, str] | None = None
    ) -> None:
        """Creates a topic (CreateTopics through muster's own admin client)."""
        from muster.client.admin import Admin, NewTopic

        admin = Admin({"bootstrap.servers": self.bootstrap_servers})
        try:
            admin.create_topics([NewTopic(name, partitions, config=dict(config or {}))])
        finally:
            admin.close()

    def log_text(self) -> str:
        """What the broker process wrote (mode='process')."""
        if self.log_path is None or not self.log_path.exists():
            return ""
        return self.log_path.read_text(errors="replace")

    def __repr__(self) -> str:
        where = self.bootstrap_servers if self.port else "not started"
        return f"<muster.Broker {self.mode} {self.storage} {where}>"
