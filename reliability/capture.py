"""Real client sessions' request frames, recorded by a tiny TCP proxy: the
fuzzer's seeds. confluent-kafka (producer, idempotent and transactional,
consumer group with commits, admin) and kafka-python (producer, group
consumer, admin) talk to a muster broker through the proxy; every frame they
send is kept (without its 4-byte length prefix)."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from collections.abc import Iterator

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer

from tests.support.brokers import free_port


class RecordingProxy:
    """Forwards 127.0.0.1:port to the broker; records client->broker frames.

    Clients connect to the address Metadata gives after bootstrapping, so the
    broker must advertise the proxy (`advertised.listeners`) for every request
    to pass through it."""

    def __init__(self, broker_port: int) -> None:
        self.broker_port = broker_port
        self.port = free_port()
        self.frames: list[bytes] = []
        self._lock = threading.Lock()
        self._server = socket.create_server(("127.0.0.1", self.port))
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stop:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.broker_port))
            threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, record: bool) -> None:
        buf = b""
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
                if not record:
                    continue
                buf += data
                while len(buf) >= 4:
                    (size,) = struct.unpack_from(">i", buf)
                    if len(buf) < 4 + size:
                        break
                    with self._lock:
                        self.frames.append(buf[4 : 4 + size])
                    buf = buf[4 + size :]
        for sock in (src, dst):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._stop = True
        self._server.close()


def _confluent_session(bootstrap: str) -> None:
    conf = {"bootstrap.servers": bootstrap}
    admin = AdminClient(conf)
    admin.create_topics([NewTopic("seed-a", 3, 1), NewTopic("seed-b", 1, 1)])["seed-a"].result(30)
    admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, "seed-a")])
    producer = Producer({**conf, "enable.idempotence": True, "linger.ms": 1})
    for i in range(30):
        producer.produce("seed-a", key=str(i).encode(), value=b"v" * i, headers=[("h", b"x")])
    producer.flush(30)
    txn = Producer({**conf, "transactional.id": "seed-txn"})
    txn.init_transactions(30)
    txn.begin_transaction()
    txn.produce("seed-b", b"in-txn")
    txn.commit_transaction(30)
    consumer = Consumer(
        {
            **conf,
            "group.id": "seed-group",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe(["seed-a"])
    got = 0
    for _ in range(40):
        got += len([m for m in consumer.consume(100, 0.5) if not m.error()])
        if got >= 30:
            break
    consumer.commit(asynchronous=False)
    consumer.committed([TopicPartition("seed-a", p) for p in range(3)], timeout=10)
    consumer.close()
    admin.list_consumer_groups().result(timeout=30)
    admin.describe_consumer_groups(["seed-group"])["seed-group"].result(timeout=30)


def _kafka_python_session(bootstrap: str) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    for i in range(10):
        producer.send("seed-a", key=b"k", value=str(i).encode())
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(
        "seed-a",
        bootstrap_servers=bootstrap,
        group_id="seed-group-kp",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=3000,
    )
    for _ in consumer:
        pass
    consumer.commit()
    consumer.close()
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.list_group_offsets("seed-group-kp")
    admin.describe_groups(["seed-group-kp"])
    admin.list_topics()
    admin.close()


def record_sessions(proxy: RecordingProxy) -> list[bytes]:
    """Runs both sessions through the proxy; returns every request frame seen."""
    for session in (_confluent_session, _kafka_python_session):
        session(f"127.0.0.1:{proxy.port}")
    return list(proxy.frames)


def api_keys(frames: list[bytes]) -> Iterator[int]:
    return (struct.unpack_from(">h", f)[0] for f in frames if len(f) >= 2)
