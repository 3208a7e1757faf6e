"""CI's short run of reliability/limits.py: 2,000 idle connections (the
campaign holds 10,000), connection caps, slowloris, a 2 GiB frame, 1 MiB topic
names, 100,000 partitions, 10 MB of JoinGroup metadata, group.max.size."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "reliability"))

from limits import RSS_BOUND_MIB, run


def test_hostile_sizes_and_counts_are_answered_within_their_bounds(tmp_path: Path) -> None:
    figures = run(idle=2000, workdir=tmp_path)
    print(figures.line())
    failed = [(c.name, c.outcome) for c in figures.cases if not c.ok]
    assert failed == []
    assert len(figures.cases) == 15
    assert figures.peak_rss_mib < RSS_BOUND_MIB
