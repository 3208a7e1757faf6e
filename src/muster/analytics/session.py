"""The local SparkSession `muster analyze` runs on."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

# Spark's own WARN lines at start-up would break into the progress display;
# errors still show.
_LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


def _log_config() -> str:
    path = Path(tempfile.gettempdir()) / "muster-analyze-log4j2.properties"
    if not path.exists() or path.read_text() != _LOG4J2:
        path.write_text(_LOG4J2)
    return str(path)


def start_session(
    master: str = "local[*]", app_name: str = "muster-analyze", jars: list[str] | None = None
) -> tuple[Any, bool]:
    """(session, started): an active session in this process is reused (and
    `started` is False: its owner stops it), else a local one is started with
    `jars` as spark.jars (by default those MUSTER_SPARK_JARS names: Spark's
    Kafka connector, muster.spark.connector)."""
    from muster.spark.connector import configured_jars

    # Python workers must run this interpreter, where muster is importable.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    jars = configured_jars() if jars is None else jars
    builder = SparkSession.builder
    if jars:
        builder = builder.config("spark.jars", ",".join(jars))
    spark = (
        builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        # our own progress bar shows the stages; Spark's would interleave with it
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={_log_config()}")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark, True
