"""DeleteRecords through confluent-kafka's AdminClient (what
kafka-delete-records.sh does): the low watermark moves, consumers from the
beginning start there, the new start survives kill -9, bad offsets get
Kafka's error codes."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.support.brokers import MusterProcess
from tests.wire.clients import confluent_produce, create_topic


def _delete(bootstrap: str, topic: str, partition: int, offset: int) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.delete_records([TopicPartition(topic, partition, offset)])
    (future,) = futures.values()
    return int(future.result(timeout=30).low_watermark)


def _first_offset(bootstrap: str, topic: str) -> tuple[int, tuple[int, int]]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader", "enable.auto.commit": False}
    )
    try:
        consumer.assign([TopicPartition(topic, 0, -2)])  # OFFSET_BEGINNING
        for _ in range(30):
            msg = consumer.poll(1)
            if msg is not None and msg.error() is None:
                marks = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
                return msg.offset(), marks
        raise AssertionError("no message consumed")
    finally:
        consumer.close()


def test_delete_records_moves_the_low_watermark_durably(muster: MusterProcess) -> None:
    topic = "delete-records"
    create_topic(muster.bootstrap, topic, partitions=1)
    confluent_produce(muster.bootstrap, topic, [(0, None, b"v%d" % i, []) for i in range(50)])
    assert _delete(muster.bootstrap, topic, 0, 20) == 20
    first, marks = _first_offset(muster.bootstrap, topic)
    assert first == 20 and marks == (20, 50)
    with pytest.raises(KafkaException) as err:
        _delete(muster.bootstrap, topic, 0, 51)  # above the high watermark
    assert err.value.args[0].name() == "OFFSET_OUT_OF_RANGE"
    muster.restart(hard=True)
    first, marks = _first_offset(muster.bootstrap, topic)
    assert first == 20 and marks == (20, 50)
    assert _delete(muster.bootstrap, topic, 0, -1) == 50  # everything below the end
