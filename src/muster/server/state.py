"""What every handler shares: config, the logs, durability, data notifications."""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from muster.config import BrokerConfig
from muster.log.manager import LogManager
from muster.protocol.codec import SameAnswer
from muster.server.durability import Durability
from muster.server.fetch_sessions import FetchSessionCache

if TYPE_CHECKING:  # the services' own modules import this one
    from muster.server.api_table import ApiEntry
    from muster.server.group_runtime.runtime import GroupCoordinator
    from muster.server.metrics import BrokerMetrics
    from muster.server.security import BrokerSecurity
    from muster.server.share_state import ShareState
    from muster.server.transactions import TransactionCoordinator


@dataclass(slots=True)
class RequestContext:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    client_host: str
    state: BrokerState
    listener: str = ""  # the listener the request came in on (advertised back)
    principal: str = "User:ANONYMOUS"
    session: Any = None  # muster.security.session.Session of the connection
    # set by a handler whose answer has thousands of entries (handlers/common.py
    # Slices): the connection encodes it off the event loop
    large_answer: bool = False

    @property
    def api_name(self) -> str:
        entry = self.state.services.api_table.get(self.api_key)
        return entry.name if entry is not None else str(self.api_key)


class DataNotifier:
    """Wakes long-polling fetches when a partition gets new visible data."""

    def __init__(self) -> None:
        self._waiting: dict[tuple[str, int], set[asyncio.Event]] = {}

    def subscribe(self, keys: list[tuple[str, int]], event: asyncio.Event) -> None:
        for key in keys:
            self._waiting.setdefault(key, set()).add(event)

    def unsubscribe(self, keys: list[tuple[str, int]], event: asyncio.Event) -> None:
        for key in keys:
            events = self._waiting.get(key)
            if events is not None:
                events.discard(event)
                if not events:
                    del self._waiting[key]

    def notify(self, topic: str, partition: int) -> None:
        for event in self._waiting.get((topic, partition), ()):
            event.set()


class ProducerIdAllocator:
    """Producer ids unique across restarts: blocks are reserved durably up front."""

    BLOCK = 1000

    def __init__(self, path: Path | None) -> None:
        self._path = path
        self._next = 0
        self._limit = 0
        if path is not None and path.exists():
            self._next = self._limit = int(json.loads(path.read_text())["next_block_start"])

    def allocate(self) -> int:
        if self._next >= self._limit:
            self._limit = self._next + self.BLOCK
            if self._path is not None:
                tmp = self._path.with_suffix(".tmp")
                with open(tmp, "w") as fh:
                    json.dump({"next_block_start": self._limit}, fh)
                    fh.flush()
                    os.fsync(fh.fileno())
                os.replace(tmp, self._path)
        pid = self._next
        self._next += 1
        return pid


@dataclass
class Services:
    """What the broker wires in beside the logs, for handlers to find: each
    is set once the broker has made it (None before, or when not configured)."""

    api_table: dict[int, ApiEntry] = field(default_factory=dict)
    security: BrokerSecurity | None = None
    metrics: BrokerMetrics | None = None
    coordinator: GroupCoordinator | None = None  # set once it is made (it loads later)
    transactions: TransactionCoordinator | None = None  # set once it has started
    share: ShareState | None = None  # share partitions and sessions, with muster.share.enable
    api_versions: SameAnswer | None = None  # ApiVersions' answer, made at its first request
    bound_port: int | None = None  # the first listener's port, once listening
    bound_ports: dict[str, int] = field(default_factory=dict)  # listener name -> port


@dataclass
class BrokerState:
    config: BrokerConfig
    logs: LogManager
    durability: Durability
    notifier: DataNotifier
    producer_ids: ProducerIdAllocator
    fetch_sessions: FetchSessionCache = field(default_factory=lambda: FetchSessionCache(1000))
    services: Services = field(default_factory=Services)

    @property
    def node_id(self) -> int:
        return int(self.config["node.id"])
