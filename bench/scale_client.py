"""A raw, pipelined asyncio Kafka connection for bench/scale.py: thousands of group
members or idle clients from one process, which no client library does cheaply.

Frames are built and read by muster's own client codec (kio schemas), so every
request is what Kafka's schema says; nothing here is muster-specific and the same
driver runs against the peers.
"""

from __future__ import annotations

import asyncio
import struct
import time
from typing import Any

from muster.protocol.client_codec import decode_response, encode_request, peek_correlation_id

JOIN_GROUP, SYNC_GROUP, HEARTBEAT, FETCH, METADATA, API_VERSIONS = 11, 14, 12, 1, 3, 18
MEMBER_ID_REQUIRED = 79
REBALANCE_IN_PROGRESS = 27
UNKNOWN_MEMBER_ID = 25
ILLEGAL_GENERATION = 22
_SIZE = struct.Struct(">i")


class RawConn:
    """One connection; ``call`` may be awaited by many tasks at once (pipelined).
    Answers come back in request order, as Kafka sends them."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self._next = 0
        self._waiting: dict[int, tuple[int, int, asyncio.Future[Any]]] = {}
        self._task = asyncio.create_task(self._read_loop())

    @classmethod
    async def open(cls, host: str, port: int) -> RawConn:
        reader, writer = await asyncio.open_connection(host, port, limit=1 << 24)
        return cls(reader, writer)

    async def call(self, api_key: int, version: int, body: dict[str, Any]) -> Any:
        self._next += 1
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[self._next] = (api_key, version, fut)
        self.writer.write(encode_request(api_key, version, self._next, "scale", body))
        return await fut

    async def timed(self, api_key: int, version: int, body: dict[str, Any]) -> tuple[float, Any]:
        t0 = time.perf_counter()
        answer = await self.call(api_key, version, body)
        return time.perf_counter() - t0, answer

    async def _read_loop(self) -> None:
        try:
            while True:
                (size,) = _SIZE.unpack(await self.reader.readexactly(4))
                frame = await self.reader.readexactly(size)
                api_key, version, fut = self._waiting.pop(peek_correlation_id(frame))
                if not fut.done():
                    fut.set_result(decode_response(api_key, version, frame)[1])
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            for _, _, fut in self._waiting.values():
                if not fut.done():
                    fut.set_exception(ConnectionError(f"closed: {exc}"))

    async def close(self) -> None:
        self._task.cancel()
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except (ConnectionError, OSError):
            pass


def subscription(topics: list[str]) -> bytes:
    """ConsumerProtocolSubscription v0: what a Java or librdkafka consumer sends."""
    out = struct.pack(">hi", 0, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    return out + struct.pack(">i", -1)


def assignment(topic: str, partitions: list[int]) -> bytes:
    """ConsumerProtocolAssignment v0."""
    out = struct.pack(">hi", 0, 1) + struct.pack(">h", len(topic)) + topic.encode()
    out += struct.pack(">i", len(partitions)) + b"".join(struct.pack(">i", p) for p in partitions)
    return out + struct.pack(">i", -1)


class Member:
    """A classic consumer-group member driven by raw JoinGroup/SyncGroup/Heartbeat."""

    def __init__(
        self,
        conn: RawConn,
        group: str,
        topic: str,
        session_ms: int = 60_000,
        rebalance_ms: int = 10_000,
    ) -> None:
        self.conn = conn
        self.group = group
        self.topic = topic
        self.session_ms = session_ms
        self.rebalance_ms = rebalance_ms
        self.member_id = ""
        self.generation = -1
        self.assigned: bytes | None = None

    async def join(self, partitions: int) -> Any:
        """JoinGroup (again with the id the broker gives, KIP-394), then SyncGroup; the
        leader assigns `partitions` round-robin. Returns the SyncGroup answer."""
        while True:
            answer = await self.conn.call(
                JOIN_GROUP,
                5,
                {
                    "group_id": self.group,
                    "session_timeout": self.session_ms,
                    "rebalance_timeout": self.rebalance_ms,
                    "member_id": self.member_id,
                    "group_instance_id": None,
                    "protocol_type": "consumer",
                    "protocols": [{"name": "range", "metadata": subscription([self.topic])}],
                },
            )
            code = int(answer.error_code)
            if code == MEMBER_ID_REQUIRED:
                self.member_id = answer.member_id
                continue
            if code != 0:
                raise RuntimeError(f"JoinGroup {self.group}: error {code}")
            self.member_id = answer.member_id
            self.generation = int(answer.generation_id)
            plan = []
            if answer.leader == self.member_id:
                ids = sorted(m.member_id for m in answer.members)
                plan = [
                    {
                        "member_id": mid,
                        "assignment": assignment(self.topic, list(range(i, partitions, len(ids)))),
                    }
                    for i, mid in enumerate(ids)
                ]
            sync = await self.conn.call(
                SYNC_GROUP,
                3,
                {
                    "group_id": self.group,
                    "generation_id": self.generation,
                    "member_id": self.member_id,
                    "group_instance_id": None,
                    "assignments": plan,
                },
            )
            code = int(sync.error_code)
            if code == REBALANCE_IN_PROGRESS:
                continue  # another member joined meanwhile: join the next generation
            if code != 0:
                raise RuntimeError(f"SyncGroup {self.group}: error {code}")
            self.assigned = sync.assignment
            return sync

    async def heartbeat(self, conn: RawConn | None = None) -> tuple[float, int]:
        """(seconds, error code) of one Heartbeat, on `conn` or the member's own."""
        secs, answer = await (conn or self.conn).timed(
            HEARTBEAT,
            3,
            {
                "group_id": self.group,
                "generation_id": self.generation,
                "member_id": self.member_id,
                "group_instance_id": None,
            },
        )
        return secs, int(answer.error_code)
