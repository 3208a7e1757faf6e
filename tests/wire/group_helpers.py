"""Consumer-group helpers shared by the tests/wire/test_groups_*.py wire tests.

Every wait is a poll loop with a generous deadline (the CI machine is a noisy
2-core box); nothing sleeps a fixed time to "wait for" something.
"""

from __future__ import annotations

import concurrent.futures
import json
import queue
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.support.brokers import MusterProcess

# Brokers for group tests accept short sessions so liveness tests stay fast.
GROUP_SETTINGS = {"group.min.session.timeout.ms": "1000"}

TP = tuple[str, int]


def wait_until(
    predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.1
) -> Any:
    """Polls predicate until it returns something truthy; fails with `what` on timeout."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


@pytest.fixture(scope="module")
def group_muster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MusterProcess]:
    """One broker per module, short session timeouts allowed."""
    broker = MusterProcess(tmp_path_factory.mktemp("groups") / "data", GROUP_SETTINGS).start()
    try:
        yield broker
    finally:
        broker.close()


@pytest.fixture
def fresh_group_muster(tmp_path: Path) -> Iterator[MusterProcess]:
    """A broker of its own (for restart tests), short session timeouts allowed."""
    broker = MusterProcess(tmp_path / "data", GROUP_SETTINGS).start()
    try:
        yield broker
    finally:
        broker.close()


def produce_values(
    bootstrap: str, topic: str, values: list[bytes], partitions: int
) -> dict[bytes, tuple[int, int]]:
    """Produces each value round-robin over partitions; returns value -> (partition, offset)."""
    acked: dict[bytes, tuple[int, int]] = {}
    errors: list[object] = []

    def on_delivery(err: object, msg: Any) -> None:
        if err is not None:
            errors.append(err)
        else:
            acked[msg.value()] = (msg.partition(), msg.offset())

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i, value in enumerate(values):
        producer.produce(topic, value=value, partition=i % partitions, on_delivery=on_delivery)
        producer.poll(0)
    assert producer.flush(30) == 0, "messages not delivered"
    assert not errors, errors
    assert len(acked) == len(values)
    return acked


def all_partitions(topic: str, n: int) -> set[TP]:
    return {(topic, p) for p in range(n)}


class GroupMember:
    """A subscribed confluent-kafka consumer polled by its own thread.

    Only the polling thread touches the consumer: with confluent-kafka 2.16 a call
    such as assignment(), memberid() or commit() from another thread while one thread
    sits in poll() starves and hangs. Use `call()` to run code on the polling thread.

    It tracks its assignment through the rebalance callbacks (on_assign adds,
    on_revoke/on_lost remove: right for eager and cooperative protocols alike)
    and records every callback and every consumed message.
    """

    def __init__(self, bootstrap: str, group: str, topics: list[str], **conf: Any) -> None:
        config = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": True,
            "auto.commit.interval.ms": 200,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
            **conf,
        }
        if config.get("group.protocol") == "consumer":
            # KIP-848: the broker dictates session and heartbeat interval
            # (librdkafka refuses these settings in that mode)
            del config["session.timeout.ms"], config["heartbeat.interval.ms"]
        self.name = str(config.get("client.id", "member"))
        self.consumer = Consumer(config)
        self.lock = threading.Lock()
        self.assigned: set[TP] = set()
        self.events: list[tuple[str, frozenset[TP]]] = []
        self.messages: list[tuple[str, int, int, bytes]] = []
        self.errors: list[str] = []
        self._calls: queue.Queue[tuple[Callable[[Any], Any], concurrent.futures.Future[Any]]] = (
            queue.Queue()
        )
        self._stop = threading.Event()
        self._closed = threading.Event()
        self._close_error: BaseException | None = None
        self.consumer.subscribe(
            topics, on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_lost
        )
        self.thread = threading.Thread(target=self._run, name=f"member-{self.name}", daemon=True)
        self.thread.start()

    # callbacks run on the polling thread, inside poll()
    def _on_assign(self, _consumer: Any, partitions: list[TopicPartition]) -> None:
        parts = frozenset((p.topic, p.partition) for p in partitions)
        with self.lock:
            self.assigned |= parts
            self.events.append(("assign", parts))

    def _on_revoke(self, _consumer: Any, partitions: list[TopicPartition]) -> None:
        parts = frozenset((p.topic, p.partition) for p in partitions)
        with self.lock:
            self.assigned -= parts
            self.events.append(("revoke", parts))

    def _on_lost(self, _consumer: Any, partitions: list[TopicPartition]) -> None:
        parts = frozenset((p.topic, p.partition) for p in partitions)
        with self.lock:
            self.assigned -= parts
            self.events.append(("lost", parts))

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self._serve_calls()
                msg = self.consumer.poll(0.2)
                if msg is None:
                    continue
                if msg.error():
                    if msg.error().code() != KafkaError._PARTITION_EOF:
                        with self.lock:
                            self.errors.append(str(msg.error()))
                    continue
                with self.lock:
                    self.messages.append(
                        (msg.topic(), msg.partition(), msg.offset(), msg.value() or b"")
                    )
            self.consumer.close()
        except BaseException as exc:
            self._close_error = exc
        finally:
            self._closed.set()

    def _serve_calls(self) -> None:
        while True:
            try:
                fn, future = self._calls.get_nowait()
            except queue.Empty:
                return
            try:
                future.set_result(fn(self.consumer))
            except BaseException as exc:
                future.set_exception(exc)

    def call(self, fn: Callable[[Any], Any], timeout: float = 30.0) -> Any:
        """Runs fn(consumer) on the polling thread and returns its result."""
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._calls.put((fn, future))
        return future.result(timeout)

    def assignment(self) -> frozenset[TP]:
        with self.lock:
            return frozenset(self.assigned)

    def event_log(self) -> list[tuple[str, frozenset[TP]]]:
        with self.lock:
            return list(self.events)

    def values(self) -> list[bytes]:
        with self.lock:
            return [m[3] for m in self.messages]

    def close(self, timeout: float = 30.0) -> None:
        """Stops polling and closes the consumer (LeaveGroup unless static) on its thread."""
        self._stop.set()
        assert self._closed.wait(timeout), f"{self.name} did not close within {timeout}s"
        self.thread.join(timeout)
        if self._close_error is not None:
            raise self._close_error

    def abandon(self) -> None:
        """Best-effort close for test teardown."""
        if not self._closed.is_set():
            self._stop.set()
            self._closed.wait(30)


def exact_cover(members: list[GroupMember], expected: set[TP]) -> bool:
    """True iff the members' assignments are pairwise disjoint and their union is expected."""
    sets = [m.assignment() for m in members]
    return sum(len(s) for s in sets) == len(expected) and set().union(*sets) == expected


def admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def describe_group(bootstrap: str, group: str) -> Any:
    client = admin(bootstrap)
    return client.describe_consumer_groups([group], request_timeout=15)[group].result(timeout=20)


def group_state_name(bootstrap: str, group: str) -> str:
    return str(describe_group(bootstrap, group).state.name)


def wait_group_stable(
    bootstrap: str, group: str, members: list[GroupMember], expected: set[TP], timeout: float
) -> None:
    """Waits until the group is Stable with exactly these members covering `expected` once."""

    def settled() -> bool:
        if not exact_cover(members, expected):
            return False
        desc = describe_group(bootstrap, group)
        return desc.state.name == "STABLE" and len(desc.members) == len(members)

    wait_until(
        settled,
        timeout,
        f"group {group} Stable with {len(members)} members covering {len(expected)} partitions "
        f"(assignments: {[sorted(m.assignment()) for m in members]})",
        interval=0.3,
    )


def committed_offsets(bootstrap: str, group: str, tps: list[TP]) -> dict[TP, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        got = consumer.committed([TopicPartition(t, p) for t, p in tps], timeout=15)
    finally:
        consumer.close()
    for tp in got:
        if tp.error is not None:
            raise KafkaException(tp.error)
    return {(tp.topic, tp.partition): tp.offset for tp in got}


CHILD_CONSUMER = textwrap.dedent(
    """
    import json, sys
    from confluent_kafka import Consumer
    bootstrap, group, topic, client_id, session_ms, protocol = sys.argv[1:7]
    conf = {
        "bootstrap.servers": bootstrap, "group.id": group, "client.id": client_id,
        "auto.offset.reset": "earliest", "group.protocol": protocol,
    }
    if protocol == "classic":  # KIP-848: the broker dictates both (librdkafka refuses them)
        conf.update({"session.timeout.ms": int(session_ms), "heartbeat.interval.ms": 300})
    c = Consumer(conf)
    def show(kind):
        def cb(consumer, parts):
            print(json.dumps([kind, sorted(p.partition for p in parts)]), flush=True)
        return cb
    c.subscribe([topic], on_assign=show("assign"), on_revoke=show("revoke"))
    while True:
        c.poll(0.2)
    """
)


class ChildMember:
    """A confluent-kafka group member in a child process, so SIGKILL skips LeaveGroup.

    The child reports its rebalance callbacks on stdout; `assignment()` mirrors them.
    With protocol="consumer" (KIP-848) the session timeout is the broker's.
    """

    def __init__(
        self,
        bootstrap: str,
        group: str,
        topic: str,
        client_id: str,
        session_ms: int,
        protocol: str = "classic",
    ) -> None:
        self.topic = topic
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                CHILD_CONSUMER,
                bootstrap,
                group,
                topic,
                client_id,
                str(session_ms),
                protocol,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.lock = threading.Lock()
        self.assigned: set[TP] = set()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            kind, parts = json.loads(line)
            tps = {(self.topic, p) for p in parts}
            with self.lock:
                if kind == "assign":
                    self.assigned |= tps
                else:
                    self.assigned -= tps

    def assignment(self) -> frozenset[TP]:
        with self.lock:
            return frozenset(self.assigned)

    def kill(self) -> None:
        """SIGKILL: the broker only learns of it when the session times out."""
        self.proc.kill()
        self.proc.wait(10)

    def abandon(self) -> None:
        if self.proc.poll() is None:
            self.kill()
