"""The consumer's blocking facade, `Consumer`, over its asyncio core
(`aio_consumer.AIOConsumer`, re-exported here) running on a loop thread."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from muster.client._runner import LoopThread
from muster.client.aio_consumer import (  # noqa: F401  (AIOConsumer: re-exported)
    DEFAULTS,
    AIOConsumer,
    _PollResult,
)
from muster.client.consumer_args import (
    _tp,
)
from muster.client.core.membership import Event
from muster.client.errors import (
    KafkaError,
)
from muster.client.types import ConsumerRecord, TopicPartition


class Consumer:
    """Blocking consumer over `AIOConsumer` on its own I/O thread. Listener
    callbacks run on the caller's thread inside `poll`, so they may call
    `commit`, `seek`, `position` and friends."""

    def __init__(self, conf: Mapping[str, Any]):
        self._runner = LoopThread("muster-consumer")
        try:
            self._aio: AIOConsumer = self._runner.run(self._make(conf), 60)
            self._aio.facade = self
        except BaseException:
            self._runner.stop()
            raise

    @staticmethod
    async def _make(conf: Mapping[str, Any]) -> AIOConsumer:
        return await AIOConsumer(conf).start()

    def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        async def run() -> Any:
            return fn(*args, **kwargs)

        return self._runner.run(run())

    # assignment
    def subscribe(self, topics: Any, listener: Any = None, **callbacks: Any) -> None:
        self._call(self._aio.subscribe, topics, listener, **callbacks)

    def unsubscribe(self) -> None:
        events = self._call(self._aio._unsubscribe_prepare)
        try:
            self._run_callbacks(events)
        finally:
            self._call(self._aio._unsubscribe_finish)

    def assign(self, partitions: Iterable[Any]) -> None:
        self._call(self._aio.assign, list(partitions))

    def unassign(self) -> None:
        self._call(self._aio.assign, [])

    def assignment(self) -> set[TopicPartition]:
        return self._call(self._aio.assignment)

    # positions
    def position(self, partition: Any) -> int | None:
        return self._call(self._aio.position, partition)

    def seek(self, partition: Any, offset: int | None = None) -> None:
        self._call(self._aio.seek, partition, offset)

    def seek_to_beginning(self, partitions: Iterable[Any] | None = None) -> None:
        self._call(self._aio.seek_to_beginning, partitions)

    def seek_to_end(self, partitions: Iterable[Any] | None = None) -> None:
        self._call(self._aio.seek_to_end, partitions)

    def pause(self, partitions: Iterable[Any]) -> None:
        self._call(self._aio.pause, list(partitions))

    def resume(self, partitions: Iterable[Any]) -> None:
        self._call(self._aio.resume, list(partitions))

    def paused(self) -> set[TopicPartition]:
        return self._call(self._aio.paused)

    def lag(self, partition: Any) -> int | None:
        return self._call(self._aio.lag, partition)

    def member_state(self) -> str:
        m = self._aio.membership
        return "UNJOINED" if m is None else m.state.value

    # offsets
    def commit(
        self,
        offsets: Any = None,
        asynchronous: bool = False,
        callback: Callable[[KafkaError | None, Any], None] | None = None,
        timeout: float | None = 30.0,
    ) -> dict[TopicPartition, int] | None:
        """Synchronous by default (Java's commitSync); with asynchronous=True
        returns at once and `callback(error, offsets)` runs on the I/O thread."""
        if asynchronous:
            self._call(self._aio.commit_nowait, offsets, callback)
            return None
        return self._runner.run(self._aio.commit(offsets), timeout)

    def committed(
        self, partitions: Iterable[Any], timeout: float | None = 30.0
    ) -> dict[TopicPartition, int | None]:
        return self._runner.run(self._aio.committed(list(partitions)), timeout)

    def list_offsets(
        self, request: Mapping[Any, int], timeout: float | None = 30.0
    ) -> dict[TopicPartition, int]:
        return self._runner.run(
            self._aio.list_offsets({_tp(k): v for k, v in request.items()}), timeout
        )

    # poll
    def poll(self, timeout: float = 1.0) -> list[ConsumerRecord]:
        deadline = time.monotonic() + timeout
        while True:
            result = self._runner.call(self._aio._poll_now)
            if result is None:
                remaining = max(0.0, deadline - time.monotonic())
                result = self._runner.run(self._aio._poll(remaining, defer=True))
            if not result.events:
                if result.records or time.monotonic() >= deadline:
                    return result.records
                continue
            try:
                self._run_callbacks(result.events)
            finally:
                self._call(self._aio._release_held)

    def _run_callbacks(self, events: list[Event]) -> None:
        for event in events:
            self._call(self._aio._apply_before, event)
            fn, args = self._aio._callback_for(event)
            if fn is not None:
                fn(*args)
            self._call(self._aio._apply_after, event)

    def consume(self, num_messages: int = 1, timeout: float = 1.0) -> list[ConsumerRecord]:
        return self.poll(timeout)[:num_messages] if num_messages > 0 else []

    def close(self, autocommit: bool = True) -> None:
        """Commit (with auto-commit), run the revoke callback here, leave the
        group (dynamic members) and close the connections."""
        if self._runner.loop.is_closed():
            return
        try:
            try:
                events = self._runner.run(self._aio._close_prepare(autocommit), 60)
                self._run_callbacks(events)
            finally:
                self._runner.run(self._aio._close_finish(), 60)
        finally:
            self._runner.stop()

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
