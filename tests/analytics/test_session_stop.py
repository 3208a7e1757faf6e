"""`stop_session` ends Spark's JVM, not only the session: the demo goes on
serving after its analysis, and must then hold the broker's memory only
(~115 MiB measured) instead of the JVM's ~900 MB beside it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

# In its own interpreter: the suite's shared SparkSession lives in this one, and
# stopping its JVM here would end it for every later Spark test.
SCRIPT = textwrap.dedent(
    """
    import json, os
    from pyspark import SparkContext
    from muster.analytics.session import start_session, stop_session

    def children():
        found = []
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/children") as f:
                found += f.read().split()
        return found

    spark, started = start_session("local[1]", "stop-session-test")
    jvm = SparkContext._gateway.proc
    before = children()
    count = spark.range(3).count()
    stop_session(spark)
    print(json.dumps({"started": started, "count": count, "jvm": str(jvm.pid),
                      "before": before, "exit": jvm.poll(), "after": children()}))
    """
)


def test_stop_session_ends_the_jvm() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["started"] and seen["count"] == 3
    assert seen["jvm"] in seen["before"]  # the JVM was this interpreter's child
    assert seen["exit"] is not None, "the JVM still ran after stop_session"
    assert seen["after"] == [], "stop_session left a child process behind"
