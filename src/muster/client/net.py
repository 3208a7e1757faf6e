"""The client's network edge: one asyncio connection per broker and a small
cluster view (bootstrap, metadata, least-loaded node).

`Connection` frames requests, assigns correlation ids, pipelines (many
requests in flight, answers matched by correlation id), negotiates versions
with ApiVersions (highest version both sides speak, per API) and fails every
pending request with `KafkaConnectionError` when the socket dies: nothing is
left hanging and nothing is logged and dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from muster.client._runner import with_timeout
from muster.client.errors import (
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    ProtocolError,
    UnsupportedError,
    error_for,
)
from muster.client.frames import FrameProtocol
from muster.client.security import ClientSecurity, sasl_tokens
from muster.client.types import TopicPartition
from muster.protocol.client_codec import (
    decode_response,
    encode_request_view,
    peek_correlation_id,
)
from muster.protocol.codec import DecodeError, request_schema

API_VERSIONS = 18
SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36
METADATA = 3

# The highest version of each API whose request shape this client fills in.
# (Fetch v13+/Produce v13+ address topics by id; OffsetFetch v8+ batches groups.)
CLIENT_MAX: dict[int, int] = {
    0: 9,  # Produce
    1: 12,  # Fetch
    2: 7,  # ListOffsets
    3: 12,  # Metadata
    8: 8,  # OffsetCommit
    9: 7,  # OffsetFetch
    10: 4,  # FindCoordinator
    11: 9,  # JoinGroup
    12: 4,  # Heartbeat
    13: 5,  # LeaveGroup
    14: 5,  # SyncGroup
    15: 5,  # DescribeGroups
    16: 5,  # ListGroups (v5: group_type)
    17: 1,  # SaslHandshake
    18: 3,  # ApiVersions
    19: 7,  # CreateTopics
    20: 5,  # DeleteTopics
    22: 4,  # InitProducerId
    29: 3,  # DescribeAcls (admin_security)
    30: 3,  # CreateAcls
    31: 3,  # DeleteAcls
    32: 4,  # DescribeConfigs (admin_info, the console's topic configs)
    35: 4,  # DescribeLogDirs (the console's partition sizes)
    36: 2,  # SaslAuthenticate
    37: 3,  # CreatePartitions
    42: 2,  # DeleteGroups
    47: 0,  # OffsetDelete
    50: 0,  # DescribeUserScramCredentials (admin_security)
    51: 0,  # AlterUserScramCredentials
    68: 1,  # ConsumerGroupHeartbeat (group.protocol=consumer only)
    69: 1,  # ConsumerGroupDescribe (the console's consumer groups)
    65: 0,  # DescribeTransactions (muster transactions describe)
    66: 1,  # ListTransactions (muster transactions list)
}


@cache
def client_versions(api_key: int) -> tuple[int, int]:
    """(lowest, highest) version the client can encode for `api_key`."""
    top = CLIENT_MAX.get(api_key, -1)
    # the lowest and the highest with a schema (loading a schema costs: not all)
    low = next((v for v in range(top + 1) if _has_schema(api_key, v)), None)
    if low is None:
        return (0, -1)
    high = next(v for v in range(top, low - 1, -1) if _has_schema(api_key, v))
    return (low, high)


def _has_schema(api_key: int, version: int) -> bool:
    try:
        request_schema(api_key, version)
    except Exception:
        return False
    return True


@dataclass
class _Pending:
    api_key: int
    version: int
    future: asyncio.Future[Any]


class Connection:
    """One TCP connection to one broker."""

    def __init__(
        self,
        host: str,
        port: int,
        client_id: str = "muster",
        node_id: int = -1,
        security: ClientSecurity | None = None,
    ):
        self.security = security or ClientSecurity()
        self.host = host
        self.port = port
        self.client_id = client_id
        self.node_id = node_id
        self.versions: dict[int, tuple[int, int]] = {}
        self._transport: asyncio.Transport | None = None
        self._protocol: FrameProtocol | None = None
        self._pending: dict[int, _Pending] = {}
        self._ids = itertools.count(1)
        self._closed: KafkaError | None = None

    def __repr__(self) -> str:
        return f"Connection(node={self.node_id}, {self.host}:{self.port})"

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    @property
    def connected(self) -> bool:
        return self._transport is not None and self._closed is None

    async def connect(self, timeout_s: float = 10.0) -> Connection:
        loop = asyncio.get_running_loop()
        tls = self.security.ssl_context()
        try:
            transport, protocol = await with_timeout(
                loop.create_connection(
                    lambda: FrameProtocol(self._on_frame, self._on_lost),
                    self.host,
                    self.port,
                    ssl=tls,
                    server_hostname=self.host if tls else None,
                ),
                timeout_s,
            )
        except (TimeoutError, OSError) as exc:
            raise KafkaConnectionError(f"cannot connect to {self.host}:{self.port}: {exc}") from exc
        assert isinstance(transport, asyncio.Transport)
        self._transport, self._protocol = transport, protocol
        try:
            await with_timeout(self._negotiate(), timeout_s)
            if self.security.sasl:
                await with_timeout(self._authenticate(), timeout_s)
        except TimeoutError:
            await self.close()
            raise KafkaConnectionError(f"{self!r}: no ApiVersions answer in {timeout_s}s") from None
        except KafkaError:
            await self.close()
            raise
        return self

    async def _negotiate(self) -> None:
        body = {"client_software_name": "muster", "client_software_version": "0.1"}
        response = await self.send(API_VERSIONS, body, version=3)
        if response.error_code == 35:  # UNSUPPORTED_VERSION: answered as v0
            response = await self.send(API_VERSIONS, {}, version=0)
        if response.error_code != 0:
            raise error_for(response.error_code, "ApiVersions")
        self.versions = {
            int(k.api_key): (int(k.min_version), int(k.max_version)) for k in response.api_keys
        }

    async def _authenticate(self) -> None:
        """SaslHandshake, then SaslAuthenticate rounds until the mechanism is done."""
        mechanism = self.security.mechanism
        handshake = await self.send(SASL_HANDSHAKE, {"mechanism": mechanism})
        if handshake.error_code != 0:
            offered = ", ".join(handshake.mechanisms)
            raise error_for(handshake.error_code, f"{mechanism} not offered (broker: {offered})")
        steps = sasl_tokens(self.security)
        token = next(steps)
        while True:
            answer = await self.send(SASL_AUTHENTICATE, {"auth_bytes": token})
            if answer.error_code != 0:
                raise error_for(answer.error_code, answer.error_message or "SASL failed")
            try:
                token = steps.send(bytes(answer.auth_bytes))
            except StopIteration:
                return

    def version_for(self, api_key: int, within: tuple[int, int] | None = None) -> int:
        """The highest version of `api_key` both sides speak (`within`: the
        versions a particular request's body fits, instead of CLIENT_MAX's)."""
        lo, hi = client_versions(api_key) if within is None else within
        if api_key == API_VERSIONS and not self.versions:
            return hi
        broker = self.versions.get(api_key)
        if broker is None:
            raise UnsupportedError(f"broker {self.host}:{self.port} lacks api {api_key}")
        best = min(hi, broker[1])
        if best < max(lo, broker[0]):
            raise UnsupportedError(
                f"api {api_key}: broker speaks v{broker[0]}-{broker[1]}, client v{lo}-{hi}"
            )
        return best

    def supports(self, api_key: int) -> bool:
        try:
            self.version_for(api_key)
        except UnsupportedError:
            return False
        return True

    def send_nowait(
        self,
        api_key: int,
        body: Mapping[str, Any] | Any,
        version: int | None = None,
        expect_response: bool = True,
    ) -> asyncio.Future[Any]:
        """Write the request now; the future resolves with the decoded
        response (or None when no response is expected, e.g. acks=0)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        if self._closed is not None:
            future.set_exception(self._closed)
            return future
        if self._transport is None:
            future.set_exception(KafkaConnectionError(f"{self!r} is not connected"))
            return future
        if version is None:
            version = self.version_for(api_key)
        correlation_id = next(self._ids)
        frame = encode_request_view(api_key, version, correlation_id, self.client_id, body)
        if expect_response:
            self._pending[correlation_id] = _Pending(api_key, version, future)
        else:
            future.set_result(None)
        self._transport.write(frame)
        return future

    async def send(
        self,
        api_key: int,
        body: Mapping[str, Any] | Any,
        version: int | None = None,
        expect_response: bool = True,
    ) -> Any:
        return await self.send_nowait(api_key, body, version, expect_response)

    def _on_frame(self, frame: memoryview) -> None:
        try:
            correlation_id = peek_correlation_id(frame)
        except DecodeError as exc:
            self._fail(ProtocolError(f"{self!r}: {exc}"))
            return
        pending = self._pending.pop(correlation_id, None)
        if pending is None:
            self._fail(ProtocolError(f"{self!r}: unexpected correlation id {correlation_id}"))
            return
        try:
            _cid, response = decode_response(pending.api_key, pending.version, frame)
        except DecodeError as exc:
            if not pending.future.done():
                pending.future.set_exception(ProtocolError(str(exc)))
            return
        if not pending.future.done():
            pending.future.set_result(response)

    def _on_lost(self, exc: Exception | None) -> None:
        reason = "closed by the broker" if exc is None else f"lost: {exc!r}"
        self._fail(KafkaConnectionError(f"{self!r} {reason}"))

    def _fail(self, error: KafkaError) -> None:
        if self._closed is None:
            self._closed = error
        pending, self._pending = self._pending, {}
        for p in pending.values():
            if not p.future.done():
                p.future.set_exception(error)
        if self._transport is not None:
            self._transport.close()

    async def close(self) -> None:
        self._fail(KafkaConnectionError(f"{self!r} closed"))
        if self._protocol is not None:
            with contextlib.suppress(TimeoutError):
                await with_timeout(asyncio.shield(self._protocol.closed), 5)


def parse_bootstrap(servers: str | Iterable[str]) -> list[tuple[str, int]]:
    items = servers.split(",") if isinstance(servers, str) else list(servers)
    out = []
    for item in items:
        item = item.strip()
        if not item:
            continue
        if "://" in item:
            item = item.split("://", 1)[1]
        host, _, port = item.rpartition(":")
        out.append((host.strip("[]") or "localhost", int(port or 9092)))
    if not out:
        raise ValueError("bootstrap.servers is empty")
    return out


@dataclass
class TopicMeta:
    name: str
    error_code: int
    partitions: dict[int, int] = field(default_factory=dict)  # partition -> leader
    topic_id: Any = None  # a uuid.UUID from Metadata v10+


_LIST_OFFSETS = 2


class Cluster:
    """Brokers, topics and leaders as the last Metadata said, plus one
    connection per broker."""

    def __init__(
        self,
        bootstrap: str | Iterable[str],
        client_id: str = "muster",
        request_timeout_s: float = 30.0,
        security: ClientSecurity | None = None,
    ):
        self.security = security or ClientSecurity()
        self.bootstrap_servers = parse_bootstrap(bootstrap)
        self.client_id = client_id
        self.request_timeout_s = request_timeout_s
        self.brokers: dict[int, tuple[str, int]] = {}
        self.topics: dict[str, TopicMeta] = {}
        self.controller_id = -1
        self._conns: dict[int, Connection] = {}
        self._connecting: dict[int, asyncio.Future[Connection]] = {}
        self._bootstrap_conn: Connection | None = None
        self._coord_conns: dict[tuple[str, int], Connection] = {}
        self.metadata_version = 0  # bumped on every refresh

    async def _bootstrap(self) -> Connection:
        errors = []
        servers = list(self.bootstrap_servers)
        random.shuffle(servers)
        for host, port in servers:
            conn = Connection(host, port, self.client_id, security=self.security)
            try:
                return await conn.connect()
            except KafkaError as exc:
                errors.append(exc)
        raise KafkaConnectionError(f"no bootstrap server reachable: {errors}")

    async def connection(self, node_id: int) -> Connection:
        conn = self._conns.get(node_id)
        if conn is not None and conn.connected:
            return conn
        pending = self._connecting.get(node_id)
        if pending is not None:
            return await asyncio.shield(pending)
        if node_id not in self.brokers:
            await self.refresh_metadata()
            if node_id not in self.brokers:
                raise KafkaConnectionError(f"unknown broker {node_id}")
        host, port = self.brokers[node_id]
        future: asyncio.Future[Connection] = asyncio.get_running_loop().create_future()
        self._connecting[node_id] = future
        try:
            conn = await Connection(host, port, self.client_id, node_id, self.security).connect()
        except KafkaError as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: awaiting callers get it too
            raise
        finally:
            self._connecting.pop(node_id, None)
        self._conns[node_id] = conn
        future.set_result(conn)
        return conn

    def ready_connection(self, node_id: int) -> Connection | None:
        """The live connection to `node_id`, if there is one: lets a caller
        write a request at once instead of in a task that runs later."""
        conn = self._conns.get(node_id)
        return conn if conn is not None and conn.connected else None

    async def coordinator_connection(self, node_id: int, host: str, port: int) -> Connection:
        """A dedicated connection to a group coordinator, so group requests
        never queue behind fetches (as Java's coordinator connection)."""
        key = (host, port)
        conn = self._coord_conns.get(key)
        if conn is not None and conn.connected:
            return conn
        conn = await Connection(host, port, self.client_id, node_id, self.security).connect()
        old = self._coord_conns.get(key)
        self._coord_conns[key] = conn
        if old is not None:
            await old.close()
        return conn

    async def any_connection(self) -> Connection:
        """The least-loaded live connection (fewest requests in flight), or a
        new one to a known broker, or the bootstrap connection."""
        live = [c for c in self._conns.values() if c.connected]
        if live:
            return min(live, key=lambda c: c.in_flight)
        for node_id in sorted(self.brokers, key=lambda _n: random.random()):
            with contextlib.suppress(KafkaError):
                return await self.connection(node_id)
        if self._bootstrap_conn is None or not self._bootstrap_conn.connected:
            self._bootstrap_conn = await self._bootstrap()
        return self._bootstrap_conn

    async def send_any(self, api_key: int, body: Mapping[str, Any] | Any) -> Any:
        conn = await self.any_connection()
        try:
            return await with_timeout(conn.send(api_key, body), self.request_timeout_s)
        except TimeoutError:
            raise KafkaTimeoutError(f"api {api_key} to {conn!r}") from None

    async def refresh_metadata(
        self, topics: Iterable[str] | None = None, auto_create: bool = False
    ) -> dict[str, TopicMeta]:
        """Refresh brokers and the given topics (None: all topics); `auto_create`
        asks the broker to create named topics it lacks (a producer's request,
        where the broker allows it: auto.create.topics.enable)."""
        conn = await self.any_connection()
        version = conn.version_for(METADATA)
        names = None if topics is None else sorted(set(topics))
        if names is None:
            wanted: Any = None if version >= 1 else []
        else:
            wanted = [{"name": t} for t in names]
        body = {"topics": wanted, "allow_auto_topic_creation": auto_create}
        try:
            response = await with_timeout(
                conn.send(METADATA, body, version), self.request_timeout_s
            )
        except TimeoutError:
            raise KafkaTimeoutError(f"metadata from {conn!r}") from None
        self.brokers = {int(b.node_id): (b.host, int(b.port)) for b in response.brokers}
        self.controller_id = int(getattr(response, "controller_id", -1))
        fresh: dict[str, TopicMeta] = {}
        for t in response.topics:
            meta = TopicMeta(
                t.name,
                int(t.error_code),
                {int(p.partition_index): int(p.leader_id) for p in t.partitions},
                getattr(t, "topic_id", None),
            )
            fresh[t.name] = meta
        if names is None:
            self.topics = {n: m for n, m in fresh.items() if m.error_code == 0}
        else:
            for n in names:
                m = fresh.get(n)
                if m is not None and m.error_code == 0 and m.partitions:
                    self.topics[n] = m
                else:
                    self.topics.pop(n, None)
        for node_id, conn_ in list(self._conns.items()):
            if node_id not in self.brokers or not conn_.connected:
                self._conns.pop(node_id)
                await conn_.close()
        self.metadata_version += 1
        return fresh

    def partition_counts(self, topics: Iterable[str] | None = None) -> dict[str, int]:
        names = self.topics if topics is None else topics
        return {t: len(self.topics[t].partitions) for t in names if t in self.topics}

    def topic_ids(self) -> dict[Any, str]:
        """{topic id: name} of the known topics (the consumer protocol names
        topics by id)."""
        return {m.topic_id: n for n, m in self.topics.items() if m.topic_id is not None}

    def leader_for(self, topic: str, partition: int) -> int | None:
        meta = self.topics.get(topic)
        if meta is None:
            return None
        leader = meta.partitions.get(partition)
        return None if leader is None or leader < 0 else leader

    async def list_offsets(
        self, wanted: Mapping[TopicPartition, int], isolation_level: int = 0
    ) -> dict[TopicPartition, int]:
        """{tp: timestamp, or -2 earliest / -1 latest} -> {tp: offset}, each asked of its
        leader; a partition without a known leader is UNKNOWN_TOPIC_OR_PARTITION.
        With isolation_level 1 (read_committed), -1 latest is the last stable offset."""
        missing = {tp.topic for tp in wanted if self.leader_for(*tp) is None}
        if missing:
            await self.refresh_metadata(missing | set(self.topics))
        by_leader: dict[int, dict[TopicPartition, int]] = {}
        for tp, ts in wanted.items():
            leader = self.leader_for(*tp)
            if leader is None:
                raise error_for(3, f"ListOffsets {tp.topic}-{tp.partition}: no leader known")
            by_leader.setdefault(leader, {})[tp] = ts
        out: dict[TopicPartition, int] = {}
        for leader, tps in by_leader.items():
            topics: dict[str, list[dict[str, Any]]] = {}
            for tp, ts in tps.items():
                topics.setdefault(tp.topic, []).append(
                    {"partition_index": tp.partition, "timestamp": ts, "current_leader_epoch": -1}
                )
            conn = await self.connection(leader)
            response = await conn.send(
                _LIST_OFFSETS,
                {
                    "replica_id": -1,
                    "isolation_level": isolation_level,
                    "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
                },
            )
            for t in response.topics:
                for p in t.partitions:
                    if int(p.error_code) != 0:
                        raise error_for(
                            int(p.error_code), f"ListOffsets {t.name}-{p.partition_index}"
                        )
                    out[TopicPartition(t.name, int(p.partition_index))] = int(p.offset)
        return out

    async def close(self) -> None:
        conns = list(self._conns.values()) + list(self._coord_conns.values())
        self._coord_conns.clear()
        if self._bootstrap_conn is not None:
            conns.append(self._bootstrap_conn)
        self._conns.clear()
        self._bootstrap_conn = None
        for conn in conns:
            await conn.close()
