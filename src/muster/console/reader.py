"""Reads a slice of one partition: `[start, start + limit)` records, never more.

A fresh assign-mode `AIOConsumer` per slice (no group, no commits), stopped as
soon as it has `limit` records or reaches the end it was told; the message
browser and the events tail both read through here, so a topic is never held
in memory whole.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from muster.client.aio_consumer import AIOConsumer
from muster.client.types import ConsumerRecord, TopicPartition

# a record larger than this is still returned, cut by the page that shows it
FETCH_BYTES = 1 << 20


def consumer_conf(conf: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in conf.items() if k != "group.id"}
    out |= {
        "enable.auto.commit": False,
        "isolation.level": "read_uncommitted",
        "auto.offset.reset": "earliest",
        "max.partition.fetch.bytes": FETCH_BYTES,
        "fetch.max.wait.ms": 100,
    }
    return out


@dataclass(frozen=True)
class Slice:
    """Offsets [start, end) of one partition, at most `limit` records of them."""

    tp: TopicPartition
    start: int
    end: int
    limit: int

    @property
    def empty(self) -> bool:
        return self.start >= self.end or self.limit <= 0


async def read_slice(
    conf: Mapping[str, Any], part: Slice, timeout_s: float = 5.0
) -> list[ConsumerRecord]:
    """The records of `part`, on a consumer of their own."""
    if part.empty:
        return []
    consumer = await AIOConsumer(consumer_conf(conf)).start()
    try:
        return await read_with(consumer, part, timeout_s)
    finally:
        await consumer.close(autocommit=False)


async def read_with(
    consumer: AIOConsumer, part: Slice, timeout_s: float = 5.0
) -> list[ConsumerRecord]:
    """As `read_slice`, on a consumer the caller keeps (the events tail)."""
    if part.empty:
        return []
    tp, start, end, limit = part.tp, part.start, part.end, part.limit
    consumer.assign([tp])
    consumer.seek(tp, start)
    out: list[ConsumerRecord] = []
    deadline = time.monotonic() + timeout_s
    while len(out) < limit and time.monotonic() < deadline:
        for record in await consumer.poll(min(0.5, max(0.0, deadline - time.monotonic()))):
            if record.offset >= end:
                return out
            if record.offset >= start:
                out.append(record)
                if len(out) >= limit:
                    return out
        position = consumer.position(tp)
        if position is not None and position >= end:
            break
    return out
