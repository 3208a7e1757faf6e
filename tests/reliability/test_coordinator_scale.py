"""CI's short run of reliability/coordinator_scale.py: 1,000 groups of 100 old offsets load,
are served, and expire, while a live group keeps committing and reading back."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "reliability"))

import coordinator_scale


def test_loaded_offsets_are_served_then_expire_while_live_commits_continue() -> None:
    fig = coordinator_scale.run(groups=1000, expiry_after_ms=8000, probe_s=12.0, keep=False)
    print(coordinator_scale.closing_line(fig))
    assert fig.records == 100_000
    assert fig.served_s > 0 and fig.latencies_ms  # the loaded offset was read back, live ran
    assert fig.checked > 0 and fig.emptied == fig.checked
