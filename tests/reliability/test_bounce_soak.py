"""CI's short run of reliability/bounce_soak.py: 40 s of members of one group
killed (-9) and stopped at random while a producer writes, cooperative-sticky
with half the members static: nothing acknowledged goes unconsumed, and no
partition is consumed by two members at once beyond one session timeout."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "reliability"))

import bounce_soak


def test_a_bounced_group_loses_nothing_and_never_shares_a_partition(tmp_path: Path) -> None:
    fig = bounce_soak.run(40, "cooperative-static", 10, seed=3, workdir=tmp_path)
    print(fig.line())
    assert fig.kills + fig.stops >= 5 and fig.acked > 1000
    assert fig.lost == 0, f"unconsumed (partition, offset): {fig.lost_examples}"
    assert fig.max_overlap_s <= bounce_soak.SESSION_MS / 1000, fig.overlap_where
    assert fig.consumed == fig.acked + fig.duplicates  # every consumed record was acknowledged
