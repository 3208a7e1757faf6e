"""Kafka's Java KafkaShareConsumer (kafka-clients 4.4.0, KIP-932) against
muster and against Kafka 4.4, both with their default settings (share
groups on by default in both): two share consumers read every record once between
them; an explicit consumer's released record comes back alone with delivery
count 2 (tests/java/ShareChecks.java)."""

from __future__ import annotations

from tests.javacli.common import Pair
from tests.support.java import run_program

EXPECTED = {
    "implicit_distinct": 100,
    "implicit_deliveries": 100,
    "explicit_accepted": 100,
    "other_deliveries": 99,
    "released_delivery_counts": [1, 2],
}


def test_kafka_share_consumer_on_muster(pair: Pair) -> None:
    assert run_program("ShareChecks", pair.muster.bootstrap) == [EXPECTED]


def test_kafka_share_consumer_on_kafka_sees_the_same(pair: Pair) -> None:
    assert run_program("ShareChecks", pair.kafka.bootstrap) == [EXPECTED]
