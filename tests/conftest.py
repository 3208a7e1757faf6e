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


# The Kafka `kafka_broker` started (until its last user is done), and that last user.
_kafka: list[KafkaProcess] = []
_last_kafka_user: list[pytest.Item] = []


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaProcess]:
    """Apache Kafka 4.4 (single-node KRaft, from Maven's jars): the reference
    muster's answers are held against. One for the run, not one per module: a
    start costs ~15 s on CI and its three modules (tests/reference/ and
    tests/spark/test_kafka_connector.py) use distinct topics and groups. It is
    closed after the last test that uses it (pytest_runtest_teardown) rather
    than at the session's end, so its JVM does not idle beside the tests after."""
    broker = KafkaProcess(tmp_path_factory.mktemp("kafka")).start()
    _kafka.append(broker)
    try:
        yield broker
    finally:
        broker.close()


def _uses_kafka(item: pytest.Item, sources: dict[Path, str]) -> bool:
    # a module naming the fixture may also take it through getfixturevalue()
    if "kafka_broker" in getattr(item, "fixturenames", ()):
        return True
    if item.path not in sources:
        sources[item.path] = item.path.read_text() if item.path.suffix == ".py" else ""
    return "kafka_broker" in sources[item.path]


def pytest_runtest_setup(item: pytest.Item) -> None:
    # A test that kill -9s the shared Kafka (tests/reference/test_kafka_process.py)
    # and fails before its restart would leave it down for the next module's
    # tests: they get it started again, as a Kafka of their own would have been.
    if _kafka and _kafka[0].proc is None and _uses_kafka(item, {}):
        _kafka[0].start()


@pytest.hookimpl(trylast=True)  # after the test's own fixtures are torn down
def pytest_runtest_teardown(item: pytest.Item) -> None:
    if not _kafka:
        return
    if not _last_kafka_user:  # the run's items as selected (-k, deselection), once
        sources: dict[Path, str] = {}
        _last_kafka_user[:] = [i for i in item.session.items if _uses_kafka(i, sources)][-1:]
    if item in _last_kafka_user:
        _kafka.pop().close()  # the fixture's own close() at the session's end is a no-op then
