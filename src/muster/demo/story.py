"""The group's recorded rebalances, read back from __muster_group_events."""

from __future__ import annotations

import json
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from muster.coordinator.events import EVENTS_TOPIC
from muster.demo.settings import GROUP


def rebalance_story(bootstrap: str) -> list[str]:
    """One line per completed rebalance of the demo group, with its causes."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "muster-demo-reader",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(EVENTS_TOPIC, 0, 0)])
    lines: list[str] = []
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
                    causes = ", ".join(event["causes"]) or "?"
                    lines.append(
                        f"generation {event['generation']}: {event['member_count']} members, "
                        f"caused by {causes}, took {event['duration_ms']} ms "
                        f"(join waited for {event['waited_for']})"
                    )
    finally:
        consumer.close()
    return lines
