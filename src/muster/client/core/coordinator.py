"""Finding a group's coordinator (FindCoordinator through any broker), shared
by the classic member and the consumer-protocol member. A mixin: it reads
and sets the member's `coordinator`, `_in_flight` and `_backoff_until`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from muster.client.core.messages import FIND_COORDINATOR, NONE, Request
from muster.client.errors import error_for


class CoordinatorLookup:
    def _find_step(self, now_ms: int, out: list[Request], wanted: bool) -> None:
        """Ask for the coordinator when it is unknown and something needs it."""
        if not wanted or "find" in self._in_flight or now_ms < self._backoff_until:
            return
        self._in_flight.add("find")
        out.append(
            Request(
                "find",
                FIND_COORDINATOR,
                {"key": self.group_id, "key_type": 0, "coordinator_keys": [self.group_id]},
                "any",
            )
        )

    def _on_find(self, request: Request, response: Any, now_ms: int) -> None:
        self._in_flight.discard("find")
        coordinators = getattr(response, "coordinators", None)
        entry = coordinators[0] if coordinators else response
        code = int(entry.error_code)
        if code != NONE:
            error = error_for(code, getattr(entry, "error_message", None))
            if error.retriable:
                self._backoff_until = now_ms + self.retry_backoff_ms
                return
            self._fail(error)
            return
        self.coordinator = (int(entry.node_id), str(entry.host), int(entry.port))
        self._last_heartbeat_ok = now_ms


def checked_topics(topics: Iterable[str]) -> frozenset[str]:
    """A subscription's topic names, refused when one is blank."""
    names = frozenset(topics)
    for t in names:
        if not t or not t.strip():
            raise ValueError("topic names must be non-empty")
    return names
