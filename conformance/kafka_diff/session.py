"""One scenario's view of one broker: raw requests (kio's schemas through muster's
client codec, the same as tests/support/security.py's RawClient) over numbered
connections, every answer decoded into a plain dict and kept in order in a
transcript that the runner holds against the other broker's."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import socket
import struct
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from muster.protocol.client_codec import decode_response, encode_request

CLOSED = "<closed>"
_VERSIONS: dict[int, dict[int, tuple[int, int]]] = {}


def plain(value: Any) -> Any:
    """A kio entity (or a piece of one) as JSON-like data: dataclasses as dicts,
    tuples as lists, error codes and other enums as ints, durations as ms."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, enum.Enum):
        return plain(value.value)
    if isinstance(value, datetime.timedelta):
        return int(value / datetime.timedelta(milliseconds=1))
    if isinstance(value, datetime.datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, frozenset | set):
        return sorted(plain(v) for v in value)
    return value


class Connection:
    def __init__(self, port: int, client_id: str | None) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=20)
        self.correlation = 0
        self.client_id = client_id

    def _recv(self, n: int) -> bytes | None:
        data = b""
        while len(data) < n:
            try:
                chunk = self.sock.recv(n - len(data))
            except (ConnectionResetError, TimeoutError, OSError):
                return None
            if not chunk:
                return None
            data += chunk
        return data

    def send_bytes(self, payload: bytes) -> bool:
        try:
            self.sock.sendall(payload)
        except OSError:
            return False
        return True

    def read_frame(self) -> bytes | None:
        head = self._recv(4)
        if head is None:
            return None
        (size,) = struct.unpack(">i", head)
        return self._recv(size)

    def call(self, api_key: int, version: int, body: dict[str, Any]) -> Any:
        self.correlation += 1
        frame = encode_request(api_key, version, self.correlation, self.client_id, body)
        if not self.send_bytes(frame):
            return CLOSED
        answer = self.read_frame()
        if answer is None:
            return CLOSED
        _corr, response = decode_response(api_key, version, answer)
        return plain(response)

    def close(self) -> None:
        self.sock.close()


class Pending:
    """A request answered later (a JoinGroup held by a rebalance, say)."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.result: Any = None
        self.thread = threading.Thread(target=self._run, args=(fn,), daemon=True)
        self.thread.start()

    def _run(self, fn: Callable[[], Any]) -> None:
        self.result = fn()

    def wait(self, timeout: float = 60.0) -> Any:
        self.thread.join(timeout)
        return "<no answer>" if self.thread.is_alive() else self.result


class Session:
    """What a scenario talks through. `call` answers go to the transcript
    (recorded under a label); `name()` gives names unique to this run but the
    same on both brokers (the runner normalises the run token away)."""

    def __init__(self, port: int, scenario: str, token: str, broker: str) -> None:
        self.port = port
        self.scenario = scenario
        self.token = token
        self.broker = broker  # "kafka" or "muster": for waits only, never for what is sent
        self.connections: dict[int, Connection] = {}
        self.transcript: list[tuple[str, Any]] = []

    def name(self, what: str = "") -> str:
        base = f"kd{self.token}-{self.scenario}"
        return f"{base}-{what}" if what else base

    def conn(self, n: int = 0, client_id: str | None = "kdiff") -> Connection:
        if n not in self.connections:
            self.connections[n] = Connection(self.port, client_id)
        return self.connections[n]

    def versions(self) -> dict[int, tuple[int, int]]:
        if self.port not in _VERSIONS:
            c = Connection(self.port, "kdiff")
            try:
                a = c.call(18, 3, {"client_software_name": "kdiff", "client_software_version": "1"})
            finally:
                c.close()
            _VERSIONS[self.port] = {
                k["api_key"]: (k["min_version"], k["max_version"]) for k in a["api_keys"]
            }
        return _VERSIONS[self.port]

    def supports(self, api_key: int, version: int, label: str = "version") -> bool:
        """Whether the broker lists this version; when not, records "<unsupported>"
        (the scenario stops there: the other broker's answers are the difference)."""
        lo, hi = self.versions().get(api_key, (0, -1))
        if lo <= version <= hi:
            return True
        self.record(label, "<unsupported>")
        return False

    def call(
        self,
        api_key: int,
        version: int,
        body: dict[str, Any],
        label: str | None = None,
        conn: int = 0,
        record: bool = True,
    ) -> Any:
        answer = self.conn(conn).call(api_key, version, body)
        if answer == CLOSED:  # the next call on this number opens a new connection
            self.connections.pop(conn).close()
        if record:
            self.record(label or f"{api_key}v{version}", answer)
        return answer

    def later(self, api_key: int, version: int, body: dict[str, Any], conn: int) -> Pending:
        c = self.conn(conn)
        return Pending(lambda: c.call(api_key, version, body))

    def raw(self, payload: bytes, label: str, conn: int = 0, timeout: float = 5.0) -> Any:
        """Bytes as they are; records the answer's correlation id (and the int16
        after it: the error code of most v0 bodies) or CLOSED, or "<silent>" when
        the broker neither answers nor closes within `timeout`."""
        c = self.conn(conn)
        c.sock.settimeout(timeout)
        answer: Any
        if not c.send_bytes(payload):
            answer = CLOSED
        else:
            try:
                head = c.sock.recv(4, socket.MSG_PEEK)
            except TimeoutError:
                head = None
                answer = "<silent>"
            except OSError:
                head = b""
            if head is not None:
                frame = c.read_frame() if head else None
                if frame is None:
                    answer = CLOSED
                else:
                    answer = {"correlation_id": struct.unpack_from(">i", frame)[0]}
                    if len(frame) >= 6:
                        answer["next_int16"] = struct.unpack_from(">h", frame, 4)[0]
        self.record(label, answer)
        if answer in (CLOSED, "<silent>"):
            self.connections.pop(conn).close()
        return answer

    def record(self, label: str, value: Any) -> None:
        self.transcript.append((label, value))

    def wait(self, predicate: Callable[[], Any], timeout: float = 15.0) -> Any:
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            last = predicate()
            if last:
                return last
            time.sleep(0.1)
        return last

    def close(self) -> None:
        for c in self.connections.values():
            c.close()
        self.connections.clear()
