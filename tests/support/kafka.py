"""Apache Kafka 4.4 as the reference broker: a single-node KRaft Kafka (combined
broker and controller) from the jars conformance/kafka/pom.xml declares, on free
loopback ports in a folder of its own; started, stopped, `kill -9`ed and
restarted like MusterProcess. Serves pytest (tests/conftest.py's `kafka`
fixtures), bench/ and conformance/.

    python -m tests.support.kafka     # resolves the jars if missing, prints their folder
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from tests.support.brokers import ControlledProcess
from tests.support.peers import REPO_ROOT, build_lock, cache_dir

KAFKA_VERSION = "4.4.0"
POM = REPO_ROOT / "conformance" / "kafka" / "pom.xml"
LOG4J = REPO_ROOT / "conformance" / "kafka" / "log4j2.properties"

# What a test comparing Kafka with muster sets alike on both (MusterProcess's defaults).
GROUP_SETTINGS = {
    "group.initial.rebalance.delay.ms": "0",
}

# A single node: every internal topic has one replica.
SINGLE_NODE = {
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "auto.create.topics.enable": "true",
}


def kafka_lib() -> Path:
    """The folder of Kafka 4.4.0's jars (broker, kafka-tools, clients), copied
    from ~/.m2 by Maven on first use (~30 s the first time; .ci/install does it
    ahead)."""
    lib = cache_dir() / "kafka" / "lib"
    return maven_copy(POM, lib, f"kafka_2.13-{KAFKA_VERSION}.jar", "kafka.lib.dir", "kafka")


def maven_copy(pom: Path, lib: Path, marker: str, lib_property: str, name: str) -> Path:
    """`lib` filled with the jars `pom` declares (`mvn dependency:copy-dependencies`,
    the pom's output folder given as -D`lib_property`), unless the jar `marker`
    is there already and newer than the pom; one process at a time (`name`'s lock)."""

    def fresh() -> bool:
        return (lib / marker).exists() and lib.stat().st_mtime >= pom.stat().st_mtime

    if fresh():
        return lib
    with build_lock(name):
        if not fresh():
            cmd = ["mvn", "-q", "-B", "-f", str(pom), "dependency:copy-dependencies"]
            cmd.append(f"-D{lib_property}={lib}")
            done = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if done.returncode != 0 or not (lib / marker).exists():
                raise RuntimeError(
                    f"resolving {pom} with Maven failed ({done.returncode}):\n"
                    f"{(done.stdout + done.stderr)[-2000:]}"
                )
            os.utime(lib)
    return lib


def classpath() -> str:
    return f"{kafka_lib()}/*"


def java_command(main_class: str, *args: str, heap: str = "256m") -> list[str]:
    """`java` running one of Kafka's main classes (a tool, the broker, the
    verifiable producer/consumer) on the reference classpath."""
    return [
        "java",
        f"-Xmx{heap}",
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",
        "-Djava.awt.headless=true",
        "-cp",
        classpath(),
        main_class,
        *args,
    ]


def run_tool(
    main_class: str, *args: str, timeout: float = 120.0
) -> subprocess.CompletedProcess[str]:
    """One of Kafka's command-line tools, as `kafka-*.sh` runs it, e.g.
    run_tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", b, "--list")."""
    cmd = java_command(main_class, *args)
    cmd.insert(1, f"-Dlog4j2.configurationFile={LOG4J}")
    cmd.insert(1, "-Dkafka.log.file=/dev/null")
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class KafkaProcess(ControlledProcess):
    """A single-node KRaft Kafka 4.4 in `work_dir` (a temporary folder when not
    given): `kafka-storage format` once, then `kafka.Kafka server.properties`.
    `settings` are broker properties, Kafka's names, over SINGLE_NODE and
    GROUP_SETTINGS."""

    def __init__(
        self,
        work_dir: Path | None = None,
        settings: dict[str, str] | None = None,
        heap: str = "768m",
    ) -> None:
        self.work_dir = Path(work_dir or tempfile.mkdtemp(prefix="kafka-ref-"))
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.port = _free_port()
        self.controller_port = _free_port()
        self.heap = heap
        self.settings = {**SINGLE_NODE, **GROUP_SETTINGS, **(settings or {})}
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = self.work_dir / "kafka.log"
        self.out_path = self.work_dir / "kafka.out"
        self.formatted = False
        self.stop_timeout = 60.0

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def properties(self) -> dict[str, str]:
        return {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},"
            f"CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(self.work_dir / "data"),
            **self.settings,
        }

    def _write_properties(self) -> Path:
        path = self.work_dir / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in self.properties().items()))
        return path

    def _format(self, props: Path) -> None:
        import base64

        cid = "-"
        while cid.startswith("-"):  # kafka-storage would read "-..." as an option (1 in 64)
            cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        cmd = java_command("kafka.tools.StorageTool", "format", "-t", cid, "-c", str(props))
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"kafka-storage format failed:\n{done.stdout}{done.stderr}")
        self.formatted = True

    def command(self) -> list[str]:
        """Write server.properties, format the storage the first time, and
        return the broker's command line (bench/ runs it as its own Broker)."""
        props = self._write_properties()
        if not self.formatted:
            self._format(props)
        cmd = java_command("kafka.Kafka", str(props), heap=self.heap)
        cmd.insert(1, f"-Dlog4j2.configurationFile={LOG4J}")
        cmd.insert(1, f"-Dkafka.log.file={self.log_path}")
        return cmd

    def start(self, timeout: float = 90.0) -> KafkaProcess:
        cmd = self.command()
        log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
        with open(self.out_path, "ab") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        self._wait_started(log_start, timeout)
        return self

    def _wait_started(self, log_start: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        assert self.proc is not None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"Kafka exited with {self.proc.returncode} before it served; "
                    f"see {self.log_path} and {self.out_path}"
                )
            if self.log_path.exists():
                with open(self.log_path, "rb") as log:
                    log.seek(log_start)
                    if b"Kafka Server started" in log.read():
                        return
            time.sleep(0.1)
        raise TimeoutError(f"Kafka did not start within {timeout}s; see {self.log_path}")


if __name__ == "__main__":
    print(kafka_lib())
    sys.exit(0)
