"""Alerts on the overview: groups rebalancing for long, lag growing."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from muster import explain
from muster.client.admin import GroupListing
from muster.console.history import EventsTail

LONG_REBALANCE_MS = 30_000
EXPIRY_WARNING_MS = 24 * 3600 * 1000  # warn a day before a group's offsets expire
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


def empty_since(events: list[explain.Event]) -> int | None:
    """When the group last became Empty (ms), None if it is not Empty by its events."""
    for event in reversed(events):
        if isinstance(event, explain.GroupStateChanged):
            return event.at_ms if event.to_state == "Empty" else None
    return None


def alerts(
    groups: Iterable[GroupListing],
    tail: EventsTail,
    lag_samples: Mapping[str, list[tuple[float, int]]],
    now_ms: int,
    retention_ms: int | None = None,
) -> list[Alert]:
    """`retention_ms`: the broker's offsets.retention.minutes (None: unknown);
    an Empty group's offsets expire that long after it became Empty."""
    out = []
    for g in groups:
        if g.state == "Empty" and retention_ms:
            since = empty_since(tail.events(g.group_id))
            if since is not None and since + retention_ms - now_ms <= EXPIRY_WARNING_MS:
                left = max(0, since + retention_ms - now_ms)
                out.append(Alert(g.group_id, f"offsets expire in {explain.duration(left)}"))
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
