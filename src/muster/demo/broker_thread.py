"""A broker with its own event loop in a background thread of the demo process."""

from __future__ import annotations

import asyncio
import threading

from muster.config import BrokerConfig
from muster.server.broker import Broker


class BrokerThread:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.loop = asyncio.new_event_loop()
        self.broker = Broker(config)
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, name="muster-broker", daemon=True)

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self.broker.start())
        except BaseException as exc:
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        self.loop.run_forever()

    def start(self) -> BrokerThread:
        self._thread.start()
        self._ready.wait(60)
        if self._error is not None:
            raise self._error
        return self

    def stop(self) -> None:
        fut = asyncio.run_coroutine_threadsafe(self.broker.stop(), self.loop)
        fut.result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(30)

    @property
    def bootstrap(self) -> str:
        host, port = self.config.listen
        return f"{host}:{self.broker.port or port}"
