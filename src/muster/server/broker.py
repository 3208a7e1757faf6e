"""The broker process: the only place that wires storage, handlers and sockets."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import os
import signal
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING

from muster.config import BrokerConfig
from muster.log.manager import LogManager
from muster.security.principal import NoMatchingRule
from muster.security.session import Session
from muster.server.admission import Admission
from muster.server.api_table import ApiEntry, build_table
from muster.server.clock import now_ms
from muster.server.connection import Connection
from muster.server.durability import Durability
from muster.server.fetch_sessions import FetchSessionCache
from muster.server.group_runtime.runtime import GroupCoordinator
from muster.server.group_runtime.service import start_coordinator
from muster.server.listen import start_listener, tls_handshake
from muster.server.plain_stream import PlainStream
from muster.server.security import BrokerSecurity, ServedListener
from muster.server.startup import (
    DataDirLock,
    Phases,
    StartupError,
    bind_listener,
    listen_failed,
)
from muster.server.state import BrokerState, DataNotifier, ProducerIdAllocator
from muster.server.tls_stream import TlsStream

if TYPE_CHECKING:
    from muster.server.metrics import BrokerMetrics
    from muster.server.transactions import TransactionCoordinator

log = logging.getLogger("muster.broker")

DRAIN_S = 3.0  # how long a graceful stop waits for requests already read


class Broker:
    def __init__(self, config: BrokerConfig, extra_apis: tuple[ApiEntry, ...] = ()) -> None:
        self.config = config
        self.table = build_table(extra_apis, share=bool(config.get("muster.share.enable")))
        self.state: BrokerState | None = None
        self._servers: list[asyncio.base_events.Server] = []
        self.ports: dict[str, int] = {}  # listener name -> bound port
        self._connections: set[asyncio.Task[None]] = set()
        self._live: dict[asyncio.Task[None], Connection] = {}
        self.admission = Admission(self.config)
        self._background: list[asyncio.Task[None]] = []
        self.port: int | None = None
        self.coordinator: GroupCoordinator | None = None
        self.transactions: TransactionCoordinator | None = None
        self.metrics: BrokerMetrics | None = None
        self.metrics_port: int | None = None
        self._lock: DataDirLock | None = None
        self.security: BrokerSecurity | None = None
        self._phases = Phases()

    async def start(self) -> None:
        """Binds, then opens storage; a StartupError leaves nothing bound or locked."""
        phases = self._phases = Phases()
        # Settings first (listeners, TLS files, SASL, the authorizer): a bad one
        # fails before anything is bound or written.
        security = BrokerSecurity(
            self.config, None if self.config.in_memory else self.config.data_dir
        )
        phases.mark("settings")
        # Bind before touching the disk: a broker that cannot listen must not
        # leave a data directory (or 50 partition folders) behind.
        socks: list = []
        try:
            for served in security.served:
                socks.append(bind_listener(served.listener.host or "0.0.0.0", served.listener.port))
            try:
                self.metrics, self.metrics_port = _serve_metrics(self.config)
            except OSError as exc:
                raise StartupError(
                    f"cannot serve metrics on {self.config['muster.metrics.listen']}: "
                    f"{os.strerror(exc.errno) if exc.errno else exc}.\n"
                    "Choose a free port (--set muster.metrics.listen=HOST:PORT)."
                ) from None
            phases.mark("bind")
            self.security = security
            await self._open_storage()
            for served, sock in zip(security.served, socks, strict=True):
                li = served.listener
                try:
                    server = await start_listener(partial(self._accept, served), sock, served.ssl)
                except OSError as exc:
                    # SO_REUSEADDR lets two sockets bind one port while neither
                    # listens: a broker started at the same moment on the same port
                    # can win the listen() while this one loaded its logs.
                    raise StartupError(listen_failed(li.host, li.port, exc)) from None
                self._servers.append(server)
                self.ports[li.name] = server.sockets[0].getsockname()[1]
            phases.mark("listen")
        except BaseException:
            for sock in socks:
                sock.close()
            for server in self._servers:
                server.close()
            await self._release()
            raise
        assert self.state is not None
        first = security.listeners[0]
        self.port = self.ports[first.name]
        self.state.services.bound_port = self.port
        self.state.services.bound_ports = self.ports
        # The transaction coordinator comes once the broker listens: its
        # handlers answer COORDINATOR_LOAD_IN_PROGRESS until it has loaded
        # anyway, and its modules (the transaction-log schemas) cost a start
        # tens of ms that a broker serving no transaction never needs.
        self._background.append(
            asyncio.create_task(self._start_transactions(), name="txn-coordinator-start")
        )
        logs = self.state.logs
        self._every(int(self.config["log.retention.check.interval.ms"]), logs.run_retention)
        self._every(int(self.config["log.cleaner.backoff.ms"]), logs.run_cleaner)
        for line in self.config.ignored_report():
            log.warning("%s", line)
        for served in security.served:
            li = served.listener
            log.info(
                "listener %s (%s) on %s:%d", li.name, li.protocol, li.host, self.ports[li.name]
            )
        where = "memory (muster.storage=memory)" if self.config.in_memory else self.config.data_dir
        log.info("muster listening on %s:%d, data in %s", first.host, self.port, where)
        log.info("%s", phases.summary())

    async def _open_storage(self) -> None:
        if self.config.in_memory:
            logs = LogManager.in_memory(self.config)
            producer_ids = ProducerIdAllocator(None)
        else:
            data_dir = self.config.data_dir
            self._lock = DataDirLock(data_dir).acquire()
            logs = LogManager(data_dir, self.config)
            producer_ids = ProducerIdAllocator(data_dir / "producer-ids.json")
        await asyncio.to_thread(logs.load)
        self._phases.mark(f"logs ({len(logs.topics())} topics)")
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
            producer_ids=producer_ids,
            fetch_sessions=FetchSessionCache(
                int(self.config["max.incremental.fetch.session.cache.slots"])
            ),
        )
        services = self.state.services
        services.api_table = self.table
        services.security = self.security
        services.metrics = self.metrics
        if 78 in self.table:  # muster.share.enable
            from muster.server.share_state import ShareState

            services.share = ShareState(self.state)
        durability.start()
        self.coordinator = await start_coordinator(self.state)
        services.coordinator = self.coordinator
        self._phases.mark("coordinator")
        if self.metrics is not None:
            self.metrics.coordinator = self.coordinator

    async def loaded(self) -> None:
        """Returns once both coordinators have loaded their logs and serve.

        The broker listens before that (group and transaction requests answer
        COORDINATOR_LOAD_IN_PROGRESS meanwhile, as Kafka's do); an embedded
        broker waits for this so a test's first raw request is served.
        """
        while self.coordinator is None or self.coordinator.loader is None:
            await asyncio.sleep(0.005)
        await asyncio.shield(self.coordinator.loader)
        while self.transactions is None or not self.transactions.loaded:
            await asyncio.sleep(0.005)

    async def _start_transactions(self) -> None:
        assert self.state is not None and self.coordinator is not None
        module = await asyncio.to_thread(importlib.import_module, "muster.server.transactions")
        self.transactions = await module.start_transaction_coordinator(self.state, self.coordinator)
        self.state.services.transactions = self.transactions

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
        reader: PlainStream | TlsStream,
        writer: PlainStream | TlsStream,
    ) -> None:
        assert self.state is not None
        peer = writer.get_extra_info("peername")
        host = peer[0] if isinstance(peer, tuple) else "unknown"
        refused = self.admission.admit(host)
        if refused is not None:
            # one line per refusal, never rate-limited (muster.repeat_filter)
            log.info("refused connection from %s: %s", host, refused, extra={"every_time": True})
            writer.close()
            return
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            if isinstance(writer, TlsStream) and not await tls_handshake(
                writer, served.listener.name, _address(peer)
            ):
                return
            principal = "User:ANONYMOUS"
            if served.listener.protocol == "SSL":
                from muster.security.tls import peer_principal  # SSL listeners only

                try:
                    principal = peer_principal(writer.get_extra_info("ssl_object"), served.mapper)
                except NoMatchingRule as exc:
                    log.warning("closing TLS connection on %s: %s", served.listener.name, exc)
                    writer.close()
                    return
            session = Session(served.security, principal)
            connection = Connection(self.state, self.table, reader, writer, session)
            self._live[task] = connection
            await connection.serve()
        except asyncio.CancelledError:
            pass  # broker shutting down
        except Exception:
            log.exception("connection handler crashed")
        finally:
            self._connections.discard(task)
            self._live.pop(task, None)
            self.admission.release(host)

    async def stop(self) -> None:
        for server in self._servers:
            server.close()
        # Answer what was read (writes finish their fsync, commits their
        # append) before the coordinators and the logs close: a clean stop
        # leaves no client retrying a write that was in fact stored.
        for connection in list(self._live.values()):
            connection.drain(DRAIN_S)
        if self._connections:
            await asyncio.wait(list(self._connections), timeout=DRAIN_S + 1)
        for task in (*self._background, *self._connections):
            task.cancel()
        for task in (*self._background, *self._connections):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self._release()
        log.info("muster stopped")

    async def _release(self) -> None:
        if self.transactions is not None:
            await self.transactions.stop()
        if self.coordinator is not None:
            await self.coordinator.stop()
        if self.state is not None:
            await self.state.durability.stop()
            await asyncio.to_thread(self.state.logs.close)
        if self.metrics is not None:
            self.metrics.close()
        if self._lock is not None:
            self._lock.release()
            self._lock = None


def _serve_metrics(config: BrokerConfig) -> tuple[BrokerMetrics | None, int | None]:
    """The /metrics endpoint and its port when `muster.metrics.listen` is set.
    Without it nothing could read the counters, so prometheus_client (and the
    http.server, wsgiref and email modules it brings, ~35 ms) is not imported."""
    listen = config["muster.metrics.listen"]
    if not listen:
        return None, None
    from muster.server.metrics import BrokerMetrics

    metrics = BrokerMetrics()
    try:
        return metrics, metrics.serve(listen)
    except BaseException:
        metrics.close()
        raise


def _address(peer: object) -> str:
    return f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)


def setup_logging(level: str = "INFO") -> None:
    logging.basicConfig(
        level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )


async def serve_until_signalled(
    config: BrokerConfig, ready: Callable[[Broker], Awaitable[None] | None] | None = None
) -> None:
    broker = Broker(config)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    # Handlers first: a SIGTERM while the logs load stops the broker cleanly
    # once it has started, rather than killing it halfway through.
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await broker.start()
    if ready is not None:
        result = ready(broker)
        if asyncio.iscoroutine(result):
            await result
    await stop.wait()
    await broker.stop()


def loop_factory(config: BrokerConfig) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The event loop `muster.event.loop` names (None: asyncio's own)."""
    name = config["muster.event.loop"]
    spin_us = int(config["muster.poll.spin.us"])
    if spin_us < 0:
        raise StartupError(f"muster.poll.spin.us must be 0 (off) or more, not {spin_us}.")
    if name == "asyncio":
        if spin_us == 0:
            return None
        from muster.server.spin_selector import SpinningSelector

        return lambda: asyncio.SelectorEventLoop(SpinningSelector(spin_us / 1e6))
    if spin_us and name == "uvloop":
        raise StartupError(
            "muster.poll.spin.us works with the standard loop only (libuv polls for itself).\n"
            "Unset it, or leave muster.event.loop unset."
        )
    if name != "uvloop":
        raise StartupError(
            f"muster.event.loop must be asyncio or uvloop, not {name!r}.\n"
            "Leave it unset for the standard loop."
        )
    try:
        import uvloop
    except ImportError:
        raise StartupError(
            "muster.event.loop=uvloop, but uvloop is not installed.\n"
            "Install it with: pip install 'muster[uvloop]' (or leave the setting unset)."
        ) from None
    return uvloop.new_event_loop


def run(config: BrokerConfig) -> None:
    """Runs the broker in the foreground until SIGTERM or SIGINT."""
    setup_logging(config["muster.log.level"])
    with asyncio.Runner(loop_factory=loop_factory(config)) as runner:
        runner.run(serve_until_signalled(config))
