"""Broker restarts: connections die under the clients, which reconnect,
rediscover the coordinator and carry on."""

from __future__ import annotations

import time

import pytest

from muster.client import Consumer, Producer
from tests.support.brokers import MusterProcess
from tests.wire.clients import create_topic


@pytest.fixture
def own_broker(tmp_path):
    broker = MusterProcess(tmp_path / "data").start()
    try:
        yield broker
    finally:
        broker.close()


def test_clients_survive_a_broker_restart(own_broker, topic_name):
    bootstrap = own_broker.bootstrap
    create_topic(bootstrap, topic_name, 2)
    producer = Producer({"bootstrap.servers": bootstrap, "retry.backoff.ms": 50})
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"{topic_name}-g",
            "auto.offset.reset": "earliest",
            "heartbeat.interval.ms": 200,
            "auto.commit.interval.ms": 100,
            "retry.backoff.ms": 50,
        }
    )
    seen: set[bytes] = set()
    try:
        consumer.subscribe([topic_name])
        for i in range(50):
            producer.produce(topic_name, b"a%d" % i)
        assert producer.flush(10) == 0
        deadline = time.monotonic() + 20
        while len(seen) < 50 and time.monotonic() < deadline:
            seen.update(r.value for r in consumer.poll(0.1))
        assert len(seen) == 50
        own_broker.restart(hard=True)  # kill -9 (a graceful stop waits on open clients)
        futures = [producer.produce(topic_name, b"b%d" % i) for i in range(50)]
        assert producer.flush(30) == 0
        assert all(f.result().offset >= 0 for f in futures)
        deadline = time.monotonic() + 30
        while len(seen) < 100 and time.monotonic() < deadline:
            seen.update(r.value for r in consumer.poll(0.1))
        assert len(seen) == 100
        assert consumer.member_state() == "STABLE"
    finally:
        consumer.close()
        producer.close()
