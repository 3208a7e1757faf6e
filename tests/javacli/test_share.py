"""Kafka's Java KafkaShareConsumer (kafka-clients 4.4.0, KIP-932) against
muster with `muster.share.enable=true` and against Kafka 4.4 (share groups
on by default there): two share consumers read every record once between
them; an explicit consumer's released record comes back alone with delivery
count 2 (tests/java/ShareChecks.java)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.javacli.common import SETTINGS, Pair
from tests.support.brokers import MusterProcess
from tests.support.java import run_program

EXPECTED = {
    "implicit_distinct": 100,
    "implicit_deliveries": 100,
    "explicit_accepted": 100,
    "other_deliveries": 99,
    "released_delivery_counts": [1, 2],
}


@pytest.fixture(scope="module")
def share_muster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MusterProcess]:
    """The package's muster serves no share groups (the default): its own."""
    data: Path = tmp_path_factory.mktemp("muster-share") / "data"
    muster = MusterProcess(data, settings={**SETTINGS, "muster.share.enable": "true"})
    muster.start()
    try:
        yield muster
    finally:
        muster.close()


def test_kafka_share_consumer_on_muster(share_muster: MusterProcess) -> None:
    assert run_program("ShareChecks", share_muster.bootstrap) == [EXPECTED]


def test_kafka_share_consumer_on_kafka_sees_the_same(pair: Pair) -> None:
    assert run_program("ShareChecks", pair.kafka.bootstrap) == [EXPECTED]
