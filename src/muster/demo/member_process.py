"""A demo group member in its own process, so that the demo can SIGKILL it.

Usage: python -m muster.demo.member_process BOOTSTRAP GROUP TOPIC NAME
Prints `assigned <partitions>` on every assignment and `consumed <n>` now and then.
"""

from __future__ import annotations

import sys
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from muster.demo.settings import member_config


def main() -> None:
    bootstrap, group, topic, name = sys.argv[1:5]
    consumer = Consumer(member_config(bootstrap, group, name))

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
