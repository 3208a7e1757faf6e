"""`muster transactions list|describe` against a broker with a transaction in
progress: the columns kafka-transactions.sh prints, the producer's partition."""

from __future__ import annotations

import json

from confluent_kafka import Producer

from tests.support.brokers import MusterProcess


def test_list_and_describe_an_ongoing_transaction(shared_muster: MusterProcess, cli) -> None:  # type: ignore[no-untyped-def]
    producer = Producer(
        {"bootstrap.servers": shared_muster.bootstrap, "transactional.id": "cli-txn"}
    )
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce("cli-txn-topic", b"x", partition=0)
    assert producer.flush(30) == 0
    try:
        b = ("--bootstrap-server", shared_muster.bootstrap)
        listed = cli("transactions", "list", *b)
        assert listed.exit_code == 0, listed.output
        assert "TransactionalId" in listed.output and "TransactionState" in listed.output
        row = next(line for line in listed.output.splitlines() if "cli-txn" in line)
        assert "Ongoing" in row
        described = cli("transactions", "describe", "--transactional-id", "cli-txn", "--json", *b)
        assert described.exit_code == 0, described.output
        body = json.loads(described.output)
        assert body["state"] == "Ongoing" and body["partitions"] == ["cli-txn-topic-0"]
        assert body["start_ms"] > 0 and body["timeout_ms"] > 0
        missing = cli("transactions", "describe", "--transactional-id", "no-such-txn", *b)
        assert missing.exit_code != 0
    finally:
        producer.abort_transaction(30)
