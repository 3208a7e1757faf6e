# runs as is with `pip install muster pytest confluent-kafka`
# (examples/pytest-sample/tests/test_readme.py; muster depends on no third-party client)
from confluent_kafka import Consumer, Producer


def first_record(bootstrap, topic, group):
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    msg = None
    while msg is None or msg.error():
        msg = consumer.poll(1.0)
    consumer.close()
    return msg.key(), msg.value()


def test_roundtrip(muster_broker):
    producer = Producer({"bootstrap.servers": muster_broker.bootstrap_servers})
    producer.produce("orders", b"42", key=b"ada")
    assert producer.flush(10) == 0
    assert first_record(muster_broker.bootstrap_servers, "orders", "billing") == (b"ada", b"42")


def test_acknowledged_writes_survive_kill_9(muster_broker_factory):
    broker = muster_broker_factory(
        {"auto.create.topics.enable": False},  # any broker property, Kafka's names
        mode="process",  # a subprocess, so kill() is a real kill -9
        storage="disk",  # a temporary data directory, kept across restarts
    )
    broker.create_topic("payments", partitions=3)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "acks": "all"})
    producer.produce("payments", b"10", key=b"bob")
    assert producer.flush(10) == 0

    broker.kill()
    broker.start()  # same port, recovers from its log
    assert first_record(broker.bootstrap_servers, "payments", "audit") == (b"bob", b"10")
