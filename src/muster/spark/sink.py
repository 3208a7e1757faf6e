"""The `muster` data source's writers (batch and streaming), at-least-once.

Each task produces its rows with muster's own Producer (acks=all), flushes,
and returns its commit message only once every delivery report came back
without an error: a failed delivery fails the task, and Spark retries or fails
the job. No third-party Kafka client is needed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import BinaryType, IntegerType, StringType, StructType

from muster.spark.options import security_conf

_FLUSH_S = 60.0
PASSED_THROUGH = frozenset(
    {
        "client.id",
        "linger.ms",
        "batch.size",
        "compression.type",
        "enable.idempotence",
        "max.in.flight.requests.per.connection",
        "message.max.bytes",
        "request.timeout.ms",
        "delivery.timeout.ms",
        "retries",
        "retry.backoff.ms",
    }
)


class DeliveryError(RuntimeError):
    """At least one record of the task was not acknowledged by the broker."""


@dataclass(frozen=True)
class SinkOptions:
    bootstrap: str
    topic: str | None
    producer_conf: tuple[tuple[str, str], ...]


@dataclass
class Delivered(WriterCommitMessage):
    records: int


def parse_sink(options: Mapping[str, str], schema: StructType) -> SinkOptions:
    """Checks options and the DataFrame's columns as Spark's Kafka sink does."""
    opts = {str(k).lower(): str(v) for k, v in options.items()}
    bootstrap = opts.get("kafka.bootstrap.servers", "").strip()
    if not bootstrap:
        raise ValueError(
            "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka producer"
        )
    names = {f.name.lower(): f.dataType for f in schema.fields}
    topic = opts.get("topic")
    if topic is None and "topic" not in names:
        raise ValueError(
            "topic option required when no 'topic' attribute is present. "
            "Use the topic option for setting a topic."
        )
    if "value" not in names:
        raise ValueError("Required attribute 'value' not found")
    for col, allowed in (
        ("key", (StringType, BinaryType)),
        ("value", (StringType, BinaryType)),
        ("topic", (StringType,)),
        ("partition", (IntegerType,)),
    ):
        if col in names and not isinstance(names[col], allowed):
            kinds = " or ".join(a.__name__.replace("Type", "").lower() for a in allowed)
            raise ValueError(f"{col} attribute type must be a {kinds}")
    # Producer settings both Java and librdkafka understand pass through; others
    # (Java-only serializers, max.block.ms ...) are ignored rather than refused by
    # librdkafka. acks is not among them: acks=all is what makes a commit message
    # mean "delivered".
    conf = tuple(
        (k[len("kafka.") :].lower(), v)
        for k, v in sorted(options.items())
        if k.lower()[len("kafka.") :] in PASSED_THROUGH and k.lower().startswith("kafka.")
    )
    return SinkOptions(bootstrap, topic, conf + security_conf(opts))


def _column(batch: pa.RecordBatch, name: str) -> list[Any] | None:
    for i, field in enumerate(batch.schema):
        if field.name.lower() == name:
            return batch.column(i).to_pylist()
    return None


def _bytes(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    return bytes(value)


def produce_all(opts: SinkOptions, batches: Iterator[pa.RecordBatch]) -> Delivered:
    from muster.client.producer import Producer

    conf: dict[str, Any] = {
        "linger.ms": 5,
        "batch.size": 1_000_000,
        **dict(opts.producer_conf),
        "bootstrap.servers": opts.bootstrap,
        "acks": "all",
    }
    producer = Producer(conf)
    failures: list[str] = []
    delivered = 0

    def report(err: Any, _msg: Any) -> None:
        nonlocal delivered
        if err is not None:
            failures.append(str(err))
        else:
            delivered += 1

    sent = 0
    for batch in batches:
        n = batch.num_rows
        keys = _column(batch, "key") or [None] * n
        values = _column(batch, "value") or [None] * n
        topics = [opts.topic] * n if opts.topic else _column(batch, "topic")
        partitions = _column(batch, "partition") or [None] * n
        headers = _column(batch, "headers") or [None] * n
        assert topics is not None
        for key, value, topic, partition, hdrs in zip(
            keys, values, topics, partitions, headers, strict=True
        ):
            if topic is None:
                raise ValueError(
                    "null topic present in the data. Use the topic option for setting a topic."
                )
            kwargs: dict[str, Any] = {"key": _bytes(key), "value": _bytes(value)}
            if partition is not None:
                kwargs["partition"] = partition
            if hdrs:
                kwargs["headers"] = [(h["key"], _bytes(h["value"])) for h in hdrs]
            while True:
                try:
                    producer.produce(topic, on_delivery=report, **kwargs)
                    break
                except BufferError:  # local queue full: let deliveries drain
                    producer.poll(0.1)
            sent += 1
        producer.poll(0)
        if failures:
            break
    remaining = producer.flush(_FLUSH_S)
    producer.close(1.0)
    if failures or remaining or delivered != sent:
        first = failures[0] if failures else f"{remaining} records unacknowledged"
        raise DeliveryError(
            f"{sent - delivered} of {sent} records not delivered to {opts.bootstrap}: {first}"
        )
    return Delivered(delivered)


class BatchWriter(DataSourceArrowWriter):
    def __init__(self, opts: SinkOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return produce_all(self.opts, iterator)


class StreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, opts: SinkOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return produce_all(self.opts, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Every task's records were acknowledged before it returned: nothing to do."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Records already acknowledged stay (at-least-once): nothing to undo."""
