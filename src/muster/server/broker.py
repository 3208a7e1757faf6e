"""The broker process: the only place that wires storage, handlers and sockets."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Awaitable, Callable
from functools import partial

from muster.config import BrokerConfig
from muster.log.manager import LogManager
from muster.security.principal import NoMatchingRule
from muster.security.session import Session
from muster.security.tls import peer_principal
from muster.server.api_table import ApiEntry, build_table
from muster.server.clock import now_ms
from muster.server.connection import Connection
from muster.server.coordinator.runtime import GroupCoordinator
from muster.server.coordinator.service import start_coordinator
from muster.server.durability import Durability
from muster.server.metrics import BrokerMetrics
from muster.server.security import BrokerSecurity, ServedListener
from muster.server.state import BrokerState, DataNotifier, ProducerIdAllocator
from muster.server.transactions import TransactionCoordinator, start_transaction_coordinator

log = logging.getLogger("muster.broker")


class Broker:
    def __init__(self, config: BrokerConfig, extra_apis: tuple[ApiEntry, ...] = ()) -> None:
        self.config = config
        self.table = build_table(extra_apis)
        self.state: BrokerState | None = None
        self._servers: list[asyncio.base_events.Server] = []
        self.ports: dict[str, int] = {}  # listener name -> bound port
        self._connections: set[asyncio.Task[None]] = set()
        self._background: list[asyncio.Task[None]] = []
        self.port: int | None = None
        self.coordinator: GroupCoordinator | None = None
        self.transactions: TransactionCoordinator | None = None

    async def start(self) -> None:
        data_dir = self.config.data_dir
        data_dir.mkdir(parents=True, exist_ok=True)
        security = BrokerSecurity(self.config, data_dir)  # bad settings fail before any I/O
        logs = LogManager(data_dir, self.config)
        await asyncio.to_thread(logs.load)
        notifier = DataNotifier()
        durability = Durability(
            self.config["muster.fsync"],
            int(self.config["muster.fsync.interval.ms"]),
            lambda plog: notifier.notify(plog.topic, plog.partition),
        )
        self.state = BrokerState(
            config=self.config,
            logs=logs,
            durability=durability,
            notifier=notifier,
            producer_ids=ProducerIdAllocator(data_dir / "producer-ids.json"),
        )
        self.state.extras["api_table"] = self.table
        self.state.extras["security"] = security
        self.metrics = BrokerMetrics()
        self.state.extras["metrics"] = self.metrics
        durability.start()
        self.coordinator = await start_coordinator(self.state)
        self.state.extras["coordinator"] = self.coordinator
        self.transactions = await start_transaction_coordinator(self.state, self.coordinator)
        self.state.extras["transactions"] = self.transactions
        self.metrics.coordinator = self.coordinator
        self.metrics_port = self.metrics.serve(self.config["muster.metrics.listen"])
        for served in security.served:
            li = served.listener
            server = await asyncio.start_server(
                partial(self._accept, served),
                li.host or None,
                li.port,
                limit=1 << 20,
                ssl=served.ssl,
            )
            self._servers.append(server)
            self.ports[li.name] = server.sockets[0].getsockname()[1]
            bound = self.ports[li.name]
            log.info("listener %s (%s) on %s:%d", li.name, li.protocol, li.host, bound)
        self.port = self.ports[security.listeners[0].name]
        self.state.extras["bound_port"] = self.port
        self.state.extras["bound_ports"] = self.ports
        host = security.listeners[0].host
        self._every(int(self.config["log.retention.check.interval.ms"]), logs.run_retention)
        self._every(int(self.config["log.cleaner.backoff.ms"]), logs.run_cleaner)
        log.info("muster listening on %s:%d, data in %s", host, self.port, data_dir)

    def _every(self, period_ms: int, job: Callable[[int], object]) -> None:
        async def loop() -> None:
            while True:
                await asyncio.sleep(period_ms / 1000)
                try:
                    await asyncio.to_thread(job, now_ms())
                except Exception:
                    log.exception("background job %s failed", getattr(job, "__name__", job))

        self._background.append(asyncio.create_task(loop()))

    async def _accept(
        self,
        served: ServedListener,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        assert self.state is not None
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            principal = "User:ANONYMOUS"
            if served.listener.protocol == "SSL":
                try:
                    principal = peer_principal(writer.get_extra_info("ssl_object"), served.mapper)
                except NoMatchingRule as exc:
                    log.warning("closing TLS connection on %s: %s", served.listener.name, exc)
                    writer.close()
                    return
            session = Session(served.security, principal)
            await Connection(self.state, self.table, reader, writer, session).serve()
        except asyncio.CancelledError:
            pass  # broker shutting down
        except Exception:
            log.exception("connection handler crashed")
        finally:
            self._connections.discard(task)

    async def stop(self) -> None:
        for server in self._servers:
            server.close()
        for task in (*self._background, *self._connections):
            task.cancel()
        for task in (*self._background, *self._connections):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self.transactions is not None:
            await self.transactions.stop()
        if self.coordinator is not None:
            await self.coordinator.stop()
        if self.state is not None:
            await self.state.durability.stop()
            await asyncio.to_thread(self.state.logs.close)
        log.info("muster stopped")


def setup_logging(level: str = "INFO") -> None:
    logging.basicConfig(
        level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )


async def serve_until_signalled(
    config: BrokerConfig, ready: Callable[[Broker], Awaitable[None] | None] | None = None
) -> None:
    broker = Broker(config)
    await broker.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if ready is not None:
        result = ready(broker)
        if asyncio.iscoroutine(result):
            await result
    await stop.wait()
    await broker.stop()


def run(config: BrokerConfig) -> None:
    """Runs the broker in the foreground until SIGTERM or SIGINT."""
    setup_logging(config["muster.log.level"])
    asyncio.run(serve_until_signalled(config))
