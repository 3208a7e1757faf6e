"""The disk-fault campaign, short: one fill/free round of a real full file
system (a tmpfs the test mounts; CI runs as root) under a running broker."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "reliability"))

from disk_faults import ANSWER_BOUND_S, run


def test_full_disk_refuses_cleanly_and_resumes_without_restart(tmp_path: Path) -> None:
    figures = run(rounds=1, fs_mib=8, workdir=tmp_path)
    print(figures.line())
    assert figures.rounds == 1
    assert len(figures.acked) > 1000
    assert set(figures.refused) == {"KAFKA_STORAGE_ERROR"}
    # a refused commit gets Kafka's answer for a storage error on the
    # coordinator's log; one that still fitted must be there (commits_lost)
    assert set(figures.commit_errors) <= {"NOT_COORDINATOR"}
    assert figures.slowest_answer_full_s < ANSWER_BOUND_S
    assert figures.resume_s and max(figures.resume_s) < 30
    assert (figures.lost, figures.commits_lost, figures.truncations) == (0, 0, 0)
    assert figures.commits_acked >= 1
