"""The group's recorded rebalances, read back from __muster_group_events."""

from __future__ import annotations

import json
from typing import Any

from muster.client import Consumer, TopicPartition
from muster.coordinator.topics import EVENTS_TOPIC
from muster.demo.settings import GROUP, client_config


def rebalance_story(bootstrap: str) -> list[tuple[str, str, str, str, str]]:
    """One row per completed rebalance of the demo group: generation, members,
    causes, duration, what the join waited for."""
    consumer = Consumer(
        client_config(bootstrap, **{"group.id": "muster-demo-reader", "enable.auto.commit": False})
    )
    events = TopicPartition(EVENTS_TOPIC, 0)
    consumer.assign([events])
    consumer.seek(events, 0)
    lines: list[tuple[str, str, str, str, str]] = []
    try:
        high = consumer.list_offsets({events: -1}, timeout=10)[events]
        seen = 0
        while seen < high:
            batch = consumer.poll(1.0)
            if not batch:
                break
            for msg in batch:
                seen = msg.offset + 1
                if msg.key != GROUP.encode() or msg.value is None:
                    continue
                event: dict[str, Any] = json.loads(msg.value)
                if event["type"] == "RebalanceCompleted":
                    lines.append(
                        (
                            str(event["generation"]),
                            str(event["member_count"]),
                            "\n".join(event["causes"]) or "?",
                            f"{event['duration_ms']:,} ms",
                            str(event["waited_for"]).replace("_", " "),
                        )
                    )
    finally:
        consumer.close()
    return lines
