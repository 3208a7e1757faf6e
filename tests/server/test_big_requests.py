"""A request naming 100,000 partitions takes the broker seconds of work; other
connections must be answered meanwhile (Kafka serves them on its other I/O
threads), not after it (reliability/limits.py measured 1.2-5 s stalls)."""

from __future__ import annotations

import select
import socket
import struct
import time
from pathlib import Path
from typing import Any

from muster.protocol.client_codec import decode_response, encode_request
from tests.support.brokers import MusterProcess

N = 100_000


def _send(sock: socket.socket, api_key: int, version: int, body: dict[str, Any]) -> None:
    sock.sendall(encode_request(api_key, version, 1, "test", body))


def _receive(sock: socket.socket, api_key: int, version: int) -> Any:
    def exactly(n: int) -> bytes:
        data = bytearray()
        while len(data) < n:
            chunk = sock.recv(min(n - len(data), 1 << 20))
            assert chunk, "closed by the broker"
            data += chunk
        return bytes(data)

    (size,) = struct.unpack(">i", exactly(4))
    return decode_response(api_key, version, exactly(size))[1]


def _list_offsets(n: int) -> dict[str, Any]:
    partitions = [
        {"partition_index": i, "current_leader_epoch": -1, "timestamp": -1} for i in range(n)
    ]
    return {
        "replica_id": -1,
        "isolation_level": 0,
        "topics": [{"name": "t", "partitions": partitions}],
    }


def _metadata(n: int) -> dict[str, Any]:
    return {
        "topics": [{"name": f"absent-{i}", "topic_id": None} for i in range(n)],
        "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False,
    }


def _slowest_probe_s(port: int, api_key: int, version: int, body: dict[str, Any]) -> float:
    """Sends the big request, then, until its answer comes, ApiVersions probes
    one after another on another connection: the slowest probe's round trip
    (a broker that works through the big one on its loop answers a probe only
    after it, seconds later)."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as big:
        with socket.create_connection(("127.0.0.1", port), timeout=60) as probe:
            _send(big, api_key, version, body)
            slowest = 0.0
            while True:
                sent = time.monotonic()
                _send(probe, 18, 3, {"client_software_name": "p", "client_software_version": "1"})
                assert _receive(probe, 18, 3).error_code == 0
                slowest = max(slowest, time.monotonic() - sent)
                readable, _, _ = select.select([big], [], [], 0.02)
                if readable:
                    break
            answer = _receive(big, api_key, version)
            assert len(answer.topics[0].partitions if api_key == 2 else answer.topics) in (N, 4)
            return slowest


def test_other_connections_are_answered_while_a_100k_partition_request_is_worked_on(
    tmp_path: Path,
) -> None:
    broker = MusterProcess(tmp_path / "data").start()
    try:
        with socket.create_connection(("127.0.0.1", broker.port), timeout=30) as admin:
            topic = {
                "name": "t",
                "num_partitions": 4,
                "replication_factor": 1,
                "assignments": [],
                "configs": [],
            }
            _send(admin, 19, 7, {"topics": [topic], "timeout_ms": 30000, "validate_only": False})
            assert _receive(admin, 19, 7).topics[0].error_code == 0
        # before big requests were sliced, others waited 1.2-5 s (limits.py)
        assert _slowest_probe_s(broker.port, 2, 7, _list_offsets(N)) < 0.5
        assert _slowest_probe_s(broker.port, 3, 12, _metadata(N)) < 0.5
    finally:
        broker.close()


def test_a_large_undecodable_frame_is_closed_with_a_log_line(tmp_path: Path) -> None:
    """Frames past 128 KiB are decoded in a worker thread: a bad one must still
    end in a clean close and a log line, not a traceback or a hang."""
    broker = MusterProcess(tmp_path / "data").start()
    try:
        frame = bytearray(encode_request(3, 12, 7, "test", _metadata(20_000)))
        assert len(frame) > 128 * 1024
        frame[-40:] = b"\xff" * 40  # the last topics run past the frame's end
        with socket.create_connection(("127.0.0.1", broker.port), timeout=30) as sock:
            sock.sendall(frame)
            assert sock.recv(1024) == b""  # closed, no answer
        deadline = time.monotonic() + 10
        while "undecodable Metadata v12" not in broker.log_text():
            assert time.monotonic() < deadline, broker.log_text()[-2000:]
            time.sleep(0.1)
        assert "Traceback" not in broker.log_text()
        with socket.create_connection(("127.0.0.1", broker.port), timeout=30) as sock:
            _send(sock, 18, 3, {"client_software_name": "p", "client_software_version": "1"})
            assert _receive(sock, 18, 3).error_code == 0  # the broker serves on
    finally:
        broker.close()
