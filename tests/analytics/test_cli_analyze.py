"""`muster analyze` failing fast and readably (the summary itself is checked
in test_churn_e2e.py, on a real churn scenario)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from muster.cli.analyze import _headline
from muster.cli.main import app
from tests.support.brokers import free_port


def test_unreachable_broker_fails_before_spark_starts(tmp_path: Path) -> None:
    address = f"127.0.0.1:{free_port()}"
    result = CliRunner().invoke(app, ["analyze", "--bootstrap", address, "--out", str(tmp_path)])
    assert result.exit_code == 1
    assert f"cannot connect to {address} (connection refused)" in result.output
    assert "Starting Spark" not in result.output


def test_spark_errors_shown_as_their_first_line_and_python_cause() -> None:
    spark_error = RuntimeError(
        "[PYTHON_DATA_SOURCE_ERROR] Failed to read partitions: Traceback (most recent call last):\n"
        '  File "source.py", line 3, in read\n'
        "muster.spark.errors.SourceError: partition orders-3 is offline\n"
        "SQLSTATE: 38000"
    )
    assert _headline(spark_error) == (
        "[PYTHON_DATA_SOURCE_ERROR] Failed to read partitions: Traceback (most recent call "
        "last): ... muster.spark.errors.SourceError: partition orders-3 is offline"
    )
    assert _headline(ValueError("one line")) == "one line"
    assert _headline(KeyError()) == "KeyError"
