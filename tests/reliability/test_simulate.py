"""CI's run of reliability/simulate.py: 1,000 seeds of the whole coordinator
(real runtime and shard, fake clock and log) with every invariant checked
after every op; and proof that the invariants and the shrinker bite."""

from __future__ import annotations

import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "reliability"))

import simulate

from muster.coordinator.offsets import manager, state


@pytest.mark.timeout(900)  # ~1 min on an idle 2-core machine; a busy one can take 5
def test_a_thousand_seeds_hold_every_invariant() -> None:
    # about 100 s of one core (consumer groups, and the classic clients in them,
    # make the replay checks dearer): the seeds are independent, so they run on
    # every core (spawned, not forked: the suite may have threads running)
    workers = max(1, min(4, os.cpu_count() or 1))
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        results = list(pool.map(simulate._one, range(1000), chunksize=25))
    failed = {seed: out.failure for seed, out in results if out.failure is not None}
    assert failed == {}, f"reproduce: reliability/simulate.py --seed {min(failed)}"
    assert sum(out.steps for _, out in results) > 50_000  # the seeds did run their ops


def _older_wins(committed: dict, tp: tuple[str, int], c: state.CommittedOffset) -> None:
    committed.setdefault(tp, c)  # planted bug: a newer commit never replaces an older one


def test_a_planted_bug_is_found_and_shrunk_to_a_short_trace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(manager, "put_committed", _older_wins)
    seed = next(s for s in range(200) if simulate.run(simulate.generate(s)).failure)
    ops = simulate.generate(seed)
    small = simulate.shrink(ops)
    failure = simulate.run(small).failure
    assert failure is not None and failure.endswith("(reordered)")
    assert [op[0] for op in small] == ["commit", "commit"] and len(ops) > 10


def test_one_seed_reproduces_from_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert simulate.main(["--seed", "7"]) == 0
    assert capsys.readouterr().out.startswith("simulate: seed 7 ok")


def test_a_refused_group_tombstone_with_a_new_incarnations_store_in_flight() -> None:
    """Found by the simulation (seed 5755, shrunk): an Empty group's store in
    flight, its expiry tombstone refused (ENOSPC), a new incarnation storing
    an older generation meanwhile. The failed tombstone raised the new
    group's generation above the record it was writing and counted it at
    rest, so a restart would have gone back a generation. The interleaving
    (one append refused between two held ones) needs the simulation's log;
    the core-level sibling is tests/core/test_offsets.py::
    test_a_failed_group_tombstone_does_not_mark_the_new_incarnations_store_durable."""
    trace = [
        ("join", 1, 2, 2),
        ("hold", 1),
        ("step", 1, 4),
        ("advance", 21000),
        ("refuse", 1),
        ("advance", 31000),
        ("step", 1, 3),
        ("advance", 10000),
        ("hold", 0),
    ]
    assert simulate.run(trace).failure is None


def test_a_planted_double_ownership_in_a_consumer_group_is_found(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The consumer-group invariant bites: with reconciliation handing out a
    partition its previous owner has not released yet, a seed breaks it."""
    from muster.coordinator.groups.modern import reconcile

    real = reconcile._next

    def careless(member, epoch, target_epoch, target, partition_epoch, owned):  # type: ignore[no-untyped-def]
        return real(member, epoch, target_epoch, target, lambda t, p: -1, owned)

    monkeypatch.setattr(reconcile, "_next", careless)
    failures = (simulate.run(simulate.generate(s)).failure for s in range(300))
    found = next(f for f in failures if f is not None)
    assert found.startswith("consumer group") and "held by" in found
