"""`muster.Broker` and the pytest plugin, as a project's test suite uses them."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

import muster
from muster.config import ConfigError
from muster.server import broker as server_broker
from muster.server.startup import StartupError

REPO = Path(__file__).resolve().parents[2]


def produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    errors: list[KafkaError] = []
    for value in values:
        producer.produce(topic, value, on_delivery=lambda err, _msg: err and errors.append(err))
    assert producer.flush(15) == 0 and errors == []


def read_all(bootstrap: str, topic: str, expected: int) -> list[bytes]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "reader", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    got: list[bytes] = []
    deadline = time.monotonic() + 20
    try:
        while len(got) < expected and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and not msg.error():
                got.append(msg.value())
    finally:
        consumer.close()
    return got


def broker_property(bootstrap: str, name: str) -> str:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ResourceType.BROKER, "0")
    entries = admin.describe_configs([resource])[resource].result(timeout=10)
    return entries[name].value


def test_thread_broker_in_memory_serves_on_a_free_port() -> None:
    with muster.Broker() as broker:
        assert broker.port not in (0, 9092)
        assert broker.bootstrap_servers == f"127.0.0.1:{broker.port}"
        assert broker.data_dir is None  # memory storage: nothing on disk
        broker.create_topic("t", partitions=3)
        metadata = AdminClient({"bootstrap.servers": broker.bootstrap_servers}).list_topics(
            timeout=10
        )
        assert len(metadata.topics["t"].partitions) == 3
        # the broker advertises the port it bound, not the 0 it was given
        assert [b.port for b in metadata.brokers.values()] == [broker.port]
        produce(broker.bootstrap_servers, "t0", [b"a", b"b"])
        assert read_all(broker.bootstrap_servers, "t0", 2) == [b"a", b"b"]
    assert not broker.running


def test_memory_storage_restarts_empty_on_the_same_port() -> None:
    with muster.Broker() as broker:
        port = broker.port
        produce(broker.bootstrap_servers, "gone", [b"x"])
        broker.restart()
        assert broker.port == port
        metadata = AdminClient({"bootstrap.servers": broker.bootstrap_servers}).list_topics(
            timeout=10
        )
        assert "gone" not in metadata.topics


def test_disk_storage_keeps_records_across_a_thread_restart(tmp_path: Path) -> None:
    with muster.Broker(storage="disk", data_dir=tmp_path / "data") as broker:
        produce(broker.bootstrap_servers, "kept", [b"1", b"2", b"3"])
        broker.restart()
        assert read_all(broker.bootstrap_servers, "kept", 3) == [b"1", b"2", b"3"]
    assert (tmp_path / "data" / "kept-0").is_dir()  # a given data_dir is the caller's


def test_process_broker_keeps_acknowledged_writes_through_kill_9() -> None:
    with muster.Broker(mode="process", storage="disk") as broker:
        assert broker.data_dir is not None
        data_dir = broker.data_dir
        produce(broker.bootstrap_servers, "durable", [b"v%d" % i for i in range(50)])
        broker.kill()
        assert not broker.running
        broker.start()
        assert read_all(broker.bootstrap_servers, "durable", 50) == [b"v%d" % i for i in range(50)]
    assert not data_dir.exists()  # the temporary directory went with the broker


def test_a_second_broker_on_the_same_data_dir_is_refused(tmp_path: Path) -> None:
    with muster.Broker(storage="disk", data_dir=tmp_path / "data"):
        second = muster.Broker(storage="disk", data_dir=tmp_path / "data")
        with pytest.raises(
            StartupError, match=rf"in use by another muster broker \(pid {os.getpid()}\)"
        ):
            second.start()
        assert not second.running


def test_losing_the_listen_race_is_a_startup_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two sockets with SO_REUSEADDR may bind one port while neither listens; the
    broker that listens second gets the same two lines as a plain taken port."""
    holder = socket.socket()
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    holder.bind(("127.0.0.1", 0))
    port = holder.getsockname()[1]
    original = server_broker.Broker._open_storage

    async def open_then_lose_the_race(self: server_broker.Broker) -> None:
        await original(self)
        holder.listen()  # the other broker gets there first

    monkeypatch.setattr(server_broker.Broker, "_open_storage", open_then_lose_the_race)
    try:
        broker = muster.Broker(port=port)
        with pytest.raises(StartupError, match="address already in use"):
            broker.start()
        assert not broker.running
    finally:
        holder.close()


def test_misuse_is_refused_up_front() -> None:
    with pytest.raises(ConfigError, match="unknown property"):
        muster.Broker({"no.such.property": 1})
    with pytest.raises(ValueError, match="storage='disk'"):
        muster.Broker(data_dir="/tmp/x")
    with muster.Broker() as broker, pytest.raises(RuntimeError, match="mode='process'"):
        broker.kill()


def test_factory_defaults_suit_tests_and_are_overridable(muster_broker_factory) -> None:  # type: ignore[no-untyped-def]
    fast = muster_broker_factory()
    assert broker_property(fast.bootstrap_servers, "group.initial.rebalance.delay.ms") == "100"
    kafka_like = muster_broker_factory({"group.initial.rebalance.delay.ms": 3000})
    assert (
        broker_property(kafka_like.bootstrap_servers, "group.initial.rebalance.delay.ms") == "3000"
    )
    assert fast.port != kafka_like.port


def test_session_broker_fixture(muster_broker) -> None:  # type: ignore[no-untyped-def]
    assert muster_broker.running
    produce(muster_broker.bootstrap_servers, "session-fixture", [b"hi"])
    assert read_all(muster_broker.bootstrap_servers, "session-fixture", 1) == [b"hi"]


def test_importing_muster_and_starting_a_broker_loads_no_cli_or_spark() -> None:
    code = (
        "import sys, muster\n"
        "with muster.Broker() as b: pass\n"
        "heavy = sorted(m for m in ('pyspark', 'pyarrow', 'typer', 'rich', 'muster.cli',"
        " 'muster.analytics', 'muster.spark') if m in sys.modules)\n"
        "print(heavy)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_sample_project_passes_with_only_the_plugin(tmp_path: Path) -> None:
    sample = REPO / "examples" / "pytest-sample"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--basetemp",
            str(tmp_path / "t"),
        ],
        cwd=sample,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "6 passed" in done.stdout


def test_the_readme_example_is_the_sample_projects_test() -> None:
    """The README's example test is a file the sample project runs, word for word."""
    readme = (REPO / "README.md").read_text()
    example = (REPO / "examples" / "pytest-sample" / "tests" / "test_readme.py").read_text()
    assert f"```python\n{example}```\n" in readme
