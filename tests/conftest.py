from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.brokers import MusterProcess, TansuProcess
from tests.support.kafka import KafkaProcess


@pytest.fixture
def muster(tmp_path: Path) -> Iterator[MusterProcess]:
    """A fresh muster broker on its own data dir and port, as `muster serve` runs it."""
    broker = MusterProcess(tmp_path / "data").start()
    try:
        yield broker
    finally:
        broker.close()


@pytest.fixture(scope="module")
def shared_muster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MusterProcess]:
    """One broker for a module whose tests use distinct topics."""
    broker = MusterProcess(tmp_path_factory.mktemp("shared") / "data").start()
    try:
        yield broker
    finally:
        broker.close()


@pytest.fixture(scope="module")
def tansu_broker() -> Iterator[TansuProcess]:
    """The third-party broker Tansu (in memory), for tests that prove interoperability."""
    broker = TansuProcess().start()
    try:
        yield broker
    finally:
        broker.close()


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """The one local[2] SparkSession every Spark test shares."""
    from tests.support.spark import start_spark_session

    session = start_spark_session()
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A throw-away CA with broker and client (alice, bob, admin) certificates."""
    from tests.support.security import certificates

    return certificates(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="session")
def _kafka_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaProcess]:
    broker = KafkaProcess(tmp_path_factory.mktemp("kafka")).start()
    try:
        yield broker
    finally:
        broker.close()


@pytest.fixture(scope="module")
def kafka_broker(_kafka_process: KafkaProcess) -> KafkaProcess:
    """Apache Kafka 4.4 (single-node KRaft, from Maven's jars): the reference
    muster's answers are held against. One for the run, not one per module: a
    start costs ~15 s on CI and its modules (tests/reference/,
    tests/spark/test_kafka_connector.py) use distinct topics and groups. A
    module that finds it down (a kill -9 test that failed before its restart)
    gets it started again, as a Kafka of its own would have been."""
    if _kafka_process.proc is None:
        _kafka_process.start()
    return _kafka_process
