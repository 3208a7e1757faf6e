"""One local[2] SparkSession for the whole test run (Spark start-up costs ~10 s)."""

from __future__ import annotations

import os
import sys
from typing import Any


def start_spark_session(app_name: str = "muster-tests") -> Any:
    # Executor Python workers must run the venv's interpreter, where muster is installed.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.memory", "2g")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark
