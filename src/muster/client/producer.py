"""The producer's blocking facade, `Producer`, in confluent-kafka's shape, over
its asyncio core (`aio_producer.AIOProducer`, re-exported here with
`RecordMetadata`) running on a loop thread."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from muster.client._runner import LoopThread
from muster.client.aio_producer import AIOProducer
from muster.client.errors import (
    KafkaError,
)
from muster.client.futures import DeliveryFuture
from muster.client.producer_batch import (  # noqa: F401  (RecordMetadata re-exported)
    RecordMetadata,
    _acks,
    _Batch,
    _Pending,
    _to_bytes,
    encode_batch,
)

DeliveryCallback = Callable[[KafkaError | None, RecordMetadata | None], None]


_wall = time.time
_mono = time.monotonic


class Producer:
    """Blocking producer in confluent-kafka's shape:
    `produce(topic, value, key=None, partition=None, headers=None,
    timestamp=None, on_delivery=None)`, `poll(timeout)` (runs delivery
    callbacks), `flush(timeout)` (returns how many records remain),
    `close()`. `produce` also returns a `DeliveryFuture` (done/result/exception/
    add_done_callback, like concurrent.futures.Future)."""

    def __init__(self, conf: Mapping[str, Any]):
        self._runner = LoopThread("muster-producer")
        self._aio = AIOProducer(conf)
        self._callbacks: deque[tuple[DeliveryCallback, DeliveryFuture[RecordMetadata]]]
        self._callbacks = deque()
        self._done: deque[tuple[DeliveryCallback, DeliveryFuture[RecordMetadata]]]
        self._done = deque()
        self._wake_pending = False
        try:
            self._runner.run(self._aio.start(), 60)
        except BaseException:
            self._runner.stop()
            raise

    def produce(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        headers: Iterable[tuple[str, Any]] | Mapping[str, Any] | None = None,
        timestamp: int | None = None,
        on_delivery: DeliveryCallback | None = None,
        callback: DeliveryCallback | None = None,
    ) -> DeliveryFuture[RecordMetadata]:
        if partition is not None and partition < 0:
            partition = None  # confluent's RD_KAFKA_PARTITION_UA
        aio = self._aio
        if (
            headers is None
            and timestamp is None
            and topic
            and aio._fatal is None
            and not aio._closed
            and (value is None or type(value) is bytes)
            and (key is None or type(key) is bytes)
        ):  # the common case, inline: what `_enqueue` does with nothing to convert
            future = _Pending(topic, partition, key, value, (), int(_wall() * 1000), _mono())
            aio._inbox.append(future)
            first = not aio._wake_scheduled
            if first:
                aio._wake_scheduled = True
        else:
            future, first = aio._enqueue(topic, value, key, partition, headers, timestamp)
        cb = on_delivery or callback
        if cb is not None:
            future.add_done_callback(lambda f, cb=cb: self._done.append((cb, f)))
        if first:
            self._runner.call_soon(self._aio.wake)  # later records ride on this wakeup
        return future

    def poll(self, timeout: float = 0) -> int:
        """Run delivery callbacks of finished records; returns how many ran."""
        deadline = time.monotonic() + (timeout or 0)
        ran = 0
        while True:
            while self._done:
                cb, future = self._done.popleft()
                exc = future.exception()
                if isinstance(exc, KafkaError) or exc is None:
                    cb(exc, None if exc is not None else future.result())
                else:
                    cb(KafkaError(repr(exc)), None)
                ran += 1
            if ran or time.monotonic() >= deadline:
                return ran
            time.sleep(0.005)

    def flush(self, timeout: float | None = None) -> int:
        remaining = self._runner.run(self._aio.flush(timeout))
        self.poll(0)
        return remaining

    def __len__(self) -> int:
        return self._aio._unfinished

    def close(self, timeout: float = 30.0) -> None:
        try:
            self._runner.run(self._aio.close(timeout))
        finally:
            self.poll(0)
            self._runner.stop()

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
