"""Tests of the order service, each against a real Kafka-protocol broker."""

import uuid

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from orders import place_orders, total_by_customer

ORDERS = [
    {"customer": "ada", "amount": 30},
    {"customer": "bob", "amount": 5},
    {"customer": "ada", "amount": 12},
]


def test_totals_per_customer(muster_broker):
    topic = f"orders-{uuid.uuid4().hex[:8]}"  # the session broker is shared
    place_orders(muster_broker.bootstrap_servers, topic, ORDERS)
    totals = total_by_customer(muster_broker.bootstrap_servers, topic, "billing", len(ORDERS))
    assert totals == {"ada": 42, "bob": 5}


def test_session_settings_apply(muster_broker):
    topic = f"orders-{uuid.uuid4().hex[:8]}"
    place_orders(muster_broker.bootstrap_servers, topic, ORDERS[:1])  # auto-created
    metadata = AdminClient({"bootstrap.servers": muster_broker.bootstrap_servers}).list_topics(
        topic, timeout=10
    )
    assert len(metadata.topics[topic].partitions) == 3  # num.partitions from conftest.py


def test_missing_topic_is_an_error_when_auto_create_is_off(muster_broker_factory):
    broker = muster_broker_factory({"auto.create.topics.enable": False})
    broker.create_topic("orders", partitions=2)
    place_orders(broker.bootstrap_servers, "orders", ORDERS)

    errors = []
    producer = Producer(
        {"bootstrap.servers": broker.bootstrap_servers, "topic.metadata.propagation.max.ms": 500}
    )
    producer.produce("other", b"x", on_delivery=lambda err, msg: errors.append(err))
    producer.flush(10)
    assert [e.code() for e in errors] == [KafkaError.UNKNOWN_TOPIC_OR_PART]


def test_committed_progress_survives_kill_9(muster_broker_factory):
    broker = muster_broker_factory(mode="process", storage="disk")
    place_orders(broker.bootstrap_servers, "orders", ORDERS)
    total_by_customer(broker.bootstrap_servers, "orders", "billing", len(ORDERS))

    broker.kill()  # SIGKILL: no clean shutdown
    broker.start()  # same port, same data directory

    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "billing"})
    try:
        committed = consumer.committed([TopicPartition("orders", 0)], timeout=10)
    finally:
        consumer.close()
    assert committed[0].offset == len(ORDERS)
    place_orders(broker.bootstrap_servers, "orders", [{"customer": "cy", "amount": 1}])
    assert total_by_customer(broker.bootstrap_servers, "orders", "billing", 1) == {"cy": 1}
