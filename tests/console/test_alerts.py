"""The overview's alerts, from the events the console has read."""

from __future__ import annotations

from collections import deque

from muster.client.admin import GroupListing
from muster.console.alerts import alerts
from muster.console.history import EventsTail
from muster.coordinator.events import GroupStateChanged


def test_offsets_expiry_alert_for_an_empty_group() -> None:
    tail = EventsTail({})
    tail.by_group["g"] = deque([GroupStateChanged("g", "Stable", "Empty", 3, "member_left", 1_000)])
    day = 24 * 3600 * 1000
    listed = [GroupListing("g", "consumer", "Empty")]
    (alert,) = alerts(listed, tail, {}, now_ms=1_000 + 6 * day + 3600_000, retention_ms=7 * day)
    assert alert.text.startswith("offsets expire in")
    assert alerts(listed, tail, {}, now_ms=1_000 + day, retention_ms=7 * day) == []
