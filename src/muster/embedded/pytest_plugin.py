"""pytest fixtures for a real Kafka-protocol broker: installed with muster
(entry point `pytest11`), so a test suite only has to `pip install muster`.

    def test_roundtrip(muster_broker):
        producer = Producer({"bootstrap.servers": muster_broker.bootstrap_servers})

    def test_recovery(muster_broker_factory):
        broker = muster_broker_factory(mode="process", storage="disk")
        ...
        broker.kill()          # kill -9
        broker.start()

Override `muster_broker_settings` (a session fixture) in a conftest.py to
change the session broker's properties; the factory takes its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from muster.embedded.broker import Broker


@pytest.fixture(scope="session")
def muster_broker_settings() -> dict[str, Any]:
    """Broker properties (Kafka's names) of `muster_broker`, over the test defaults."""
    return {}


@pytest.fixture(scope="session")
def muster_broker(muster_broker_settings: dict[str, Any]) -> Iterator[Broker]:
    """One broker for the whole session: in a thread, memory storage, a free port.

    Tests sharing it should use their own topic and group names.
    """
    with Broker(muster_broker_settings) as broker:
        yield broker


@pytest.fixture
def muster_broker_factory() -> Iterator[Callable[..., Broker]]:
    """Makes fresh, started brokers for one test; all are closed after it.

    factory(settings=None, *, mode="thread"|"process", storage="memory"|"disk",
    data_dir=None, host="127.0.0.1", port=0) -> Broker
    """
    made: list[Broker] = []

    def factory(settings: dict[str, Any] | None = None, **options: Any) -> Broker:
        broker = Broker(settings, **options)
        made.append(broker)
        return broker.start()

    try:
        yield factory
    finally:
        for broker in reversed(made):
            broker.close()
