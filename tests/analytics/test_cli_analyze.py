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


def test_demo_source_kafka_without_jars_fails_in_one_line(tmp_path: Path) -> None:
    env = {"MUSTER_SPARK_JARS": ""}
    args = ["demo", "--data-dir", str(tmp_path / "d"), "--out", str(tmp_path / "o")]
    result = CliRunner().invoke(app, [*args, "--source", "kafka", "--exit"], env=env)
    assert result.exit_code == 1
    [line] = result.output.strip().splitlines()
    assert line.startswith("error: --source kafka: Spark's Kafka connector needs its jars")
    assert not (tmp_path / "d").exists()  # before the broker started


def test_spark_jars_from_files_and_folders(tmp_path: Path) -> None:
    from muster.spark.connector import jars_from

    (tmp_path / "b.jar").touch()
    (tmp_path / "a.jar").touch()
    (tmp_path / "notes.txt").touch()
    one = tmp_path / "x" / "one.jar"
    assert jars_from(f" {tmp_path} ,{one},") == [
        str(tmp_path / "a.jar"),
        str(tmp_path / "b.jar"),
        str(one),
    ]
    assert jars_from(None) == [] == jars_from("")
