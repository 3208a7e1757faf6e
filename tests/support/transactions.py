"""Writing transactions with confluent-kafka's transactional Producer, for the
read_committed tests of muster's consumer and Spark source."""

from __future__ import annotations

import uuid
from typing import Any

from confluent_kafka import Producer

TIMEOUT = 20.0


class Txn:
    """One transactional producer (its own transactional.id, so its own
    producer id): `write` produces and flushes inside a transaction, `commit` /
    `abort` end it. Records are acked (written to the log) before the end."""

    def __init__(self, bootstrap: str, name: str = "txn", **conf: Any) -> None:
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "transactional.id": f"{name}-{uuid.uuid4().hex[:8]}",
                "linger.ms": 5,
                **conf,
            }
        )
        self.producer.init_transactions(TIMEOUT)

    def begin(self) -> Txn:
        self.producer.begin_transaction()
        return self

    def write(self, topic: str, values: list[bytes], partition: int = 0) -> dict[bytes, int]:
        """Produces `values` to one partition and flushes; value -> offset."""
        acked: dict[bytes, int] = {}
        errors: list[object] = []

        def on_delivery(err: object, msg: Any) -> None:
            if err is not None:
                errors.append(err)
            else:
                acked[msg.value()] = msg.offset()

        for value in values:
            self.producer.produce(topic, value=value, partition=partition, on_delivery=on_delivery)
        assert self.producer.flush(TIMEOUT) == 0, "transactional records not delivered"
        assert not errors, errors
        return acked

    def commit(self) -> None:
        self.producer.commit_transaction(TIMEOUT)

    def abort(self) -> None:
        self.producer.abort_transaction(TIMEOUT)


def values(prefix: str, n: int) -> list[bytes]:
    return [f"{prefix}-{i}".encode() for i in range(n)]


def plain_write(bootstrap: str, topic: str, vals: list[bytes], partition: int = 0) -> None:
    """Non-transactional records (no producer id), flushed."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for value in vals:
        producer.produce(topic, value=value, partition=partition)
    assert producer.flush(TIMEOUT) == 0
