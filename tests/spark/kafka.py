"""Test data made and checked with confluent-kafka (librdkafka): an
independent client, so the source is proven against data it did not write."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from tests.support.brokers import TansuProcess


@dataclass(frozen=True)
class Produced:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int
    headers: tuple[tuple[str, bytes | None], ...] | None


def read_sorted(spark: Any, bootstrap: str, topic: str, **options: str) -> list[Any]:
    """A batch read of `topic` through format("muster"), rows by partition and offset."""
    df = batch_reader(spark, bootstrap, topic, "muster", **options)
    return df.orderBy("partition", "offset").collect()  # type: ignore[no-any-return]


def batch_reader(spark: Any, bootstrap: str, topic: str, fmt: str, **options: str) -> Any:
    """The DataFrame of a batch read of `topic` through format(`fmt`)."""
    reader = (
        spark.read.format(fmt)
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
    )
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def create_topic(bootstrap: str, name: str, partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(timeout=30)


def add_partitions(bootstrap: str, name: str, total: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_partitions([NewPartitions(name, total)])[name].result(timeout=30)


def produce_to(broker: Any, topic: str, records: list[dict[str, Any]]) -> list[Produced]:
    """`produce` on a test broker. Tansu answers ListOffsets(latest) with the
    last batch's base offset + 1, not the offset after its last record, so a
    bounded read of multi-record batches stops short there (Spark's own Kafka
    source would too): on Tansu every record goes in a batch of its own."""
    one_each = isinstance(broker, TansuProcess)
    return produce(broker.bootstrap, topic, records, batch_per_record=one_each)


def produce(
    bootstrap: str,
    topic: str,
    records: list[dict[str, Any]],
    compression: str = "none",
    batch_per_record: bool = False,
) -> list[Produced]:
    """Produces `records` (dicts of produce() arguments) and returns what the
    broker acknowledged, in production order."""
    producer = Producer(
        {"bootstrap.servers": bootstrap, "compression.type": compression, "linger.ms": 5}
    )
    out: list[Produced] = []
    errors: list[Any] = []
    # delivery reports do not carry headers: take them from what was sent
    sent_headers = {r.get("value"): r.get("headers") for r in records}

    def report(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(err)
            return
        headers = sent_headers.get(msg.value())
        out.append(
            Produced(
                msg.topic(),
                msg.partition(),
                msg.offset(),
                msg.key(),
                msg.value(),
                msg.timestamp()[1],
                tuple(headers) if headers else None,
            )
        )

    for r in records:
        producer.produce(topic, on_delivery=report, **r)
        if batch_per_record:
            producer.flush(30)
    assert producer.flush(30) == 0
    if errors:
        raise KafkaException(errors[0])
    return out


def records(n: int, partitions: int, prefix: str = "", **extra: Any) -> list[dict[str, Any]]:
    return [
        {
            "key": f"{prefix}k{i}".encode(),
            "value": f"{prefix}v{i}".encode(),
            "partition": i % partitions,
            **extra,
        }
        for i in range(n)
    ]


def consume_all(bootstrap: str, topic: str, partitions: int, expect: int) -> list[Any]:
    conf = {"bootstrap.servers": bootstrap, "group.id": "check", "enable.auto.commit": False}
    consumer = Consumer(conf)
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: list[Any] = []
    try:
        for _ in range(60):
            for msg in consumer.consume(num_messages=1000, timeout=0.5):
                if msg.error() is None:
                    out.append(msg)
            if len(out) >= expect:
                break
    finally:
        consumer.close()
    return out


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        tps = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], 10)
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in tps}
