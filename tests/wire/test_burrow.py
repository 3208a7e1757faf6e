"""Burrow (Debian's 1.2.1) pointed at muster reports a group's committed offsets and lag.

Burrow learns commits only by consuming `__consumer_offsets` from the beginning and
decoding Kafka's OffsetCommitKey/OffsetCommitValue records itself (its kafka consumer
module), and log-end offsets by polling ListOffsets (its kafka cluster module); its
`current_lag` is log-end minus the last commit. Burrow needs a ZooKeeper for its own
coordination, so the test runs one (tests/support/burrow.py has the details).

Burrow 1.2.1 sends ListOffsets **v0** (max_num_offsets=1, old-style offsets array)
from its cluster module whatever `kafka-version` says (Burrow builds a bare
`sarama.OffsetRequest{}`; only Burrow >= 1.9.4 picks the version from the
profile), so muster must answer ListOffsets v0 for this test to pass.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition

from tests.support.brokers import MusterProcess
from tests.support.burrow import BurrowProcess, ZooKeeperProcess
from tests.wire.clients import confluent_produce, create_topic
from tests.wire.group_helpers import committed_offsets

TOPIC = "burrow-topic"
GROUP = "burrow-group"
CLUSTER = "muster"
PRODUCED = {0: 30, 1: 20}
COMMITTED = {0: 10, 1: 5}
LAG = {p: PRODUCED[p] - COMMITTED[p] for p in PRODUCED}  # {0: 20, 1: 15}

# Burrow's sarama subscribes the 50 `__consumer_offsets` partitions one fetch round
# (250 ms max wait) at a time, so it reports a group ~15 s after starting.
BURROW_REPORT_TIMEOUT = 45.0


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[tuple[MusterProcess, ZooKeeperProcess, Path]]:
    """muster and a ZooKeeper for Burrow; both stopped whatever happens."""
    broker = MusterProcess(tmp_path / "data").start()
    zookeeper: ZooKeeperProcess | None = None
    try:
        zookeeper = ZooKeeperProcess(tmp_path)
        zookeeper.start()
        yield broker, zookeeper, tmp_path
    finally:
        if zookeeper is not None:
            zookeeper.close()
        broker.close()


def consume_and_commit(bootstrap: str) -> None:
    """A subscribed member of GROUP reads at least COMMITTED[p] records of each partition,
    commits exactly COMMITTED synchronously, and leaves (nothing committed on close)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": GROUP,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 10000,
        }
    )
    read = {p: 0 for p in PRODUCED}
    try:
        consumer.subscribe([TOPIC])
        deadline = time.monotonic() + 30
        while any(read[p] < COMMITTED[p] for p in read):
            assert time.monotonic() < deadline, f"consumed only up to {read}"
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                raise KafkaException(msg.error())
            read[msg.partition()] = max(read[msg.partition()], msg.offset() + 1)
        done = consumer.commit(
            offsets=[TopicPartition(TOPIC, p, o) for p, o in COMMITTED.items()],
            asynchronous=False,
        )
        assert done is not None and all(tp.error is None for tp in done), done
    finally:
        consumer.close()


def burrow_lag(burrow: BurrowProcess) -> dict[str, Any] | None:
    """Burrow's lag answer for GROUP once it has both partitions' commits and a
    log-end offset covering everything produced; None until then."""
    status, consumers = burrow.get(f"/v3/kafka/{CLUSTER}/consumer")
    if status != 200 or GROUP not in (consumers or {}).get("consumers", []):
        return None
    status, lag = burrow.get(f"/v3/kafka/{CLUSTER}/consumer/{GROUP}/lag")
    if status != 200 or not lag or lag.get("error"):
        return None
    parts = lag["status"].get("partitions") or []
    if len(parts) != len(PRODUCED) or any(p.get("end") is None for p in parts):
        return None
    if {p["partition"]: p["current_lag"] for p in parts} != LAG:
        return None
    return lag


def unsupported_requests(broker: MusterProcess) -> list[str]:
    """muster's log lines for requests it refused (it closes the connection)."""
    return [line for line in broker.log_text().splitlines() if "unsupported version" in line]


def decode_failures(burrow_log: str) -> list[dict[str, Any]]:
    """Burrow's `failed to decode` warnings, except the expected one: Burrow 1.2.1 decodes
    GroupMetadataValue v0/v1 only and skips v3 (which Kafka >= 2.3 and muster write),
    so it shows no partition owners; offset commits decode fine."""
    bad = []
    for line in burrow_log.splitlines():
        if '"failed to decode"' not in line:
            continue
        entry = json.loads(line)
        if entry.get("message_type") == "metadata" and entry.get("reason") == "value version":
            continue
        bad.append(entry)
    return bad


def test_burrow_reports_committed_offsets_and_lag(
    stack: tuple[MusterProcess, ZooKeeperProcess, Path],
) -> None:
    broker, zookeeper, workdir = stack
    b = broker.bootstrap
    create_topic(b, TOPIC, partitions=2)
    confluent_produce(
        b,
        TOPIC,
        [(p, None, f"{p}-{i}".encode(), []) for p, n in PRODUCED.items() for i in range(n)],
    )
    consume_and_commit(b)
    assert committed_offsets(b, GROUP, [(TOPIC, p) for p in PRODUCED]) == {
        (TOPIC, p): o for p, o in COMMITTED.items()
    }

    burrow = BurrowProcess(workdir, b, zookeeper.address, cluster=CLUSTER, kafka_version="2.0.0")
    try:
        burrow.start()
        deadline = time.monotonic() + BURROW_REPORT_TIMEOUT
        lag = None
        while lag is None:
            refused = unsupported_requests(broker)
            assert not refused, (
                "muster refused a request Burrow sends:\n"
                + "\n".join(refused[:5])
                + f"\n--- burrow log tail ---\n{burrow.log_text()[-3000:]}"
            )
            lag = burrow_lag(burrow)
            if lag is None:
                assert time.monotonic() < deadline, (
                    "Burrow never reported the group's offsets and lag:\n"
                    f"consumers: {burrow.get(f'/v3/kafka/{CLUSTER}/consumer')}\n"
                    f"lag: {burrow.get(f'/v3/kafka/{CLUSTER}/consumer/{GROUP}/lag')}\n"
                    f"--- burrow log tail ---\n{burrow.log_text()[-6000:]}\n"
                    f"--- muster log tail ---\n{broker.log_text()[-3000:]}"
                )
                time.sleep(0.3)

        status, clusters = burrow.get("/v3/kafka")
        assert status == 200 and clusters["clusters"] == [CLUSTER], clusters
        # the log-end offsets Burrow got from muster's ListOffsets
        status, topic = burrow.get(f"/v3/kafka/{CLUSTER}/topic/{TOPIC}")
        assert status == 200 and topic["offsets"] == [PRODUCED[0], PRODUCED[1]], topic

        result = lag["status"]
        assert (result["cluster"], result["group"]) == (CLUSTER, GROUP)
        assert result["partition_count"] == 2
        assert result["totallag"] == sum(LAG.values())
        by_partition = {p["partition"]: p for p in result["partitions"]}
        assert sorted(by_partition) == [0, 1]
        for p, part in by_partition.items():
            assert part["topic"] == TOPIC, part
            # the committed offset Burrow decoded from muster's OffsetCommitValue v3 record
            assert part["end"]["offset"] == COMMITTED[p], part
            # log-end minus committed, now and as stored with the commit
            assert part["current_lag"] == LAG[p], part
            assert part["end"]["lag"] == LAG[p], part
        assert (result["maxlag"]["partition"], result["maxlag"]["current_lag"]) == (0, LAG[0])

        assert not unsupported_requests(broker)
        assert not decode_failures(burrow.log_text()), decode_failures(burrow.log_text())
    finally:
        burrow.close()
