"""The reference Kafka 4.4 itself: it starts from Maven's jars, serves a real
client, keeps an acknowledged record and a committed offset across `kill -9`."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from tests.support.kafka import KafkaProcess, run_tool


def test_kafka_serves_keeps_commits_across_kill_9_and_its_tools_run(
    kafka_broker: KafkaProcess,
) -> None:
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap, "acks": "all"})
    producer.produce("ref-orders", b"42", key=b"ada")
    assert producer.flush(30) == 0

    consumer = Consumer(
        {
            "bootstrap.servers": kafka_broker.bootstrap,
            "group.id": "ref-billing",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe(["ref-orders"])
    msg = None
    for _ in range(60):
        msg = consumer.poll(1.0)
        if msg is not None and not msg.error():
            break
    assert msg is not None and msg.value() == b"42"
    consumer.commit(msg, asynchronous=False)
    consumer.close()

    kafka_broker.restart(hard=True)

    reader = Consumer({"bootstrap.servers": kafka_broker.bootstrap, "group.id": "ref-billing"})
    # a restarted Kafka answers NOT_COORDINATOR until it has loaded its offsets
    # partition again; librdkafka passes that up instead of retrying
    deadline = time.monotonic() + 60
    while True:
        try:
            committed = reader.committed([TopicPartition("ref-orders", 0)], timeout=30)
            break
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.NOT_COORDINATOR or time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    reader.close()
    assert committed[0].offset == 1

    listed = run_tool(
        "org.apache.kafka.tools.TopicCommand",
        "--bootstrap-server",
        kafka_broker.bootstrap,
        "--list",
    )
    assert listed.returncode == 0, listed.stderr
    assert "ref-orders" in listed.stdout.split()
