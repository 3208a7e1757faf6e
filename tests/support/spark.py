"""One local[2] SparkSession for the whole test run (Spark start-up costs ~10 s)."""

from __future__ import annotations

from typing import Any

from muster.analytics.session import start_session


def start_spark_session(app_name: str = "muster-tests") -> Any:
    spark, _started = start_session("local[2]", app_name)
    return spark
