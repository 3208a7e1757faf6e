"""kafka-python and aiokafka consumer groups: form, split the partitions, commit, and a
restarted consumer resumes from the committed offsets."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from typing import Any

from aiokafka import AIOKafkaConsumer
from kafka import KafkaConsumer

from tests.support.brokers import MusterProcess
from tests.wire.clients import create_topic
from tests.wire.group_helpers import (
    all_partitions,
    committed_offsets,
    describe_group,
    group_muster,  # noqa: F401 - fixture
    produce_values,
    wait_until,
)

PARTITIONS = 4
GROUP_CONF: dict[str, Any] = {
    "auto_offset_reset": "earliest",
    "enable_auto_commit": False,
    "session_timeout_ms": 6000,
    "heartbeat_interval_ms": 500,
}


class KafkaPythonMember:
    """A kafka-python KafkaConsumer owned and polled by one thread."""

    def __init__(self, bootstrap: str, group: str, topic: str, client_id: str) -> None:
        self.lock = threading.Lock()
        self.assigned: frozenset[tuple[str, int]] = frozenset()
        self.messages: list[tuple[int, int, bytes]] = []
        self.commit_requested = threading.Event()
        self.committed = threading.Event()
        self.stop = threading.Event()
        self.done = threading.Event()
        self.error: BaseException | None = None
        self.consumer = KafkaConsumer(
            bootstrap_servers=bootstrap, group_id=group, client_id=client_id, **GROUP_CONF
        )
        self.consumer.subscribe([topic])
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            while not self.stop.is_set():
                # Not a short timeout: kafka-python 3.0.12 loses a join that outlives the
                # poll() that started it when the rejoin was caused by a metadata-snapshot
                # change (the leader's first join often precedes its topic metadata): the
                # next poll sees need_rejoin() False, never applies the finished
                # JoinGroup/SyncGroup, never heartbeats, and the broker rightly expires it.
                batch = self.consumer.poll(timeout_ms=3000)
                with self.lock:
                    for records in batch.values():
                        self.messages += [(r.partition, r.offset, r.value) for r in records]
                    self.assigned = frozenset(
                        (tp.topic, tp.partition) for tp in self.consumer.assignment()
                    )
                if self.commit_requested.is_set() and not self.committed.is_set():
                    self.consumer.commit()  # synchronous, current positions
                    self.committed.set()
            self.consumer.close()
        except BaseException as exc:
            self.error = exc
        finally:
            self.done.set()

    def assignment(self) -> frozenset[tuple[str, int]]:
        with self.lock:
            return self.assigned

    def values(self) -> list[bytes]:
        with self.lock:
            return [m[2] for m in self.messages]

    def commit(self) -> None:
        self.commit_requested.set()
        assert self.committed.wait(30) or self.error, "commit did not complete"
        if self.error:
            raise self.error

    def finish(self) -> None:
        self.stop.set()
        assert self.done.wait(30), "consumer did not close"
        if self.error:
            raise self.error


def _split(assignments: list[frozenset[tuple[str, int]]], expected: set[tuple[str, int]]) -> bool:
    return (
        all(assignments)
        and sum(len(a) for a in assignments) == len(expected)
        and set().union(*assignments) == expected
    )


def test_kafka_python_group_splits_commits_and_resumes(
    group_muster: MusterProcess,  # noqa: F811
) -> None:
    b = group_muster.bootstrap
    topic, group = "kp-group-topic", "kp-group"
    create_topic(b, topic, partitions=PARTITIONS)
    everything = all_partitions(topic, PARTITIONS)
    first = [f"first-{i}".encode() for i in range(100)]

    members = [KafkaPythonMember(b, group, topic, f"kp-{i}") for i in range(2)]
    try:
        wait_until(
            lambda: (
                _split([m.assignment() for m in members], everything)
                and describe_group(b, group).state.name == "STABLE"
            ),
            60,
            "kafka-python members split the partitions",
            interval=0.3,
        )
        # produced once the group is stable: no commit exists yet, so a message consumed
        # before a later rebalance would legitimately be consumed again by its next owner
        produce_values(b, topic, first, PARTITIONS)
        wait_until(
            lambda: set(first) <= {v for m in members for v in m.values()}, 30, "all consumed"
        )
        counts = Counter(v for m in members for v in m.values())
        assert all(counts[v] == 1 for v in first), "a message was consumed twice"
        # Each member commits (and stops) only when its poll returns, after up to
        # 3 s: ask all of them first, then wait for each, not 3 s after 3 s.
        for m in members:
            m.commit_requested.set()
        for m in members:
            m.commit()
    finally:
        for m in members:
            m.stop.set()
        for m in members:
            m.finish()

    expected = {(topic, p): len(first) // PARTITIONS for p in range(PARTITIONS)}
    assert committed_offsets(b, group, sorted(everything)) == expected
    wait_until(lambda: describe_group(b, group).state.name == "EMPTY", 20, "group Empty")

    second = [f"second-{i}".encode() for i in range(40)]
    produce_values(b, topic, second, PARTITIONS)
    restarted = KafkaPythonMember(b, group, topic, "kp-restarted")
    try:
        wait_until(lambda: set(second) <= set(restarted.values()), 60, "restarted consumer")
        with restarted.lock:
            got = list(restarted.messages)
    finally:
        restarted.finish()
    assert sorted(v for _p, _o, v in got) == sorted(second), "did not resume at the commits"
    firsts = {}
    for p, o, _v in got:
        firsts.setdefault(p, o)
    assert firsts == {p: len(first) // PARTITIONS for p in range(PARTITIONS)}


def test_aiokafka_group_splits_commits_and_resumes(
    group_muster: MusterProcess,  # noqa: F811
) -> None:
    b = group_muster.bootstrap
    topic, group = "aio-group-topic", "aio-group"
    create_topic(b, topic, partitions=PARTITIONS)
    everything = all_partitions(topic, PARTITIONS)
    first = [f"first-{i}".encode() for i in range(100)]

    def consumer(client_id: str) -> AIOKafkaConsumer:
        return AIOKafkaConsumer(
            topic, bootstrap_servers=b, group_id=group, client_id=client_id, **GROUP_CONF
        )

    async def drain(c: AIOKafkaConsumer, sink: list[tuple[int, int, bytes]], stop: asyncio.Event):
        while not stop.is_set():
            batch = await c.getmany(timeout_ms=200)
            for records in batch.values():
                sink += [(r.partition, r.offset, r.value) for r in records]

    async def poll_until(predicate: Any, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            await asyncio.sleep(0.1)

    async def scenario() -> list[tuple[int, int, bytes]]:
        consumers = [consumer(f"aio-{i}") for i in range(2)]
        sinks: list[list[tuple[int, int, bytes]]] = [[], []]
        stop = asyncio.Event()
        for c in consumers:
            await c.start()
        tasks = [
            asyncio.create_task(drain(c, s, stop)) for c, s in zip(consumers, sinks, strict=True)
        ]
        try:

            def split() -> bool:
                return _split(
                    [
                        frozenset((tp.topic, tp.partition) for tp in c.assignment())
                        for c in consumers
                    ],
                    everything,
                )

            await poll_until(split, 60, "aiokafka members split the partitions")
            produce_values(b, topic, first, PARTITIONS)  # once stable, as above
            await poll_until(
                lambda: set(first) <= {m[2] for s in sinks for m in s}, 30, "all consumed"
            )
            counts = Counter(m[2] for s in sinks for m in s)
            assert all(counts[v] == 1 for v in first), "a message was consumed twice"
            stop.set()
            await asyncio.gather(*tasks)
            for c in consumers:
                await c.commit()
        finally:
            stop.set()
            for t in tasks:
                t.cancel()
            for c in consumers:
                await c.stop()

        expected = {(topic, p): len(first) // PARTITIONS for p in range(PARTITIONS)}
        assert committed_offsets(b, group, sorted(everything)) == expected

        second = [f"second-{i}".encode() for i in range(40)]
        produce_values(b, topic, second, PARTITIONS)
        restarted = consumer("aio-restarted")
        await restarted.start()
        got: list[tuple[int, int, bytes]] = []
        stop2 = asyncio.Event()
        task = asyncio.create_task(drain(restarted, got, stop2))
        try:
            await poll_until(lambda: set(second) <= {m[2] for m in got}, 60, "restarted consumer")
        finally:
            stop2.set()
            await task
            await restarted.stop()
        assert sorted(m[2] for m in got) == sorted(second), "did not resume at the commits"
        return got

    got = asyncio.run(asyncio.wait_for(scenario(), 150))
    firsts: dict[int, int] = {}
    for p, o, _v in got:
        firsts.setdefault(p, o)
    assert firsts == {p: 100 // PARTITIONS for p in range(PARTITIONS)}
