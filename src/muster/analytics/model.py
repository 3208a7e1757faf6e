"""Plain results handed from the Spark stages to the report and the console."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class GroupSummary:
    """One group over the analysed window (times in milliseconds). None: not
    known; a history derived from `__consumer_offsets` (`history` "derived")
    has no rebalance durations or time per state."""

    group_id: str
    rebalances: int
    completed_rebalances: int
    causes: dict[str, int]  # rebalances started by each cause
    total_duration_ms: int | None
    mean_duration_ms: float | None
    p95_duration_ms: float | None
    max_duration_ms: int | None
    window_start_ms: int
    window_end_ms: int
    active_ms: int | None
    not_consuming_ms: int | None
    not_consuming_fraction: float | None
    commits: int
    partition_commits: int
    commits_per_minute: float | None
    max_lag_now: int | None
    total_lag_now: int | None
    mean_between_rebalances_ms: float | None = None  # completion to completion
    history: str = "events"  # or "derived": from __consumer_offsets


@dataclass
class GroupReport:
    """What the HTML report shows for one group."""

    summary: GroupSummary
    rebalances: list[dict[str, Any]] = field(default_factory=list)  # rows of the rebalances table
    lag: dict[str, list[tuple[int, float]]] = field(default_factory=dict)  # "topic-p" -> series
    commit_rate: list[tuple[int, int, int]] = field(default_factory=list)  # minute, commits, parts
    story: list[list[str]] = field(default_factory=list)  # muster.explain blocks
