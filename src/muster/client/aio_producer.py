"""The producer's asyncio core, `AIOProducer`.

Records are partitioned (explicit partition, else murmur2 of the key as Java
and librdkafka's murmur2_random do, else a sticky random partition per
batch), accumulated per partition and sent when a batch reaches `batch.size`
or has waited `linger.ms`. By default one Produce request per partition is
in flight at a time, so retries keep order
(`max.in.flight.requests.per.connection`, applied per partition, allows more);
requests to different partitions and brokers are pipelined. With
`enable.idempotence` the producer gets an id from InitProducerId and
numbers each partition's batches; a retried batch keeps its sequence so the
broker de-duplicates it.

Every record resolves its future (and delivery callback) exactly once, with
`RecordMetadata` or a `KafkaError`; a failure of the sender itself fails
every pending record and is raised by the next `produce`/`flush`."""

from __future__ import annotations

import asyncio
import datetime
import random
import time
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

from muster.client._runner import wait_event, with_timeout
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
from muster.client.futures import DeliveryFuture, settle_many
from muster.client.net import Cluster
from muster.client.partitioner import partition_for_key
from muster.client.producer_batch import (
    RecordMetadata,
    _acks,
    _Batch,
    _Pending,
    _to_bytes,
    _unqueue,
    encode_batch,
)
from muster.client.security import ClientSecurity
from muster.records import compression

_NO_QUEUE: deque[Any] = deque([None])  # the batch header's place, filled in last

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
    "max.in.flight.requests.per.connection": 1,
}


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
        key = "max.in.flight.requests.per.connection"
        self.max_in_flight = int(c.get("max.in.flight", c.int(key)))
        if self.max_in_flight < 1:
            raise ConfigError(f"{key} must be at least 1")
        if self.idempotent and self.max_in_flight > 1:
            raise ConfigError(f"enable.idempotence requires {key}=1")
        self.request_timeout_ms = c.int("request.timeout.ms")
        self.delivery_timeout_s = c.int("delivery.timeout.ms") / 1000
        # librdkafka's topic.metadata.propagation.max.ms: how long a record for a
        # topic the broker does not know waits for it to appear (unset: up to
        # delivery.timeout.ms, 60 s at most)
        propagation = c.get("topic.metadata.propagation.max.ms")
        self.unknown_topic_s = min(
            self.delivery_timeout_s, 60 if propagation is None else int(propagation) / 1000
        )
        self.retry_backoff_s = c.int("retry.backoff.ms") / 1000
        # librdkafka's producer default: a topic it produces to is created by a
        # broker that allows auto-creation (auto.create.topics.enable)
        auto = c.get("allow.auto.create.topics")
        self.auto_create = True if auto is None else str(auto).lower() in ("true", "1")
        self.cluster = Cluster(
            c.str("bootstrap.servers"),
            c.str("client.id"),
            c.int("request.timeout.ms") / 1000,
            ClientSecurity.from_conf(c.raw),
        )
        self.producer_id = -1
        self.producer_epoch = -1
        self._sequences: dict[tuple[str, int], int] = {}
        self._inbox: deque[_Pending] = deque()
        self._waiting_metadata: list[_Pending] = []
        self._batches: dict[tuple[str, int], deque[_Batch]] = {}
        self._in_flight: dict[tuple[str, int], int] = {}  # Produce requests per partition
        self._sticky: dict[str, int] = {}
        self._wakeup = asyncio.Event()
        self._flushing = 0
        # Records handed to the loop and not yet resolved (touched on the loop
        # only); `_unfinished` adds the inbox, which any thread appends to.
        self._owned = 0
        self._wake_scheduled = False  # a wake is queued on the loop (see `_kick`)
        self._idle = asyncio.Event()
        self._idle.set()
        self._fatal: KafkaError | None = None
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self._tasks: set[asyncio.Task[Any]] = set()

    @property
    def _unfinished(self) -> int:
        """Records queued or in flight, not yet resolved. (Read off the loop
        it may briefly count a record twice while the loop drains the inbox,
        never zero while one is unresolved.)"""
        return len(self._inbox) + self._owned

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
        if headers is None:
            hdrs: list[tuple[str, bytes | None]] | tuple[()] = ()
        else:
            items = headers.items() if isinstance(headers, Mapping) else headers
            hdrs = [(str(k), _to_bytes(v)) for k, v in items]
        pending = _Pending(
            topic,
            partition,
            key if key is None or type(key) is bytes else _to_bytes(key),
            value if value is None or type(value) is bytes else _to_bytes(value),
            hdrs,
            int(time.time() * 1000) if timestamp is None else int(timestamp),
            time.monotonic(),
        )
        self._inbox.append(pending)  # deque.append is atomic: no lock
        return pending, self._claim_wake()

    def _claim_wake(self) -> bool:
        """True when the caller must schedule `wake` on the loop: none is
        queued yet. `wake` clears the flag before the loop drains the inbox,
        so a record appended before this check is always seen by a drain that
        follows a wake (records ride on an already queued wakeup)."""
        if self._wake_scheduled:
            return False
        self._wake_scheduled = True
        return True

    def wake(self) -> None:
        self._wake_scheduled = False
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

    def _resolve(self, entry: _Pending, error: KafkaError) -> None:
        self._fail([entry], error)

    def _fail(self, entries: list[_Pending], error: KafkaError) -> None:
        settle_many(entries, error=error)
        self._owned -= len(entries)

    def _take_inbox(self) -> list[_Pending]:
        """Move the inbox to the loop (counted in `_owned` before it leaves
        the inbox, so `_unfinished` never dips)."""
        inbox = self._inbox
        n = len(inbox)
        self._owned += n
        popleft = inbox.popleft
        return [popleft() for _ in range(n)]

    def _fail_all(self, error: KafkaError) -> None:
        entries = self._take_inbox() + self._waiting_metadata
        self._waiting_metadata = []
        for queue in self._batches.values():
            for batch in queue:
                entries.extend(batch.entries)
        self._batches.clear()
        self._fail(entries, error)

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
        fresh = self._take_inbox()
        if self._waiting_metadata:
            todo = self._waiting_metadata + fresh
            self._waiting_metadata = []
        else:
            todo = fresh
        if not todo:
            return
        known = self.cluster.topics
        unknown = {e.topic for e in todo if e.topic not in known}
        if unknown:
            try:
                await self.cluster.refresh_metadata(
                    unknown | set(self.cluster.topics), auto_create=self.auto_create
                )
            except KafkaError:
                pass  # retried below via _waiting_metadata until delivery.timeout.ms
        now = time.monotonic()
        topics = self.cluster.topics
        batches = self._batches
        batch_size = self.batch_size
        tp: tuple[str, int] | None = None
        batch: _Batch | None = None
        for entry in todo:
            meta = topics.get(entry.topic)
            if meta is None:
                if now - entry.created > self.unknown_topic_s:
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
            elif entry.key is not None:
                partition = partition_for_key(entry.key, count)
            else:
                sticky = self._sticky.get(entry.topic)
                if sticky is None or sticky >= count:
                    sticky = random.randrange(count)
                    self._sticky[entry.topic] = sticky
                partition = sticky
            # append to the partition's open batch (inline `_append`)
            key, value = entry.key, entry.value
            size = 32 + (len(key) if key else 0) + (len(value) if value else 0)
            if entry.headers:
                size += sum(len(k) + len(v or b"") for k, v in entry.headers)
            if (
                batch is not None
                and tp == (entry.topic, partition)
                and batch.size + size <= batch_size
                and batch is batches.get(tp, _NO_QUEUE)[-1]
            ):
                entry.index = len(batch.entries)
                batch.entries.append(entry)
                batch.size += size
                continue
            self._append(entry, partition, now)
            tp = (entry.topic, partition)
            batch = batches[tp][-1]
        if self._waiting_metadata:
            await asyncio.sleep(self.retry_backoff_s)

    def _append(self, entry: _Pending, partition: int, now: float) -> None:
        tp = (entry.topic, partition)
        queue = self._batches.get(tp)
        if queue is None:
            queue = self._batches[tp] = deque()
        key, value = entry.key, entry.value
        size = 32 + (len(key) if key else 0) + (len(value) if value else 0)
        if entry.headers:
            size += sum(len(k) + len(v or b"") for k, v in entry.headers)
        last = queue[-1] if queue else None
        if last is None or last.attempts or last.sending or last.size + size > self.batch_size:
            if queue and entry.partition is None and key is None:
                self._sticky.pop(entry.topic, None)  # a new batch: move on
            queue.append(_Batch(entry.topic, partition, created=now))
        batch = queue[-1]
        entry.index = len(batch.entries)
        batch.entries.append(entry)
        batch.size += size

    def _send_ready(self, now: float) -> float | None:
        """Send every ready batch; return when the next one will be ready.

        Per partition, batches go out in queue order, at most
        `max_in_flight` at a time (default 1: the next one waits for the
        answer, so retries keep order). A partition's k-th batch picked here
        rides in the k-th request to its leader (one batch per partition per
        request), and requests are written in that order."""
        rounds: dict[int, list[list[_Batch]]] = {}
        wake_at: float | None = None
        limit = self.max_in_flight
        for tp, queue in list(self._batches.items()):
            if not queue:
                del self._batches[tp]
                continue
            busy = self._in_flight.get(tp, 0)
            picked = 0
            i = 0
            while busy < limit and i < len(queue):
                batch = queue[i]
                if batch.sending:
                    i += 1
                    continue
                expired = now - batch.entries[0].created > self.delivery_timeout_s
                if expired:
                    del queue[i]
                    self._fail(batch.entries, KafkaTimeoutError("delivery.timeout.ms expired"))
                    continue
                ready_at = batch.retry_at if batch.attempts else batch.created + self.linger_s
                full = i < len(queue) - 1 or batch.size >= self.batch_size
                if not (full or self._flushing or now >= ready_at) or now < batch.retry_at:
                    wake_at = ready_at if wake_at is None else min(wake_at, ready_at)
                    break
                leader = self.cluster.leader_for(*tp)
                if leader is None:
                    batch.retry_at = now + self.retry_backoff_s
                    batch.attempts += 1
                    wake_at = batch.retry_at if wake_at is None else min(wake_at, batch.retry_at)
                    self._spawn(self._refresh_quietly())
                    break
                batch.sending = True
                busy += 1
                requests = rounds.setdefault(leader, [])
                if len(requests) <= picked:
                    requests.append([])
                requests[picked].append(batch)
                picked += 1
                i += 1
            if busy:
                self._in_flight[tp] = busy
        for leader, requests in rounds.items():
            for batches in requests:
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

    def _encode(self, batch: _Batch) -> bytearray:
        if batch.encoded is None:
            base_sequence = -1
            if self.idempotent:
                tp = (batch.topic, batch.partition)
                batch.sequence = self._sequences.get(tp, 0)
                self._sequences[tp] = (batch.sequence + len(batch.entries)) & 0x7FFFFFFF
                base_sequence = batch.sequence
            batch.encoded = encode_batch(
                batch.entries, self.codec, self.producer_id, self.producer_epoch, base_sequence
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
            b.sending = False
            busy = self._in_flight.pop(tp, 0) - 1
            if busy > 0:
                self._in_flight[tp] = busy
            queue = self._batches.get(tp)
            if self.acks == 0 and failure is None:
                code, base, ts, msg = 0, -1, -1, None
            elif failure is not None:
                code, base, ts, msg = -1, -1, -1, str(failure)
            else:
                code, base, ts, msg = results.get(tp, (-1, -1, -1, "no answer for partition"))
            if code == 0 or code == 46:  # DUPLICATE_SEQUENCE_NUMBER: already written
                _unqueue(queue, b)
                # one value for the batch: result() makes each record's metadata
                settle_many(b.entries, same=(b.partition, base, ts))
                self._owned -= len(b.entries)
                continue
            error = failure if (failure is not None and code == -1) else error_for(code, msg)
            retriable = error.retriable or code == -1
            if retriable and now - b.entries[0].created < self.delivery_timeout_s:
                b.retry_at = now + self.retry_backoff_s
                refresh = True
                continue
            _unqueue(queue, b)
            if isinstance(error, ProducerFencedError | SequenceError):
                self._fatal = error
            self._fail(b.entries, error)
        if refresh:
            await self._refresh_quietly()
        self._wakeup.set()
