"""Small helpers of the consumer: its clock and how it reads the arguments
applications pass (partitions, offsets, strategy names)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

from muster.client.types import TopicPartition

TP = tuple[str, int]


def _now_ms() -> int:
    return int(time.monotonic() * 1000)


def _mark_retrieved(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


def _strategy_names(value: Any) -> list[str]:
    aliases = {
        "org.apache.kafka.clients.consumer.rangeassignor": "range",
        "org.apache.kafka.clients.consumer.roundrobinassignor": "roundrobin",
        "org.apache.kafka.clients.consumer.stickyassignor": "sticky",
        "org.apache.kafka.clients.consumer.cooperativestickyassignor": "cooperative-sticky",
    }
    items = value.split(",") if isinstance(value, str) else list(value)
    return [aliases.get(i.strip().lower(), i.strip().lower()) for i in items if i.strip()]


def _tp(value: Any) -> TopicPartition:
    if isinstance(value, TopicPartition):
        return value
    if isinstance(value, tuple):
        return TopicPartition(str(value[0]), int(value[1]))
    return TopicPartition(str(value.topic), int(value.partition))


def _offsets_arg(offsets: Any) -> dict[TopicPartition, int]:
    """{tp: offset} from a mapping or from objects with .topic .partition .offset."""
    if isinstance(offsets, Mapping):
        return {_tp(k): int(v) for k, v in offsets.items()}
    return {_tp(o): int(o.offset) for o in offsets}
