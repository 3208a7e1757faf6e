"""The `muster` Spark source and sink over SASL_SSL with SCRAM-SHA-512, given
as Spark's Kafka source takes it (`kafka.`-prefixed properties, a JAAS line)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from muster.spark.options import parse_source
from tests.support.brokers import MusterProcess
from tests.support.security import add_scram_user, secured_settings

JAAS = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required "
    'username="spark-user" password="spark-pw";'
)


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory, certs: Path) -> Iterator[MusterProcess]:
    root = tmp_path_factory.mktemp("spark-security")
    broker = MusterProcess(
        root / "data", secured_settings(certs), {"SASL_SSL": "SASL_SSL", "SSL": "SSL"}
    ).start()
    add_scram_user(broker.bootstrap, certs, "spark-user", "spark-pw")
    yield broker
    broker.close()


def _options(broker: MusterProcess, certs: Path) -> dict[str, str]:
    return {
        "kafka.bootstrap.servers": broker.bootstrap,
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": JAAS,
        "kafka.ssl.truststore.location": str(certs / "ca.pem"),
    }


def test_options_carry_security_and_refuse_bad_ones(certs: Path) -> None:
    opts = parse_source(
        {
            "kafka.bootstrap.servers": "h:1",
            "subscribe": "t",
            "kafka.security.protocol": "SASL_SSL",
            "kafka.sasl.mechanism": "PLAIN",
            "kafka.sasl.username": "u",
            "kafka.sasl.password": "p",
            "kafka.ssl.ca.location": str(certs / "ca.pem"),
        },
        streaming=False,
    )
    assert dict(opts.security) == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "u",
        "sasl.password": "p",
        "ssl.ca.location": str(certs / "ca.pem"),
    }
    for bad in (
        {"kafka.security.protocol": "KERBEROS"},
        {"kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "GSSAPI"},
    ):
        with pytest.raises(ValueError):
            parse_source({"kafka.bootstrap.servers": "h:1", "subscribe": "t", **bad}, True)


def test_write_then_read_over_sasl_ssl(spark: Any, secured: MusterProcess, certs: Path) -> None:
    options = _options(secured, certs)
    df = spark.createDataFrame([(f"k{i}", f"v{i}") for i in range(5)], ["key", "value"])
    df.write.format("muster").mode("append").options(**options).option(
        "topic", "spark-secure"
    ).save()
    rows = (
        spark.read.format("muster")
        .options(**options)
        .option("subscribe", "spark-secure")
        .load()
        .orderBy("offset")
        .collect()
    )
    assert [bytes(r.value) for r in rows] == [f"v{i}".encode() for i in range(5)]
