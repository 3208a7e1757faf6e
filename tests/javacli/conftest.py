"""Kafka's own Java clients and command-line tools against muster, each check
also run on Apache Kafka 4.4 (single node, KRaft) for comparison (issue #21
item 3). One muster and one Kafka for the package, both with the StandardAuthorizer
and ANONYMOUS as super user (so kafka-acls and the ACL calls answer as on a
secured cluster while every client may do everything)."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.javacli.common import SETTINGS, Pair
from tests.support.brokers import MusterProcess
from tests.support.kafka import KafkaProcess


@pytest.fixture(scope="package")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    """muster and Kafka started side by side (Kafka's start is the longer), one pair
    for the package: the tests use distinct topics and groups."""
    muster = MusterProcess(tmp_path_factory.mktemp("muster") / "data", settings=SETTINGS)
    kafka = KafkaProcess(tmp_path_factory.mktemp("kafka"), settings=SETTINGS)
    with ThreadPoolExecutor(2) as pool:
        started = [pool.submit(muster.start), pool.submit(kafka.start)]
        errors = [f.exception() for f in started]
    try:
        for error in errors:
            if error is not None:
                raise error
        yield Pair(muster, kafka)
    finally:
        muster.close()
        kafka.close()
