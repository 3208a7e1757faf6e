"""Kafka's Java KafkaShareConsumer (kafka-clients 4.4.0, KIP-932) against
muster and against Kafka 4.4, both with their default settings (share
groups on by default in both): two share consumers read every record once between
them; an explicit consumer's released record comes back alone with delivery
count 2 (tests/java/ShareChecks.java). Across a `kill -9` of muster,
nothing accepted comes back and nothing else is lost (ShareCrash.java)."""

from __future__ import annotations

import json
import select
import subprocess
import time
from pathlib import Path
from typing import Any

from tests.javacli.common import SETTINGS, Pair
from tests.support.brokers import MusterProcess
from tests.support.java import program_command, run_program

EXPECTED = {
    "implicit_distinct": 100,
    "implicit_deliveries": 100,
    "explicit_accepted": 100,
    "other_deliveries": 99,
    "released_delivery_counts": [1, 2],
}


def test_kafka_share_consumer_on_muster(pair: Pair) -> None:
    assert run_program("ShareChecks", pair.muster.bootstrap) == [EXPECTED]


def test_kafka_share_consumer_on_kafka_sees_the_same(pair: Pair) -> None:
    assert run_program("ShareChecks", pair.kafka.bootstrap) == [EXPECTED]


def test_kafka_share_consumer_across_a_broker_kill_9(tmp_path: Path) -> None:
    """A KafkaShareConsumer accepts 40 of 100 records (each commit answered)
    and holds more under locks; muster is killed with `kill -9` and restarted;
    a new consumer of the group gets every other record exactly once, the
    held ones included, and none of the accepted ones."""
    from confluent_kafka import Producer

    muster = MusterProcess(tmp_path / "data", settings=SETTINGS).start()
    holder: subprocess.Popen[str] | None = None
    try:
        topic, group = "share-crash", "share-crash-g"
        producer = Producer({"bootstrap.servers": muster.bootstrap})
        for i in range(100):
            producer.produce(topic, str(i).encode(), partition=0)
        assert producer.flush(30) == 0
        del producer  # it would keep reconnecting while muster is down
        holder = subprocess.Popen(
            program_command("ShareCrash", muster.bootstrap, topic, group, "hold", "40"),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        first = _first_json_line(holder, timeout=120)
        assert len(first["accepted"]) == 40 and first["held"], first
        muster.kill()
        holder.kill()
        holder.wait(30)
        muster.start()
        (second,) = run_program("ShareCrash", muster.bootstrap, topic, group, "drain", "60")
    finally:
        if holder is not None and holder.poll() is None:
            holder.kill()
            holder.wait(30)
        muster.close()
    accepted = set(first["accepted"])
    drained = [value for value, _count in second["drained"]]
    assert not accepted & set(drained)  # nothing accepted comes back
    assert sorted(drained, key=int) == sorted(set(drained), key=int)  # each once
    assert accepted | set(drained) == {str(i) for i in range(100)}  # nothing lost
    assert set(first["held"]) <= set(drained)


def _first_json_line(proc: subprocess.Popen[str], timeout: float) -> dict[str, Any]:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 1.0)
        if ready:
            line = proc.stdout.readline()
            if not line:
                break
            if line.startswith("{"):
                return dict(json.loads(line))
    raise AssertionError(f"ShareCrash printed nothing in {timeout} s (exit {proc.poll()})")
