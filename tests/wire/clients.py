"""Produce/consume helpers over third-party clients, shared by the wire tests."""

from __future__ import annotations

import time
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


@dataclass(frozen=True)
class Msg:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...]


def create_topic(bootstrap: str, name: str, partitions: int = 1, **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, partitions, 1, config=configs)])
    futures[name].result(timeout=15)


def confluent_produce(
    bootstrap: str,
    topic: str,
    messages: list[tuple[int, bytes | None, bytes | None, list[tuple[str, bytes]]]],
    **conf: object,
) -> list[tuple[int, int]]:
    """Produces (partition, key, value, headers) and returns (partition, offset) acked."""
    acked: list[tuple[int, int]] = []
    errors: list[object] = []

    def on_delivery(err: object, msg: object) -> None:
        if err is not None:
            errors.append(err)
        else:
            acked.append((msg.partition(), msg.offset()))  # type: ignore[attr-defined]

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **conf})
    for partition, key, value, headers in messages:
        producer.produce(
            topic,
            value=value,
            key=key,
            partition=partition,
            headers=headers,
            on_delivery=on_delivery,
        )
        producer.poll(0)
    remaining = producer.flush(30)
    assert remaining == 0, f"{remaining} messages not delivered"
    assert not errors, errors
    return acked


def confluent_consume_all(
    bootstrap: str, topic: str, partitions: int, expected: int, timeout: float = 30.0
) -> list[Msg]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "unused-assign-mode",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: list[Msg] = []
    deadline = time.monotonic() + timeout
    try:
        while len(out) < expected and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                raise KafkaException(msg.error())
            out.append(
                Msg(
                    msg.partition(),
                    msg.offset(),
                    msg.key(),
                    msg.value(),
                    tuple((k, v) for k, v in (msg.headers() or [])),
                )
            )
    finally:
        consumer.close()
    return out


def by_partition(msgs: list[Msg]) -> dict[int, list[Msg]]:
    result: dict[int, list[Msg]] = {}
    for m in msgs:
        result.setdefault(m.partition, []).append(m)
    return result
