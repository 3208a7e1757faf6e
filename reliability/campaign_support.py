"""What the campaigns share: a broker process, a small file system, figures."""

from __future__ import annotations

import contextlib
import socket
import struct
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from muster.protocol.client_codec import decode_response, encode_request
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
    """(partition, offset) -> value of every record below `ends` (or the high
    watermark, if lower), read with confluent-kafka from the log start
    (read_committed)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "reliability-reader",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",  # offset 0 below a DeleteRecords floor
        }
    )
    out: dict[tuple[int, int], bytes] = {}
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        deadline = time.monotonic() + 120
        ends = dict(ends)
        for p in range(partitions):  # what the log holds, when less than expected
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
            ends[p] = min(ends.get(p, 0), high) if high > low else 0
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


class RawClient:
    """One connection speaking Kafka frames built by muster's own codec: for
    requests no client library would send (a 1 MiB topic name, 100,000
    partitions, 10 MB of member metadata)."""

    def __init__(self, port: int, timeout: float = 30.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self._correlation = 0

    def call(self, api_key: int, version: int, body: dict[str, Any]) -> Any:
        """The decoded answer; ConnectionError if the broker closed instead."""
        self.send(api_key, version, body)
        return self.receive(api_key, version)

    def send(self, api_key: int, version: int, body: dict[str, Any]) -> None:
        self._correlation += 1
        self.sock.sendall(encode_request(api_key, version, self._correlation, "raw", body))

    def receive(self, api_key: int, version: int) -> Any:
        """The answer to the last request sent (one in flight at a time)."""
        (size,) = struct.unpack(">i", self._exactly(4))
        correlation, answer = decode_response(api_key, version, self._exactly(size))
        assert correlation == self._correlation
        return answer

    def _exactly(self, n: int) -> bytes:
        data = bytearray()
        while len(data) < n:
            chunk = self.sock.recv(min(n - len(data), 1 << 20))
            if not chunk:
                raise ConnectionError("closed by the broker")
            data += chunk
        return bytes(data)

    def close(self) -> None:
        self.sock.close()


def add_keep_option(parser: Any) -> None:
    parser.add_argument("--keep", type=Path, help="directory for the broker's data and log")


def campaign_workdir(keep: Path | None, prefix: str) -> Path:
    """`--keep DIR` (created if needed), else a fresh temporary directory."""
    workdir = keep or Path(tempfile.mkdtemp(prefix=prefix))
    workdir.mkdir(parents=True, exist_ok=True)
    return workdir
