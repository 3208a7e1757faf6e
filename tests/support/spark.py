"""One local[2] SparkSession for the whole test run (Spark start-up costs ~10 s),
with Spark's own Kafka connector on its classpath (tests/support/spark_kafka.py)
so that format("kafka") and format("muster") run side by side."""

from __future__ import annotations

from typing import Any

from muster.analytics.session import start_session

# why the connector's jars could not be had, when they could not (tests of
# format("kafka") fail with it; the others run on without the connector)
CONNECTOR_ERROR: str | None = None


def start_spark_session(app_name: str = "muster-tests") -> Any:
    global CONNECTOR_ERROR
    from tests.support.spark_kafka import connector_jars

    try:
        jars = connector_jars()
    except Exception as exc:  # Maven or the network: format("muster") needs none of it
        CONNECTOR_ERROR = f"Spark's Kafka connector could not be resolved: {exc}"
        jars = []
    spark, _started = start_session("local[2]", app_name, jars=jars)
    return spark
