"""The differential corpus (conformance/kafka_diff, `make kafka-diff`) against one
Kafka 4.4 and one muster for the module: every scenario's answers match, or
differ only where conformance/DIFFERENCES.md says why (M == 0)."""

from __future__ import annotations

import io

from conformance.kafka_diff.registry import load
from conformance.kafka_diff.runner import report, run, summary
from tests.support.brokers import MusterProcess
from tests.support.kafka import KafkaProcess


def test_every_difference_from_kafka_is_fixed_or_documented(
    kafka_broker: KafkaProcess, shared_muster: MusterProcess
) -> None:
    scenarios = [s for _, s in sorted(load().items())]
    assert len(scenarios) >= 150
    outcomes = run(scenarios, kafka_broker.port, shared_muster.port)
    out = io.StringIO()
    line = report(outcomes, out=out)
    n, differ, _documented = summary(outcomes)
    assert n == len(scenarios)
    assert differ == 0, out.getvalue()
    assert line.startswith(f"kafka-diff: {n} scenarios, 0 differ, ")
