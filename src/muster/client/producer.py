"""The producer: an asyncio core (`AIOProducer`) and a blocking facade
(`Producer`) in confluent-kafka's shape.

Records are partitioned (explicit partition, else murmur2 of the key as Java
and librdkafka's murmur2_random do, else a sticky random partition per
batch), accumulated per partition and sent when a batch reaches `batch.size`
or has waited `linger.ms`. One Produce request per partition is in flight
at a time, so retries keep order; requests to different partitions and
brokers are pipelined. With `enable.idempotence` the producer gets an id
from InitProducerId and numbers each partition's batches; a retried batch
keeps its sequence so the broker de-duplicates it.

Every record resolves its future (and delivery callback) exactly once, with
`RecordMetadata` or a `KafkaError`; a failure of the sender itself fails
every pending record and is raised by the next `produce`/`flush`.
"""

from __future__ import annotations

import asyncio
import datetime
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from muster.client._runner import LoopThread, wait_event, with_timeout
from muster.client.config import Config
from muster.client.errors import (
    ConfigError,
    KafkaError,
    KafkaTimeoutError,
    ProducerFencedError,
    SequenceError,
    TopicError,
    error_for,
)
from muster.client.futures import DeliveryFuture
from muster.client.net import Cluster
from muster.client.partitioner import partition_for_key
from muster.records import compression
from muster.records.batch import Record, build_batch

PRODUCE = 0
INIT_PRODUCER_ID = 22

DEFAULTS: dict[str, Any] = {
    "client.id": "muster-producer",
    "acks": -1,
    "linger.ms": 5,
    "batch.size": 1_000_000,
    "compression.type": "none",
    "enable.idempotence": False,
    "request.timeout.ms": 30_000,
    "delivery.timeout.ms": 120_000,
    "retry.backoff.ms": 100,
    "metadata.max.age.ms": 300_000,
}


@dataclass(frozen=True)
class RecordMetadata:
    topic: str
    partition: int
    offset: int
    timestamp: int

    # confluent-kafka's Message accessors, so callbacks port over.
    def error(self) -> None:
        return None


DeliveryCallback = Callable[[KafkaError | None, RecordMetadata | None], None]


def _to_bytes(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    raise TypeError(f"expected bytes or str, got {type(value).__name__}")


def _acks(value: Any) -> int:
    if value in ("all", "-1", -1):
        return -1
    try:
        acks = int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"acks must be all, -1, 0 or 1, not {value!r}") from None
    if acks not in (-1, 0, 1):
        raise ConfigError(f"acks must be all, -1, 0 or 1, not {value!r}")
    return acks


@dataclass
class _Pending:
    topic: str
    partition: int | None
    record: Record
    future: DeliveryFuture[RecordMetadata]
    created: float


@dataclass
class _Batch:
    topic: str
    partition: int
    entries: list[_Pending] = field(default_factory=list)
    size: int = 0
    created: float = 0.0
    sequence: int = -1  # assigned when first sent (idempotent producers)
    attempts: int = 0
    retry_at: float = 0.0
    encoded: bytes | None = None


class AIOProducer:
    """The asyncio producer. Create and use it on one event loop."""

    def __init__(self, conf: Mapping[str, Any]):
        self.config = Config(conf, DEFAULTS)
        c = self.config
        self.acks = _acks(c.get("acks"))
        self.linger_s = c.int("linger.ms") / 1000
        self.batch_size = c.int("batch.size")
        codec = str(c.get("compression.type") or "none").lower()
        if codec not in compression.BY_NAME:
            raise ConfigError(
                f"compression.type {codec!r} not one of {sorted(compression.BY_NAME)}"
            )
        self.codec = compression.BY_NAME[codec]
        self.idempotent = c.bool("enable.idempotence")
        if self.idempotent and self.acks != -1:
            raise ConfigError("enable.idempotence requires acks=all")
        self.request_timeout_ms = c.int("request.timeout.ms")
        self.delivery_timeout_s = c.int("delivery.timeout.ms") / 1000
        self.retry_backoff_s = c.int("retry.backoff.ms") / 1000
        self.cluster = Cluster(
            c.str("bootstrap.servers"), c.str("client.id"), c.int("request.timeout.ms") / 1000
        )
        self.producer_id = -1
        self.producer_epoch = -1
        self._sequences: dict[tuple[str, int], int] = {}
        self._inbox: deque[_Pending] = deque()
        self._waiting_metadata: list[_Pending] = []
        self._batches: dict[tuple[str, int], deque[_Batch]] = {}
        self._in_flight: set[tuple[str, int]] = set()
        self._sticky: dict[str, int] = {}
        self._wakeup = asyncio.Event()
        self._flushing = 0
        self._unfinished = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._fatal: KafkaError | None = None
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self._lock = threading.Lock()
        self._tasks: set[asyncio.Task[Any]] = set()

    # ------------------------------------------------------------ public

    async def start(self) -> AIOProducer:
        await self.cluster.refresh_metadata([])
        if self.idempotent:
            await self._init_producer_id()
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    def enqueue(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        headers: Iterable[tuple[str, Any]] | Mapping[str, Any] | None = None,
        timestamp: int | None = None,
    ) -> DeliveryFuture[RecordMetadata]:
        """Queue one record (callable from any thread; call `wake` on the
        loop afterwards); the future resolves on delivery."""
        return self._enqueue(topic, value, key, partition, headers, timestamp)[0]

    def _enqueue(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        headers: Iterable[tuple[str, Any]] | Mapping[str, Any] | None = None,
        timestamp: int | None = None,
    ) -> tuple[DeliveryFuture[RecordMetadata], bool]:
        if self._fatal is not None:
            raise self._fatal
        if self._closed:
            raise KafkaError("producer is closed")
        if not topic:
            raise TopicError("topic must be a non-empty string")
        items = headers.items() if isinstance(headers, Mapping) else (headers or ())
        hdrs = [(str(k), _to_bytes(v)) for k, v in items]
        ts = int(time.time() * 1000) if timestamp is None else int(timestamp)
        record = Record(_to_bytes(key), _to_bytes(value), hdrs, ts)
        future: DeliveryFuture[RecordMetadata] = DeliveryFuture()
        pending = _Pending(topic, partition, record, future, time.monotonic())
        with self._lock:
            self._unfinished += 1
            was_empty = not self._inbox
            self._inbox.append(pending)
        return future, was_empty

    def wake(self) -> None:
        self._idle.clear()
        self._wakeup.set()

    async def send(
        self, topic: str, value: Any = None, key: Any = None, **kw: Any
    ) -> RecordMetadata:
        future = self.enqueue(topic, value, key, **kw)
        self.wake()
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[RecordMetadata] = loop.create_future()

        def relay(f: DeliveryFuture[RecordMetadata]) -> None:
            def settle() -> None:
                if waiter.done():
                    return
                error = f.exception()
                if error is not None:
                    waiter.set_exception(error)
                else:
                    waiter.set_result(f.result())

            loop.call_soon_threadsafe(settle)

        future.add_done_callback(relay)
        return await waiter

    async def flush(self, timeout_s: float | None = None) -> int:
        """Send everything queued now; returns how many records remain."""
        self._flushing += 1
        self.wake()
        try:
            deadline = None if timeout_s is None else time.monotonic() + timeout_s
            while self._unfinished:
                if self._fatal is not None:
                    raise self._fatal
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    break
                self._idle.clear()
                self._wakeup.set()
                await wait_event(self._idle, min(remaining or 0.05, 0.05))
        finally:
            self._flushing -= 1
        return self._unfinished

    async def close(self, timeout_s: float = 30.0) -> None:
        if self._closed:
            return
        try:
            if self._fatal is None:
                await self.flush(timeout_s)
        finally:
            self._closed = True
            tasks = [t for t in (self._task, *self._tasks) if t is not None]
            for task in tasks:
                task.cancel()
            if tasks:
                await asyncio.wait(tasks, timeout=5)
            self._fail_all(KafkaError("producer closed before delivery"))
            await self.cluster.close()

    # ------------------------------------------------------------ internals

    async def _init_producer_id(self) -> None:
        response = await self.cluster.send_any(
            INIT_PRODUCER_ID,
            {
                "transactional_id": None,
                "transaction_timeout": 60_000,
                "producer_id": -1,
                "producer_epoch": -1,
            },
        )
        if response.error_code != 0:
            raise error_for(response.error_code, "InitProducerId")
        self.producer_id = int(response.producer_id)
        self.producer_epoch = int(response.producer_epoch)

    def _resolve(self, entry: _Pending, result: RecordMetadata | KafkaError) -> None:
        if not entry.future.done():
            if isinstance(result, KafkaError):
                entry.future.set_exception(result)
            else:
                entry.future.set_result(result)
        with self._lock:
            self._unfinished -= 1

    def _fail_all(self, error: KafkaError) -> None:
        with self._lock:
            inbox = list(self._inbox)
            self._inbox.clear()
        entries = inbox + self._waiting_metadata
        self._waiting_metadata = []
        for queue in self._batches.values():
            for batch in queue:
                entries.extend(batch.entries)
        self._batches.clear()
        for entry in entries:
            self._resolve(entry, error)

    async def _run(self) -> None:
        try:
            while True:
                await self._step()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # surface, never swallow
            error = exc if isinstance(exc, KafkaError) else KafkaError(f"producer failed: {exc!r}")
            self._fatal = error
            self._fail_all(error)
            self._idle.set()
            raise

    async def _step(self) -> None:
        await self._drain_inbox()
        now = time.monotonic()
        wake_at = self._send_ready(now)
        if not self._unfinished:
            self._idle.set()
        timeout = None if wake_at is None else max(0.0, wake_at - time.monotonic())
        if self._inbox:
            timeout = 0.0 if self._flushing else min(timeout or self.linger_s, self.linger_s)
        self._wakeup.clear()
        if timeout == 0.0:
            await asyncio.sleep(0)
            return
        await wait_event(self._wakeup, timeout)

    async def _drain_inbox(self) -> None:
        with self._lock:
            fresh = list(self._inbox)
            self._inbox.clear()
        todo = self._waiting_metadata + fresh
        self._waiting_metadata = []
        unknown = {e.topic for e in todo if e.topic not in self.cluster.topics}
        if unknown:
            try:
                await self.cluster.refresh_metadata(unknown | set(self.cluster.topics))
            except KafkaError:
                pass  # retried below via _waiting_metadata until delivery.timeout.ms
        now = time.monotonic()
        for entry in todo:
            meta = self.cluster.topics.get(entry.topic)
            if meta is None:
                if now - entry.created > min(self.delivery_timeout_s, 60):
                    self._resolve(entry, error_for(3, f"no metadata for topic {entry.topic}"))
                else:
                    self._waiting_metadata.append(entry)
                continue
            count = len(meta.partitions)
            if entry.partition is not None:
                if not 0 <= entry.partition < count:
                    self._resolve(
                        entry, TopicError(f"{entry.topic} has no partition {entry.partition}")
                    )
                    continue
                partition = entry.partition
            elif entry.record.key is not None:
                partition = partition_for_key(entry.record.key, count)
            else:
                sticky = self._sticky.get(entry.topic)
                if sticky is None or sticky >= count:
                    sticky = random.randrange(count)
                    self._sticky[entry.topic] = sticky
                partition = sticky
            self._append(entry, partition, now)
        if self._waiting_metadata:
            await asyncio.sleep(self.retry_backoff_s)

    def _append(self, entry: _Pending, partition: int, now: float) -> None:
        queue = self._batches.setdefault((entry.topic, partition), deque())
        size = 32 + len(entry.record.key or b"") + len(entry.record.value or b"")
        size += sum(len(k) + len(v or b"") for k, v in entry.record.headers)
        if not queue or queue[-1].attempts or queue[-1].size + size > self.batch_size:
            if queue and entry.partition is None and entry.record.key is None:
                self._sticky.pop(entry.topic, None)  # a new batch: move on
            queue.append(_Batch(entry.topic, partition, created=now))
        batch = queue[-1]
        batch.entries.append(entry)
        batch.size += size

    def _send_ready(self, now: float) -> float | None:
        """Send every ready batch; return when the next one will be ready."""
        by_leader: dict[int, list[_Batch]] = {}
        wake_at: float | None = None
        for tp, queue in list(self._batches.items()):
            if not queue:
                del self._batches[tp]
                continue
            if tp in self._in_flight:
                continue
            batch = queue[0]
            expired = now - batch.entries[0].created > self.delivery_timeout_s
            if expired:
                queue.popleft()
                for entry in batch.entries:
                    self._resolve(entry, KafkaTimeoutError("delivery.timeout.ms expired"))
                continue
            ready_at = batch.retry_at if batch.attempts else batch.created + self.linger_s
            full = len(queue) > 1 or batch.size >= self.batch_size
            if not (full or self._flushing or now >= ready_at) or now < batch.retry_at:
                wake_at = ready_at if wake_at is None else min(wake_at, ready_at)
                continue
            leader = self.cluster.leader_for(*tp)
            if leader is None:
                batch.retry_at = now + self.retry_backoff_s
                batch.attempts += 1
                wake_at = batch.retry_at if wake_at is None else min(wake_at, batch.retry_at)
                self._spawn(self._refresh_quietly())
                continue
            by_leader.setdefault(leader, []).append(batch)
        for leader, batches in by_leader.items():
            for b in batches:
                self._in_flight.add((b.topic, b.partition))
            self._spawn(self._send(leader, batches))
        return wake_at

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled() or task.exception() is None:
            return
        exc = task.exception()  # a bug, not a Kafka error: stop loudly
        error = exc if isinstance(exc, KafkaError) else KafkaError(f"producer failed: {exc!r}")
        self._fatal = error
        self._fail_all(error)
        self._idle.set()

    async def _refresh_quietly(self) -> None:
        try:
            await self.cluster.refresh_metadata(list(self.cluster.topics))
        except KafkaError:
            pass  # the batch waiting on it retries, and times out with an error

    def _encode(self, batch: _Batch) -> bytes:
        if batch.encoded is None:
            base_sequence = -1
            if self.idempotent:
                tp = (batch.topic, batch.partition)
                batch.sequence = self._sequences.get(tp, 0)
                self._sequences[tp] = (batch.sequence + len(batch.entries)) & 0x7FFFFFFF
                base_sequence = batch.sequence
            records = [e.record for e in batch.entries]
            batch.encoded = build_batch(
                records,
                timestamp_ms=records[0].timestamp or 0,
                compression_type=self.codec,
                producer_id=self.producer_id,
                producer_epoch=self.producer_epoch,
                base_sequence=base_sequence,
            )
        return batch.encoded

    async def _send(self, leader: int, batches: list[_Batch]) -> None:
        topics: dict[str, list[dict[str, Any]]] = {}
        for b in batches:
            b.attempts += 1
            topics.setdefault(b.topic, []).append(
                {"index": b.partition, "records": self._encode(b)}
            )
        body = {
            "transactional_id": None,
            "acks": self.acks,
            "timeout": self.request_timeout_ms,
            "topic_data": [{"name": t, "partition_data": ps} for t, ps in topics.items()],
        }
        results: dict[tuple[str, int], tuple[int, int, int, str | None]] = {}
        failure: KafkaError | None = None
        try:
            conn = await self.cluster.connection(leader)
            response = await with_timeout(
                conn.send(PRODUCE, body, expect_response=self.acks != 0),
                self.request_timeout_ms / 1000 + 5,
            )
            if response is not None:
                for t in response.responses:
                    for p in t.partition_responses:
                        lat = p.log_append_time
                        ts = -1
                        if isinstance(lat, datetime.datetime):
                            ts = int(lat.timestamp() * 1000)
                        results[(t.name, int(p.index))] = (
                            int(p.error_code),
                            int(p.base_offset),
                            ts,
                            getattr(p, "error_message", None),
                        )
        except TimeoutError:
            failure = KafkaTimeoutError("produce request timed out")
        except KafkaError as exc:
            failure = exc
        now = time.monotonic()
        refresh = False
        for b in batches:
            tp = (b.topic, b.partition)
            self._in_flight.discard(tp)
            queue = self._batches.get(tp)
            if self.acks == 0 and failure is None:
                code, base, ts, msg = 0, -1, -1, None
            elif failure is not None:
                code, base, ts, msg = -1, -1, -1, str(failure)
            else:
                code, base, ts, msg = results.get(tp, (-1, -1, -1, "no answer for partition"))
            if code == 0 or code == 46:  # DUPLICATE_SEQUENCE_NUMBER: already written
                if queue and queue[0] is b:
                    queue.popleft()
                for i, entry in enumerate(b.entries):
                    offset = base + i if base >= 0 else -1
                    stamp = ts if ts >= 0 else entry.record.timestamp or -1
                    self._resolve(entry, RecordMetadata(b.topic, b.partition, offset, stamp))
                continue
            error = failure if (failure is not None and code == -1) else error_for(code, msg)
            retriable = error.retriable or code == -1
            if retriable and now - b.entries[0].created < self.delivery_timeout_s:
                b.retry_at = now + self.retry_backoff_s
                refresh = True
                continue
            if queue and queue[0] is b:
                queue.popleft()
            if isinstance(error, ProducerFencedError | SequenceError):
                self._fatal = error
            for entry in b.entries:
                self._resolve(entry, error)
        if refresh:
            await self._refresh_quietly()
        self._wakeup.set()


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
        future, first = self._aio._enqueue(topic, value, key, partition, headers, timestamp)
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
