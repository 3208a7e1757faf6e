"""The group's recorded rebalances, read back from __muster_group_events."""

from __future__ import annotations

import json
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from muster.coordinator.topics import EVENTS_TOPIC
from muster.demo.settings import GROUP, client_config


def rebalance_story(bootstrap: str) -> list[tuple[str, str, str, str, str]]:
    """One row per completed rebalance of the demo group: generation, members,
    causes, duration, what the join waited for."""
    consumer = Consumer(
        client_config(bootstrap, **{"group.id": "muster-demo-reader", "enable.auto.commit": False})
    )
    consumer.assign([TopicPartition(EVENTS_TOPIC, 0, 0)])
    lines: list[tuple[str, str, str, str, str]] = []
    try:
        _low, high = consumer.get_watermark_offsets(TopicPartition(EVENTS_TOPIC, 0), timeout=10)
        seen = 0
        while seen < high:
            batch = consumer.consume(500, 1.0)
            if not batch:
                break
            for msg in batch:
                seen = msg.offset() + 1
                if msg.error() or msg.key() != GROUP.encode():
                    continue
                event: dict[str, Any] = json.loads(msg.value())
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
