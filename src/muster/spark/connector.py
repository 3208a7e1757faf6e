"""Spark's own Kafka connector (`format("kafka")`, the spark-sql-kafka-0-10 jar)
as an alternative to `format("muster")`: where its jars come from and whether
a session has them. muster needs no JVM jars; `--source kafka` in `muster
analyze` and the demo reads through this connector instead when it is there.

The jars are given as `spark.jars` when the session starts: MUSTER_SPARK_JARS
lists them (comma-separated files or folders, a folder meaning every jar in
it), e.g. the folder `make spark-kafka-jars` fills, `.cache/spark-kafka/lib`.
A session started otherwise with the connector (`--packages`, spark-defaults)
serves as well: `has_kafka_connector` asks Spark itself.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

ENV = "MUSTER_SPARK_JARS"
ARTIFACT = "org.apache.spark:spark-sql-kafka-0-10_2.13"
PROVIDER = "org.apache.spark.sql.kafka010.KafkaSourceProvider"


class ConnectorMissing(RuntimeError):
    """Spark's Kafka connector is not on the session's classpath."""


def jars_from(spec: str | None) -> list[str]:
    """The jar files `spec` (MUSTER_SPARK_JARS's form) names, in order; a
    folder stands for its *.jar, sorted."""
    out: list[str] = []
    for item in (spec or "").split(","):
        item = item.strip()
        if not item:
            continue
        path = Path(item).expanduser()
        if path.is_dir():
            out.extend(str(p) for p in sorted(path.glob("*.jar")))
        else:
            out.append(str(path))
    return out


def configured_jars() -> list[str]:
    """The jars MUSTER_SPARK_JARS names (none when unset)."""
    return jars_from(os.environ.get(ENV))


def has_kafka_connector(spark: Any) -> bool:
    """Whether `spark` resolves format("kafka") (the check is Spark's own
    DataSource lookup, so `--packages` and spark-defaults count too)."""
    jvm = spark.sparkContext._jvm
    try:
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        jvm.java.lang.Class.forName(PROVIDER, False, loader)
    except Exception:  # py4j wraps ClassNotFoundException
        return False
    return True


def require_kafka_connector(spark: Any) -> None:
    """Raises ConnectorMissing, one line, when format("kafka") is unavailable."""
    if not has_kafka_connector(spark):
        raise ConnectorMissing(
            f"Spark's Kafka connector ({ARTIFACT}) is not on this Spark session's "
            f"classpath: set {ENV} to its jars (a folder of them, e.g. .cache/spark-kafka/lib "
            "from `make spark-kafka-jars`), or use the default source, muster"
        )
