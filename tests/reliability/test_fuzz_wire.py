"""CI's short run of reliability/fuzz_wire.py: 20,000 mutated frames seeded
from real confluent-kafka and kafka-python sessions, against a running broker."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "reliability"))

from fuzz_wire import PROBE_BOUND_S, RSS_BOUND_MIB, run


def test_twenty_thousand_mutated_frames_no_crash_no_hang_bounded_memory(tmp_path: Path) -> None:
    figures = run(frames=20_000, seed=13, workers=8, workdir=tmp_path)
    print(figures.line())
    assert figures.seeds >= 50 and figures.api_keys >= 15  # real sessions were recorded
    assert figures.frames == 20_000
    assert not figures.crashed and figures.served_after
    assert figures.probe_failures == 0 and figures.probe_max_ms < PROBE_BOUND_S * 1000
    assert figures.peak_rss_mib < RSS_BOUND_MIB
    # each bad frame: an answer, or a close the broker logged; no handler crashed
    assert figures.outcomes["answered"] > 0
    assert figures.close_log_lines >= figures.outcomes["closed"] > 0
    assert figures.tracebacks == 0
    # only requests that may wait (Fetch long polls, joins, acks=0 produce) stay unanswered
    assert set(figures.parked_by_api) <= {0, 1, 11, 14}
