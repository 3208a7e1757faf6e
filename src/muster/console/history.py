"""A group's rebalance history for the console, from `__muster_group_events`
(or, without it, derived from `__consumer_offsets`: `derived_history`).

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
from muster.client.errors import KafkaError
from muster.client.types import TopicPartition
from muster.console.reader import Slice, consumer_conf, read_with
from muster.coordinator.derived import OFFSETS_TOPIC, Generation, derive, offsets_partition

EVENTS_TOPIC = "__muster_group_events"
BATCH = 5_000
DERIVE_CAP = 200_000  # offsets-topic records read for one group's derived history


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


async def derived_history(
    conf: Mapping[str, Any], admin: AIOAdmin, group_id: str, cap: int = DERIVE_CAP
) -> list[Generation] | None:
    """The group's history from its `__consumer_offsets` partition (the last
    `cap` records of it); None when that topic cannot be read."""
    try:
        count = (await admin.list_topics()).get(OFFSETS_TOPIC, 0)
        if not count:
            return None
        tp = TopicPartition(OFFSETS_TOPIC, offsets_partition(group_id, count))
        start = (await admin.list_offsets({tp: "earliest"})).get(tp, -1)
        end = (await admin.list_offsets({tp: "latest"})).get(tp, -1)
        if start < 0 or end < 0:
            return None
        start = max(start, end - cap)
        consumer = await AIOConsumer(consumer_conf(conf)).start()
        records = []
        try:
            while start < end:
                got = await read_with(consumer, Slice(tp, start, end, BATCH))
                if not got:
                    break
                records += [(r.key, r.value, r.timestamp) for r in got]
                start = got[-1].offset + 1
        finally:
            await consumer.close(autocommit=False)
    except KafkaError:
        return None
    return derive(records, group_id)
