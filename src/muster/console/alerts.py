"""Alerts on the overview: groups rebalancing for long, lag growing."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from muster import explain
from muster.client.admin import GroupListing
from muster.console.history import EventsTail

LONG_REBALANCE_MS = 30_000
REBALANCING = ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling")


@dataclass(frozen=True)
class Alert:
    group_id: str
    text: str


def rebalancing_since(events: list[explain.Event]) -> int | None:
    """When the group's open rebalance started (ms), None if none is open."""
    items = explain.timeline(events)
    for item in reversed(items):
        if isinstance(item, explain.Rebalance):
            return item.started_ms if item.completed is None else None
    return None


def lag_growing(samples: list[tuple[float, int]], window: int = 5) -> bool:
    """The last `window` lag samples only went up (and did go up)."""
    tail = [lag for _, lag in samples[-window:]]
    return (
        len(tail) >= window
        and all(a <= b for a, b in itertools.pairwise(tail))
        and (tail[-1] > tail[0])
    )


def alerts(
    groups: Iterable[GroupListing],
    tail: EventsTail,
    lag_samples: Mapping[str, list[tuple[float, int]]],
    now_ms: int,
) -> list[Alert]:
    out = []
    for g in groups:
        if g.state in REBALANCING:
            since = rebalancing_since(tail.events(g.group_id))
            if since is None:
                out.append(Alert(g.group_id, f"rebalancing ({g.state})"))
            elif now_ms - since >= LONG_REBALANCE_MS:
                out.append(
                    Alert(
                        g.group_id,
                        f"rebalancing for {explain.duration(now_ms - since)} ({g.state})",
                    )
                )
        if lag_growing(lag_samples.get(g.group_id, [])):
            out.append(Alert(g.group_id, "lag growing"))
    return out
