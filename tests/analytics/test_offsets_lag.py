"""Commits decoded from `__consumer_offsets` records and lag over time, on
hand-made records with known timestamps: exact commit counts and lag values."""

from __future__ import annotations

from typing import Any

import pytest

from muster.analytics.lag import current_lag, lag_series, log_end_changes, time_grid
from muster.analytics.offsets import commit_rate, commit_totals, commits
from muster.records.offsets_topic import (
    GroupMetadataValue,
    OffsetCommitValue,
    group_metadata_record,
    offset_commit_record,
)
from tests.analytics.records import records_df

OFFSETS = "__consumer_offsets"


def commit(group: str, p: int, offset: int, at: int) -> tuple[bytes, bytes | None]:
    return offset_commit_record(group, "t", p, OffsetCommitValue(offset, commit_timestamp=at))


@pytest.fixture(scope="module")
def commit_rows(spark: Any) -> Any:
    k1, v1 = commit("g", 0, 5, 2000)
    k2, v2 = commit("g", 0, 10, 5000)
    k3, v3 = commit("g", 1, 3, 5000)  # same request as the one before
    k4, _ = commit("g", 0, 0, 0)  # a deletion: null value
    km, vm = group_metadata_record("g", GroupMetadataValue("consumer", 1, "range", "a"))
    records = records_df(
        spark,
        [
            (k1, v1, OFFSETS, 7, 0, 2000),
            (km, vm, OFFSETS, 7, 1, 2500),
            (k2, v2, OFFSETS, 7, 2, 5000),
            (k3, v3, OFFSETS, 7, 3, 5000),
            (k4, None, OFFSETS, 7, 4, 9500),
            (b"\x00\x09junk", b"junk", OFFSETS, 7, 5, 9600),  # a key version nobody knows
        ],
    )
    return commits(records).cache()


@pytest.fixture(scope="module")
def data(spark: Any) -> Any:
    # t-0: offsets 0-4 written at 1500, 5-9 at 4000, 10-14 at 6000; t-1: 0-2 at 1000
    rows = [
        (None, b"x", "t", 0, o, 1500 + 2500 * (o // 5 > 0) + 2000 * (o // 10)) for o in range(15)
    ]
    rows += [(None, b"y", "t", 1, o, 1000) for o in range(3)]
    return records_df(spark, rows)


def test_commits_and_deletions_decoded(commit_rows: Any) -> None:
    rows = [
        (r.group_id, r.topic, r.partition, r.committed_offset, r.commit_ms, r.deleted)
        for r in commit_rows.orderBy("partition", "commit_ms").collect()
    ]
    assert rows == [
        ("g", "t", 0, 5, 2000, False),
        ("g", "t", 0, 10, 5000, False),
        ("g", "t", 0, None, 9500, True),
        ("g", "t", 1, 3, 5000, False),
    ]


def test_commit_rate_counts_requests_and_partitions(commit_rows: Any) -> None:
    [row] = commit_rate(commit_rows).collect()
    assert (row.group_id, row.commits, row.partition_commits) == ("g", 2, 3)
    windows = commit_rows.sparkSession.createDataFrame(
        [("g", 120_000)], "group_id string, window_ms long"
    )
    [total] = commit_totals(commit_rows, windows).collect()
    assert (total.commits, total.partition_commits) == (2, 3)
    assert total.commits_per_minute == pytest.approx(1.0)


def test_time_grid() -> None:
    assert time_grid(1000, 10_000, 240) == list(range(1000, 10_001, 1000))
    assert time_grid(0, 9500, 240) == [*range(0, 9001, 1000), 9500]
    # long windows: whole seconds apart, at most `points` samples
    grid = time_grid(0, 3_600_000, 100)
    assert len(grid) <= 100 and grid[-1] == 3_600_000 and grid[1] % 1000 == 0


def test_lag_per_partition_over_time(spark: Any, commit_rows: Any, data: Any) -> None:
    lag = lag_series(spark, commit_rows, log_end_changes(data), time_grid(1000, 10_000))
    got = {(r.partition, r.t_ms): (r.committed, r.log_end, r.lag) for r in lag.collect()}
    p0 = {t: v for (p, t), v in got.items() if p == 0}
    # no commit before 2000; the deletion at 9500 ends the series
    assert sorted(p0) == list(range(2000, 9001, 1000))
    assert p0[2000] == (5, 5, 0)  # commit and records at or before t count
    assert p0[3000] == (5, 5, 0)
    assert p0[4000] == (5, 10, 5)
    assert p0[5000] == (10, 10, 0)
    assert p0[6000] == (10, 15, 5)
    assert p0[9000] == (10, 15, 5)
    p1 = {t: v for (p, t), v in got.items() if p == 1}
    assert sorted(p1) == list(range(5000, 10_001, 1000))
    assert set(p1.values()) == {(3, 3, 0)}
    [now] = current_lag(lag).collect()
    assert (now.group_id, now.max_lag_now, now.total_lag_now) == ("g", 0, 0)
