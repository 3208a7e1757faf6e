"""A demo group member in its own process, so that the demo can SIGKILL it.

Usage: python -m muster.demo.member_process BOOTSTRAP GROUP TOPIC NAME
Prints `assigned <partitions>` on every assignment and `consumed <n>` (at most 5 times a
second) while the count grows.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from muster.client import Consumer, TopicPartition
from muster.demo.settings import member_config


def main() -> None:
    bootstrap, group, topic, name = sys.argv[1:5]
    consumer = Consumer(member_config(bootstrap, group, name))

    def on_assign(_c: Any, parts: list[TopicPartition]) -> None:
        print("assigned " + ",".join(str(p.partition) for p in parts), flush=True)

    consumer.subscribe([topic], on_assign=on_assign)
    consumed = reported = 0
    next_report = time.monotonic()
    while True:  # until killed: the demo shows what a crash costs the group
        consumed += len(consumer.poll(0.1))
        # the demo's tables show this count live: report it often, not per record
        if consumed != reported and time.monotonic() >= next_report:
            print(f"consumed {consumed}", flush=True)
            reported, next_report = consumed, time.monotonic() + 0.2


if __name__ == "__main__":
    main()
