"""The blocking facade's engine: one asyncio loop on one daemon thread per
client. Blocking methods submit coroutines to it and wait for their result;
exceptions travel back to the caller (nothing is swallowed on the loop)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from muster.client.errors import KafkaError, KafkaTimeoutError

T = TypeVar("T")


class LoopThread:
    def __init__(self, name: str = "muster-client") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    @property
    def in_loop_thread(self) -> bool:
        return threading.current_thread() is self._thread

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout_s: float | None = None) -> T:
        if self.loop.is_closed():
            coro.close()
            raise KafkaError("the client is closed")
        if self.in_loop_thread:
            coro.close()
            raise RuntimeError("blocking client call from inside a client callback")
        future = self.submit(coro)
        try:
            return future.result(timeout_s)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise KafkaTimeoutError(f"timed out after {timeout_s}s") from None

    def call(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` on the loop, its result or exception here: one loop
        iteration, where `run` needs three (task, step, result) and each may
        wait behind other callbacks."""
        if self.loop.is_closed():
            raise KafkaError("the client is closed")
        if self.in_loop_thread:
            raise RuntimeError("blocking client call from inside a client callback")
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def step() -> None:
            try:
                future.set_result(fn(*args))
            except Exception as exc:  # handed to the caller, raised there
                future.set_exception(exc)

        self.loop.call_soon_threadsafe(step)
        return future.result()

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        self.loop.call_soon_threadsafe(fn, *args)

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self.loop.close()


async def wait_event(event: asyncio.Event, timeout_s: float | None) -> bool:
    """Wait for `event` up to `timeout_s`; True if it was set. (asyncio.timeout,
    not wait_for: Python 3.11's wait_for can swallow a cancellation.)"""
    if event.is_set():
        return True
    try:
        async with asyncio.timeout(timeout_s):
            await event.wait()
    except TimeoutError:
        return False
    return True


async def with_timeout(awaitable: Any, timeout_s: float | None) -> Any:
    async with asyncio.timeout(timeout_s):
        return await awaitable
