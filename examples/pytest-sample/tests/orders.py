"""The code under test: a tiny order service that writes and reads a Kafka topic."""

import json

from confluent_kafka import Consumer, Producer


def place_orders(bootstrap: str, topic: str, orders: list[dict]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for order in orders:
        producer.produce(topic, json.dumps(order).encode(), key=order["customer"].encode())
    if producer.flush(10):
        raise RuntimeError("orders not acknowledged")


def total_by_customer(bootstrap: str, topic: str, group: str, expected: int) -> dict[str, int]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    totals: dict[str, int] = {}
    seen = 0
    try:
        for _ in range(200):
            if seen == expected:
                break
            msg = consumer.poll(0.2)
            if msg is None or msg.error():
                continue
            order = json.loads(msg.value())
            totals[order["customer"]] = totals.get(order["customer"], 0) + order["amount"]
            seen += 1
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return totals
