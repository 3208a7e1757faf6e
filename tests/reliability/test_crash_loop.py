"""CI's short run of reliability/crash_loop.py: 10 kill -9 restarts under
confluent-kafka and kafka-python producers (idempotent and transactional)
and synchronous commits, then the log check and the 12 torn-write cases."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "reliability"))

from crash_loop import run


def test_ten_kill_9_restarts_lose_nothing_acknowledged(tmp_path: Path) -> None:
    figures, _, broker = run(restarts=10, seed=13, workdir=tmp_path)
    broker.close()
    print(figures.line())
    assert figures.restarts == 10
    assert figures.acked > 1000 and figures.txns > 0 and figures.commits > 0
    assert (figures.lost, figures.moved, figures.half_visible, figures.commits_lost) == (0, 0, 0, 0)
    assert figures.log_problems == [] and figures.partitions_checked > 50
    verdicts = {(o.kind, o.mode): o.verdict for o in figures.torn}
    assert len(verdicts) == 12
    assert "WRONG" not in verdicts.values() and "no such file" not in verdicts.values()
    # a damaged log-start-offset.json cannot be recovered from: refused, with a message
    assert verdicts[("log-start-offset.json", "corrupted")] == "refused"
