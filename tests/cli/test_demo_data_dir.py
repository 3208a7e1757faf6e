"""`muster demo` starts each run from an empty data directory, but only ever
empties one an earlier demo made, and never one a running broker holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from muster.demo.scenario import DEMO_MARKER, fresh_data_dir
from muster.server.startup import DataDirLock, StartupError


def earlier_run(data: Path) -> None:
    fresh_data_dir(data, keep=False)
    (data / "demo.orders-0").mkdir()


def test_a_new_directory_is_made_and_marked(tmp_path: Path) -> None:
    data = tmp_path / "muster-data"
    line = fresh_data_dir(data, keep=False)
    assert line.startswith(f"starting from an empty {data}/")
    assert [p.name for p in data.iterdir()] == [DEMO_MARKER]


def test_an_earlier_demo_run_is_emptied(tmp_path: Path) -> None:
    data = tmp_path / "muster-data"
    earlier_run(data)
    line = fresh_data_dir(data, keep=False)
    assert line.startswith("removed the earlier demo run's data")
    assert [p.name for p in data.iterdir()] == [DEMO_MARKER]


def test_keep_data_keeps_the_earlier_run_and_says_so(tmp_path: Path) -> None:
    data = tmp_path / "muster-data"
    earlier_run(data)
    line = fresh_data_dir(data, keep=True)
    assert "keeping" in line and "without --keep-data the demo starts fresh" in line
    assert (data / "demo.orders-0").is_dir()


def test_a_directory_the_demo_did_not_make_is_kept(tmp_path: Path) -> None:
    data = tmp_path / "muster-data"
    (data / "events-0").mkdir(parents=True)
    line = fresh_data_dir(data, keep=False)
    assert "the demo did not make" in line and "--data-dir NEW_DIR" in line
    assert (data / "events-0").is_dir()


def test_a_directory_a_running_broker_holds_is_left_alone(tmp_path: Path) -> None:
    data = tmp_path / "muster-data"
    earlier_run(data)
    lock = DataDirLock(data).acquire()
    try:
        with pytest.raises(StartupError, match="in use by another muster broker"):
            fresh_data_dir(data, keep=False)
    finally:
        lock.release()
    assert (data / "demo.orders-0").is_dir()
