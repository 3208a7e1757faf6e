"""Spark's own Kafka connector (spark-sql-kafka-0-10 and the three jars it needs
beyond Spark) from Maven Central, declared in conformance/spark-kafka/pom.xml
and copied into the git-ignored .cache/spark-kafka/lib, where the test
SparkSession (tests/support/spark.py), bench/ and MUSTER_SPARK_JARS find it.

    python -m tests.support.spark_kafka   # resolves the jars if missing, prints their folder

Maven rather than `spark.jars.packages`: the jars are resolved once, ahead
(.ci/install), by a pom the project owns, and a session start never reaches
the network; Ivy would also copy Hadoop and Scala again beside pyspark/jars.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from tests.support.kafka import maven_copy
from tests.support.peers import REPO_ROOT, cache_dir

POM = REPO_ROOT / "conformance" / "spark-kafka" / "pom.xml"


def connector_version() -> str:
    """The connector's version the pom pins (Spark's, as far as Maven Central has it)."""
    found = re.search(r"<spark.version>([^<]+)</spark.version>", POM.read_text())
    assert found, POM
    return found.group(1)


def connector_lib() -> Path:
    """The folder of the connector's jars, resolved by Maven on first use
    (~40 s the first time; .ci/install does it ahead)."""
    lib = cache_dir() / "spark-kafka" / "lib"
    marker = f"spark-sql-kafka-0-10_2.13-{connector_version()}.jar"
    return maven_copy(POM, lib, marker, "spark.kafka.lib.dir", "spark-kafka")


def connector_jars() -> list[str]:
    return [str(p) for p in sorted(connector_lib().glob("*.jar"))]


if __name__ == "__main__":
    print(connector_lib())
    sys.exit(0)
