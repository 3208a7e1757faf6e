"""CI's short run of reliability/graceful.py: SIGTERM while third-party
producers and committers run; a clean stop, nothing lost, no duplicates, and
a next start that scans no more than each segment's tail."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "reliability"))

from graceful import run


def test_sigterm_under_load_is_clean_and_the_next_start_needs_no_recovery(
    tmp_path: Path,
) -> None:
    figures = run(seconds=3.0, workdir=tmp_path)
    print(figures.line())
    assert figures.exit_code == 0 and figures.stop_s < 10
    assert figures.acked > 100 and figures.commits > 0
    assert (figures.lost, figures.commits_lost, figures.duplicates) == (0, 0, 0)
    assert figures.clean_marker and figures.snapshots == figures.partitions > 50
    assert figures.replayed == 0 and figures.tail_bound_exceeded == 0
    assert figures.scanned < figures.total_bytes
