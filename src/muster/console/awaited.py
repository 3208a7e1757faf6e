"""During a classic group's rebalance: who the join phase waits for, and
until when. The members of the last stable generation (from
`__consumer_offsets`) are the ones expected back; the coordinator's
DescribeGroups tells who it holds now; the join phase ends at the latest when
the largest rebalance timeout has run since the rebalance started."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from muster.console.derived import DerivedMember, Generation


@dataclass(frozen=True)
class Expected:
    member: DerivedMember
    present: bool  # still held by the coordinator (rejoined, or not yet dropped)


@dataclass(frozen=True)
class Awaited:
    generation: int
    expected: tuple[Expected, ...]
    newcomers: tuple[str, ...]  # members the coordinator holds that the last generation lacked
    deadline_ms: int | None  # start + largest rebalance timeout

    @property
    def missing(self) -> tuple[Expected, ...]:
        return tuple(e for e in self.expected if not e.present)


def awaited(
    history: list[Generation], described: Iterable[str], started_ms: int | None
) -> Awaited | None:
    """None without a stable generation to compare with."""
    last = next((g for g in reversed(history) if g.kind == "generation" and g.members), None)
    if last is None:
        return None
    now = set(described)
    expected = tuple(Expected(m, m.member_id in now) for m in last.members)
    before = {m.member_id for m in last.members}
    timeout = max((m.rebalance_timeout_ms for m in last.members), default=-1)
    deadline = started_ms + timeout if started_ms is not None and timeout > 0 else None
    return Awaited(last.number, expected, tuple(sorted(now - before)), deadline)
