"""A group member speaking the raw protocol that joins, syncs, and then never
sends another request: the next rebalance waits its rebalance timeout for it
and drops it (its session timeout is much longer, so it is not expired first)."""

from __future__ import annotations

import socket
import struct
from typing import Any

from muster.coordinator.groups.subscription import encode_subscription
from muster.protocol.client_codec import decode_response, encode_request

JOIN_GROUP, SYNC_GROUP = 11, 14
JOIN_VERSION, SYNC_VERSION = 3, 2  # before KIP-394: no member-id round trip


class SilentMember:
    def __init__(
        self, bootstrap: str, group: str, topic: str, rebalance_timeout_ms: int = 2000
    ) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=60)
        self.group = group
        self.topic = topic
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.member_id = ""
        self._correlation = 0

    def _call(self, api: int, version: int, body: dict[str, Any]) -> Any:
        self._correlation += 1
        self.sock.sendall(encode_request(api, version, self._correlation, "silent", body))
        size = struct.unpack(">i", self._read(4))[0]
        _, response = decode_response(api, version, self._read(size))
        return response

    def _read(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("broker closed the connection")
            data += chunk
        return data

    def join_and_sync(self) -> str:
        """Joins (blocks until the group's join phase completes) and syncs;
        returns the member id."""
        joined = self._call(
            JOIN_GROUP,
            JOIN_VERSION,
            {
                "group_id": self.group,
                "session_timeout": 30_000,
                "rebalance_timeout": self.rebalance_timeout_ms,
                "member_id": "",
                "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": encode_subscription([self.topic])}],
            },
        )
        assert joined.error_code == 0, joined
        self.member_id = str(joined.member_id)
        synced = self._call(
            SYNC_GROUP,
            SYNC_VERSION,
            {
                "group_id": self.group,
                "generation_id": joined.generation_id,
                "member_id": self.member_id,
                "assignments": [],
            },
        )
        assert synced.error_code == 0, synced
        return self.member_id

    def close(self) -> None:
        self.sock.close()
