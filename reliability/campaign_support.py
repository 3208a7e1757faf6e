"""What the campaigns share: a broker process, a small file system, figures."""

from __future__ import annotations

import contextlib
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.brokers import MusterProcess
from tests.wire.group_helpers import wait_until

__all__ = ["MusterProcess", "create_topic", "read_all", "small_fs", "timed", "wait_until"]


@contextlib.contextmanager
def small_fs(size_bytes: int) -> Iterator[Path]:
    """A tmpfs of `size_bytes` mounted on a fresh directory (needs root):
    the one way to make a real ENOSPC without filling the machine's disk."""
    mnt = Path(tempfile.mkdtemp(prefix="muster-fs-"))
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_bytes}", "tmpfs", str(mnt)], check=True
    )
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)
        mnt.rmdir()


def resize_fs(mnt: Path, size_bytes: int) -> None:
    subprocess.run(["mount", "-o", f"remount,size={size_bytes}", str(mnt)], check=True)


def timed(call: Callable[[], Any]) -> tuple[float, Any]:
    """(seconds, result or the exception raised)."""
    started = time.monotonic()
    try:
        result = call()
    except Exception as exc:  # the campaign reports what the client saw
        result = exc
    return time.monotonic() - started, result


def create_topic(bootstrap: str, name: str, partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(timeout=30)


def read_all(
    bootstrap: str, topic: str, partitions: int, ends: dict[int, int]
) -> dict[tuple[int, int], bytes]:
    """(partition, offset) -> value of every record below `ends`, read with
    confluent-kafka from the beginning (read_committed)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "reliability-reader",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    out: dict[tuple[int, int], bytes] = {}
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        deadline = time.monotonic() + 120
        todo = {p for p in range(partitions) if ends.get(p, 0) > 0}
        while todo and time.monotonic() < deadline:
            for msg in consumer.consume(1000, 1.0):
                if msg.error():
                    continue
                out[(msg.partition(), msg.offset())] = msg.value()
                if msg.offset() >= ends[msg.partition()] - 1:
                    todo.discard(msg.partition())
    finally:
        consumer.close()
    return out


def rss_mib(pid: int) -> float:
    """Resident set size of a process, from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise OSError(f"no VmRSS for {pid}")
