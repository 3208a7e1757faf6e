"""Burrow (LinkedIn's consumer-lag checker, Debian package `burrow`) and the
ZooKeeper it needs, as real processes on loopback ports, for wire tests.

Debian bookworm ships Burrow 1.2.1 (binary `/usr/bin/Burrow`, built with sarama
1.20-era code). Its ZooKeeper coordinator is mandatory: it creates its root path
at start and Burrow exits ("cannot create root path") when no ZooKeeper answers,
so the tests run a standalone ZooKeeper (Debian package `zookeeper`, 3.8) too.

Burrow's client profile takes a `kafka-version` from a fixed table (0.8 .. 2.1.0).
With "2.0.0" its sarama sends Metadata v5, ListOffsets v1 (when a partition consumer
starts) and Fetch v4 (the 0.10.2 default would send Fetch v3, below muster's v4).
Burrow's own cluster module sends ListOffsets v0 whatever the profile says.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.support.brokers import free_port, wait_for_port

BURROW = shutil.which("Burrow") or "/usr/bin/Burrow"
ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
JAVA = shutil.which("java") or "/usr/bin/java"


def _stop(proc: subprocess.Popen[bytes] | None, grace: float = 10.0) -> None:
    """SIGTERM, then SIGKILL after `grace` seconds; always reaps."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=30)


class ZooKeeperProcess:
    """A standalone ZooKeeper (ZooKeeperServerMain PORT DATADIR) on loopback."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = workdir / "zookeeper.log"

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> ZooKeeperProcess:
        assert ZOOKEEPER_JAR.exists(), (
            f"{ZOOKEEPER_JAR} missing: `make install` (or .ci/install) installs `zookeeper`"
        )
        data = self.workdir / "zookeeper-data"
        data.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [
                    JAVA,
                    "-Xmx128m",
                    "-Dzookeeper.admin.enableServer=false",
                    "-Dzookeeper.4lw.commands.whitelist=srvr",
                    "-cp",
                    str(ZOOKEEPER_JAR),
                    "org.apache.zookeeper.server.ZooKeeperServerMain",
                    str(self.port),
                    str(data),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        wait_for_port(self.port, self.proc, timeout)
        # the port opens before the server is serving; `srvr` answers only when it is
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._srvr().startswith("Zookeeper version"):
                return self
            time.sleep(0.1)
        raise TimeoutError(f"ZooKeeper on {self.address} not serving after {timeout}s")

    def _srvr(self) -> str:
        with (
            contextlib.suppress(OSError),
            socket.create_connection(("127.0.0.1", self.port), 1.0) as sock,
        ):
            sock.sendall(b"srvr")
            chunks = []
            while chunk := sock.recv(4096):
                chunks.append(chunk)
            return b"".join(chunks).decode(errors="replace")
        return ""

    def close(self) -> None:
        _stop(self.proc)
        self.proc = None


class BurrowProcess:
    """Burrow watching one cluster (`cluster`) through its kafka cluster and consumer modules."""

    def __init__(
        self,
        workdir: Path,
        bootstrap: str,
        zookeeper: str,
        cluster: str = "muster",
        kafka_version: str = "2.0.0",
    ) -> None:
        self.workdir = workdir
        self.bootstrap = bootstrap
        self.zookeeper = zookeeper
        self.cluster = cluster
        self.kafka_version = kafka_version
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.config_dir = workdir / "burrow-config"
        self.log_path = workdir / "burrow.log"

    def config(self) -> str:
        servers = json.dumps([self.bootstrap])
        return f"""\
[general]
pidfile="{self.workdir / "burrow.pid"}"

[logging]
level="debug"

[zookeeper]
servers=["{self.zookeeper}"]
timeout=6
root-path="/burrow"

[client-profile.muster]
client-id="burrow-lagchecker"
kafka-version="{self.kafka_version}"

[cluster.{self.cluster}]
class-name="kafka"
servers={servers}
client-profile="muster"
topic-refresh=5
offset-refresh=1

[consumer.{self.cluster}]
class-name="kafka"
cluster="{self.cluster}"
servers={servers}
client-profile="muster"
offsets-topic="__consumer_offsets"
start-latest=false

[storage.default]
class-name="inmemory"
workers=4
intervals=10
expire-group=604800
min-distance=1

[evaluator.default]
class-name="caching"
expire-cache=1

[httpserver.default]
address="127.0.0.1:{self.port}"
"""

    def start(self, timeout: float = 30.0) -> BurrowProcess:
        assert Path(BURROW).exists(), (
            "Burrow missing: `make install` (or .ci/install) installs Debian's `burrow`"
        )
        self.config_dir.mkdir(parents=True, exist_ok=True)
        (self.config_dir / "burrow.toml").write_text(self.config())
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [BURROW, "-config-dir", str(self.config_dir)],
                cwd=self.workdir,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        try:
            wait_for_port(self.port, self.proc, timeout)
        except (RuntimeError, TimeoutError) as exc:
            raise RuntimeError(f"Burrow did not start: {exc}\n{self.log_text()[-4000:]}") from exc
        return self

    def get(self, path: str) -> tuple[int, Any]:
        """GET http://burrow/path -> (status, decoded JSON or None)."""
        url = f"http://127.0.0.1:{self.port}{path}"
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as err:
            body = err.read()
            with contextlib.suppress(ValueError):
                return err.code, json.loads(body)
            return err.code, None

    def close(self) -> None:
        _stop(self.proc)
        self.proc = None

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
