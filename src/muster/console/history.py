"""A group's rebalance history for the console, from `__muster_group_events`.

`EventsTail` keeps one assign-mode consumer on the events topic's partition
and reads on from where it stopped each time a page asks, keeping the last
`keep` events of each group (so a page never re-reads the topic). A broker
without the topic (any Kafka) answers `available = False`.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Mapping
from typing import Any

from muster import explain
from muster.client.admin import AIOAdmin
from muster.client.aio_consumer import AIOConsumer
from muster.client.types import TopicPartition
from muster.console.reader import Slice, consumer_conf, read_with

EVENTS_TOPIC = "__muster_group_events"
BATCH = 5_000


class EventsTail:
    def __init__(self, conf: Mapping[str, Any], keep: int = 1_000):
        self.conf = dict(conf)
        self.keep = keep
        self.next_offset = 0
        self.available: bool | None = None  # None: not looked yet
        self.by_group: dict[str, deque[explain.Event]] = {}
        self._consumer: AIOConsumer | None = None
        self._lock = asyncio.Lock()

    async def close(self) -> None:
        if self._consumer is not None:
            await self._consumer.close(autocommit=False)
            self._consumer = None

    async def catch_up(self, admin: AIOAdmin) -> None:
        """Reads every event appended since the last call."""
        async with self._lock:
            tp = TopicPartition(EVENTS_TOPIC, 0)
            if self.available is None:
                topics = await admin.list_topics()
                self.available = EVENTS_TOPIC in topics
            if not self.available:
                return
            ends = await admin.list_offsets({tp: "latest"})
            end = ends.get(tp, -1)
            if self._consumer is None:
                self._consumer = await AIOConsumer(consumer_conf(self.conf)).start()
            while self.next_offset < end:
                records = await read_with(self._consumer, Slice(tp, self.next_offset, end, BATCH))
                if not records:
                    break
                for record in records:
                    self._add(record.value)
                self.next_offset = records[-1].offset + 1

    def _add(self, value: bytes | None) -> None:
        event = explain.parse_event(value)
        if event is None:
            return
        events = self.by_group.get(event.group_id)
        if events is None:
            events = self.by_group[event.group_id] = deque(maxlen=self.keep)
        events.append(event)

    def events(self, group_id: str) -> list[explain.Event]:
        return list(self.by_group.get(group_id, ()))
