"""The broker's wall clock, in the epoch milliseconds Kafka uses everywhere."""

from __future__ import annotations

import time


def now_ms() -> int:
    return time.time_ns() // 1_000_000
