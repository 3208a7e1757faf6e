"""A broker with its own event loop on a background thread of the caller's process."""

from __future__ import annotations

import asyncio
import threading

from muster.config import BrokerConfig
from muster.server.broker import Broker, loop_factory


class BrokerThread:
    """Runs `muster.server.broker.Broker` on a daemon thread until `stop()`.

    `start()` returns once the broker listens and its coordinators have loaded,
    or raises what stopped it
    (a `StartupError` for a taken port or a locked data directory).
    """

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.loop = (loop_factory(config) or asyncio.new_event_loop)()
        self.broker = Broker(config)
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, name="muster-broker", daemon=True)

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self.broker.start())
            self.loop.run_until_complete(self.broker.loaded())
        except BaseException as exc:
            self._error = exc
            self._ready.set()
            self.loop.close()
            return
        self._ready.set()
        self.loop.run_forever()
        self.loop.close()

    def start(self, timeout: float = 60) -> BrokerThread:
        self._thread.start()
        if not self._ready.wait(timeout):
            raise TimeoutError(f"the broker did not start within {timeout} s")
        if self._error is not None:
            self._thread.join(timeout)
            raise self._error
        return self

    def stop(self, timeout: float = 30) -> None:
        if self.loop.is_closed():
            return
        fut = asyncio.run_coroutine_threadsafe(self.broker.stop(), self.loop)
        fut.result(timeout)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout)

    @property
    def port(self) -> int:
        return self.broker.port or self.config.listen[1]

    @property
    def bootstrap(self) -> str:
        host, _ = self.config.listen
        if host in ("", "0.0.0.0"):
            host = "127.0.0.1"
        return f"{host}:{self.port}"
