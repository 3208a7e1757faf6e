"""A demo group member in its own process, so that the demo can SIGKILL it.

Usage: python -m muster.demo.member_process BOOTSTRAP GROUP TOPIC NAME
Prints `assigned <partitions>` on every assignment and `consumed <n>` now and then.
"""

from __future__ import annotations

import sys
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from muster.demo.settings import MEMBER_SESSION_TIMEOUT_MS


def main() -> None:
    bootstrap, group, topic, name = sys.argv[1:5]
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "client.id": name,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": True,
            "auto.commit.interval.ms": 500,
            "session.timeout.ms": MEMBER_SESSION_TIMEOUT_MS,
        }
    )

    def on_assign(_c: Any, parts: list[TopicPartition]) -> None:
        print("assigned " + ",".join(str(p.partition) for p in parts), flush=True)

    consumer.subscribe([topic], on_assign=on_assign)
    consumed = 0
    while True:  # until killed: the demo shows what a crash costs the group
        msg = consumer.poll(0.2)
        if msg is not None and not msg.error():
            consumed += 1
            if consumed % 500 == 0:
                print(f"consumed {consumed}", flush=True)


if __name__ == "__main__":
    main()
