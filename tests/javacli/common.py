"""What the tests of tests/javacli share: the settings both brokers get, the
pair of brokers, and running one check on both at once."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from tests.support.brokers import MusterProcess
from tests.support.kafka import KafkaProcess

SETTINGS = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS",
}


@dataclass
class Pair:
    muster: MusterProcess
    kafka: KafkaProcess

    def items(self) -> list[tuple[str, MusterProcess | KafkaProcess]]:
        return [("muster", self.muster), ("kafka", self.kafka)]


def both(pair: Pair, run: Callable[..., Any], *args: Any) -> dict[str, Any]:
    """run(bootstrap, *args) on muster and on Kafka at once: {"muster": .., "kafka": ..}."""
    with ThreadPoolExecutor(2) as pool:
        futures = {name: pool.submit(run, broker.bootstrap, *args) for name, broker in pair.items()}
        return {name: f.result() for name, f in futures.items()}
