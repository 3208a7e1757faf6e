"""Kafka's system-test workload on muster (short version of
conformance/verifiable_bounce.py, which also runs it on Kafka 4.4 for
comparison): VerifiableProducer at a fixed rate, two VerifiableConsumers in a
cooperative-sticky classic group, one bounced cleanly, one kill -9ed, then the
broker kill -9ed and restarted; every acknowledged record consumed, committed
offsets never backwards, no partition owned by two members at once."""

from __future__ import annotations

import json

from conformance.verifiable_bounce import run
from tests.support.brokers import MusterProcess


def test_verifiable_consumers_bounced_and_broker_kill_9(muster: MusterProcess) -> None:
    report = run(muster, "muster", "classic", messages=800, throughput=100)
    summary = report.summary()
    assert report.ok, json.dumps(summary, indent=1)
    assert report.acked == 800
    assert summary["events"]["offsets_committed"] > 0
    assert summary["events"]["partitions_assigned"] >= 4
