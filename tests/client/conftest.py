from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from tests.support.brokers import MusterProcess, TansuProcess

_names = itertools.count()


@pytest.fixture(scope="module")
def muster_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MusterProcess]:
    broker = MusterProcess(tmp_path_factory.mktemp("client") / "data").start()
    try:
        yield broker
    finally:
        broker.close()


@pytest.fixture(params=["muster", "tansu"])
def broker(request: pytest.FixtureRequest) -> MusterProcess | TansuProcess:
    """The same test against muster and against the third-party broker Tansu."""
    return request.getfixturevalue(f"{request.param}_broker")


@pytest.fixture
def topic_name(request: pytest.FixtureRequest) -> str:
    base = request.node.name.split("[")[0].replace("test_", "")[:30]
    return f"{base}-{next(_names)}"


def session_conf(broker: object) -> dict[str, object]:
    """Tansu holds each JoinGroup for about half the session timeout."""
    if isinstance(broker, TansuProcess):
        return {"session.timeout.ms": 6000, "heartbeat.interval.ms": 500}
    return {"session.timeout.ms": 10000, "heartbeat.interval.ms": 500}
