"""The local SparkSession `muster analyze` runs on."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

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


@contextlib.contextmanager
def jvm_stderr_to(path: Path) -> Iterator[TextIO]:
    """Sends file descriptor 2 to PATH meanwhile, so the Spark JVM started
    inside (which inherits it) writes its warnings there, not into a progress
    display; yields a stream on the original stderr for that display."""
    sys.stderr.flush()
    saved = os.dup(2)
    original = os.fdopen(os.dup(saved), "w", buffering=1)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab") as log:
        os.dup2(log.fileno(), 2)
    try:
        yield original
    finally:
        sys.stderr.flush()
        original.flush()
        os.dup2(saved, 2)
        os.close(saved)
        original.close()


def stop_session(spark: Any) -> None:
    """Stops the session and ends its JVM: `SparkSession.stop()` alone leaves
    the py4j gateway's JVM (~1 GB resident) running until Python exits, which
    a process that goes on serving (the demo with --keep-serving) must not
    carry. A later `start_session` launches a new JVM."""
    from pyspark import SparkContext

    spark.stop()
    gateway = SparkContext._gateway
    if gateway is None:
        return
    proc = getattr(gateway, "proc", None)
    try:
        gateway.shutdown()
    except Exception:  # the JVM may already be gone
        pass
    if proc is not None:
        proc.terminate()
        try:
            proc.wait(10)
        except Exception:
            proc.kill()
    SparkContext._gateway = None
    SparkContext._jvm = None
