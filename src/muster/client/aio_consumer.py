"""The consumer's asyncio core, `AIOConsumer`.

Group membership (`core.membership.GroupMembership`, driven by
`consumer_group.GroupDriver`) and fetching (`core.fetcher.FetchManager`) are
sans-IO state machines; this class is their driver: it sends what they ask
for, feeds answers back, runs the heartbeat/auto-commit steps on a
background task, and runs the join and the listener callbacks only inside
the application's `poll`, as Java does. Fetching is pipelined: after `poll`
hands out records, the next Fetch for those partitions is already on the wire."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import re
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from muster.client._runner import wait_event, with_timeout
from muster.client.config import READ_COMMITTED, Config, isolation_level
from muster.client.consumer_args import (
    TP,
    _mark_retrieved,
    _now_ms,
    _offsets_arg,
    _strategy_names,
    _tp,
)
from muster.client.consumer_group import GroupDriver
from muster.client.core.consumer_member import ConsumerGroupMember
from muster.client.core.fetcher import EARLIEST, LATEST, FetchManager
from muster.client.core.membership import Event, GroupMembership, Request
from muster.client.errors import (
    ConfigError,
    KafkaError,
    KafkaTimeoutError,
)
from muster.client.net import Cluster
from muster.client.security import ClientSecurity
from muster.client.types import ConsumerRecord, TopicPartition

DEFAULTS: dict[str, Any] = {
    "client.id": "muster-consumer",
    "group.id": None,
    "group.instance.id": None,
    "enable.auto.commit": True,
    "auto.commit.interval.ms": 5_000,
    "auto.offset.reset": "latest",
    "session.timeout.ms": 45_000,
    "heartbeat.interval.ms": 3_000,
    "max.poll.interval.ms": 300_000,
    "partition.assignment.strategy": "range",
    # "consumer": KIP-848 (the broker assigns; session.timeout.ms,
    # heartbeat.interval.ms and partition.assignment.strategy then do not apply)
    "group.protocol": "classic",
    "group.remote.assignor": None,  # the broker's assignor (uniform, range); None: its default
    "fetch.min.bytes": 1,
    "fetch.max.wait.ms": 500,
    "fetch.max.bytes": 52_428_800,
    "max.partition.fetch.bytes": 1_048_576,
    "max.poll.records": 500,
    "metadata.max.age.ms": 300_000,
    "retry.backoff.ms": 100,
    "request.timeout.ms": 30_000,
    "client.rack": None,
    # librdkafka's default (Java's is read_uncommitted): see the README
    "isolation.level": "read_committed",
}


@dataclass
class _PollResult:
    records: list[ConsumerRecord] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)


class AIOConsumer(GroupDriver):
    """The asyncio consumer. Create and use it on one event loop."""

    def __init__(self, conf: Mapping[str, Any]):
        self.config = c = Config(conf, DEFAULTS)
        self.group_id = c.opt_str("group.id")
        reset = str(c.get("auto.offset.reset")).lower()
        resets = {"earliest": EARLIEST, "smallest": EARLIEST, "beginning": EARLIEST}
        resets |= {"latest": LATEST, "largest": LATEST, "end": LATEST}
        if reset not in resets and reset not in ("none", "error"):
            raise ConfigError(f"auto.offset.reset {reset!r} is not earliest, latest or none")
        self.default_reset = resets.get(reset)
        self.isolation_level = isolation_level(c.get("isolation.level"))
        self.auto_commit = c.bool("enable.auto.commit") and self.group_id is not None
        self.max_poll_records = c.int("max.poll.records")
        self.fetch_max_wait_ms = c.int("fetch.max.wait.ms")
        self.metadata_max_age_s = c.int("metadata.max.age.ms") / 1000
        self.retry_backoff_s = c.int("retry.backoff.ms") / 1000
        self.request_timeout_s = c.int("request.timeout.ms") / 1000
        self.cluster = Cluster(
            c.str("bootstrap.servers"),
            c.str("client.id"),
            c.int("request.timeout.ms") / 1000,
            ClientSecurity.from_conf(c.raw),
        )
        self.membership: GroupMembership | ConsumerGroupMember | None = None
        protocol = str(c.get("group.protocol")).strip().lower()
        if protocol not in ("classic", "consumer"):
            raise ConfigError(f"group.protocol {protocol!r} is not classic or consumer")
        common: dict[str, Any] = dict(
            max_poll_interval_ms=c.int("max.poll.interval.ms"),
            group_instance_id=c.opt_str("group.instance.id"),
            enable_auto_commit=self.auto_commit,
            auto_commit_interval_ms=c.int("auto.commit.interval.ms"),
            retry_backoff_ms=c.int("retry.backoff.ms"),
            rack=c.opt_str("client.rack"),
            now_ms=_now_ms(),
        )
        if self.group_id is not None and protocol == "consumer":
            self.membership = ConsumerGroupMember(
                self.group_id, server_assignor=c.opt_str("group.remote.assignor"), **common
            )
        elif self.group_id is not None:
            self.membership = GroupMembership(
                self.group_id,
                assignors=_strategy_names(c.get("partition.assignment.strategy")),
                session_timeout_ms=c.int("session.timeout.ms"),
                heartbeat_interval_ms=c.int("heartbeat.interval.ms"),
                **common,
            )
        self.mode = "none"  # "assign" | "subscribe"
        self.pattern: re.Pattern[str] | None = None
        self.topics: frozenset[str] = frozenset()
        self.listener: Any = None
        self._confluent_callbacks: tuple[Any, Any, Any] = (None, None, None)
        self.fetcher = FetchManager(
            default_reset=self.default_reset,
            use_committed=self.group_id is not None,
            max_poll_records=self.max_poll_records,
            fetch_max_wait_ms=self.fetch_max_wait_ms,
            fetch_min_bytes=c.int("fetch.min.bytes"),
            fetch_max_bytes=c.int("fetch.max.bytes"),
            partition_max_bytes=c.int("max.partition.fetch.bytes"),
            retry_backoff_ms=c.int("retry.backoff.ms"),
            read_committed=self.isolation_level == READ_COMMITTED,
        )
        self._kick = asyncio.Event()
        self._errors: deque[KafkaError] = deque()
        self._held: list[Request] = []
        self._listener_events: deque[Event] = deque()
        self._futures: dict[int, asyncio.Future[Any]] = {}
        self._tags = 0
        self._tasks: set[asyncio.Task[Any]] = set()
        self._group_task: asyncio.Task[None] | None = None
        self._metadata_task: asyncio.Task[None] | None = None
        self._metadata_at = 0.0
        self._closed = False
        self._leave: list[Request] = []
        self.facade: Any = None  # the blocking Consumer, handed to confluent-style callbacks

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> AIOConsumer:
        await self.cluster.refresh_metadata([])
        self._metadata_at = time.monotonic()
        if self.membership is not None:
            self._group_task = self._spawn(self._group_loop(), track=False)
        return self

    def _spawn(self, coro: Any, track: bool = True) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        if track:
            self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:  # never swallowed: raised by the next poll
            self._errors.append(
                exc if isinstance(exc, KafkaError) else KafkaError(f"internal error: {exc!r}")
            )
            self._kick.set()

    async def close(self, autocommit: bool = True) -> None:
        if self._closed:
            return
        try:
            for event in await self._close_prepare(autocommit):
                await self._deliver_listener_event(event)
        finally:
            await self._close_finish()

    async def _close_prepare(self, autocommit: bool) -> list[Event]:
        """Commit (auto-commit) and prepare to leave; returns the revoke
        events whose callbacks must run before the LeaveGroup goes out."""
        m = self.membership
        if m is None or self._closed:
            return []
        if self.auto_commit and self.fetcher.parts and autocommit:
            with contextlib.suppress(KafkaError, TimeoutError):
                await with_timeout(self.commit(), self.request_timeout_s)
        if self.mode != "subscribe":
            return []
        self._leave = m.close(_now_ms())
        self._group_step(m, join=False)
        events = list(self._listener_events)
        self._listener_events.clear()
        return events

    async def _close_finish(self) -> None:
        if self._closed:
            return
        m = self.membership
        try:
            if m is not None:
                self._release_held()
                for request in self._leave:
                    with contextlib.suppress(KafkaError, TimeoutError):
                        await with_timeout(self._send_core(request), 5)
                m.finish_close()
        finally:
            self._closed = True
            tasks = [t for t in (self._group_task, self._metadata_task, *self._tasks) if t]
            for task in tasks:
                task.cancel()
            if tasks:
                await asyncio.wait(tasks, timeout=5)
            await self.cluster.close()

    # ------------------------------------------------------------ assignment

    def assign(self, partitions: Iterable[Any]) -> None:
        tps = [_tp(p) for p in partitions]
        if self.mode == "subscribe":
            raise ConfigError("assign() after subscribe(): call unsubscribe() first")
        if self.membership is not None and self.auto_commit and self.fetcher.parts:
            self.membership.commit(self._consumed_offsets())  # pending offsets first
        self.mode = "assign" if tps else "none"
        self.fetcher.assign(tps)
        self._kick.set()

    def subscribe(
        self,
        topics: Iterable[str] | str | re.Pattern[str],
        listener: Any = None,
        *,
        on_assign: Callable[..., Any] | None = None,
        on_revoke: Callable[..., Any] | None = None,
        on_lost: Callable[..., Any] | None = None,
    ) -> None:
        """Subscribe to topics or to a regex (a `re.Pattern`, or a string
        starting with "^" as librdkafka). `listener` may have
        on_partitions_revoked/assigned/lost(partitions); confluent-style
        on_assign/on_revoke/on_lost(consumer, partitions) also work."""
        if self.membership is None:
            raise ConfigError("subscribe() needs group.id")
        if self.mode == "assign":
            raise ConfigError("subscribe() after assign(): call unsubscribe() first")
        if isinstance(topics, str) and topics.startswith("^"):
            topics = re.compile(topics)
        if isinstance(topics, re.Pattern):
            self.pattern = topics
            names: frozenset[str] = frozenset()
        else:
            if isinstance(topics, str):
                topics = [topics]
            names = frozenset(topics)
            for name in names:
                if not isinstance(name, str) or not name.strip():
                    raise ConfigError("topic names must be non-empty strings")
            self.pattern = None
            if not names:
                self.unsubscribe()
                return
        self.listener = listener
        self._confluent_callbacks = (on_assign, on_revoke, on_lost)
        self.mode = "subscribe"
        self.topics = names
        if self._metadata_task is None:
            self._metadata_task = self._spawn(self._metadata_loop(), track=False)
        if self.pattern is None:
            self.membership.subscribe(names, _now_ms())
        self._metadata_at = 0.0  # refresh now: the leader needs counts
        self._kick.set()

    def unsubscribe(self) -> None:
        """Revoke (callbacks run now), leave the group, forget the assignment."""
        for event in self._unsubscribe_prepare():
            self._apply_before(event)
            fn, args = self._callback_for(event)
            if fn is not None:
                result = fn(*args)
                if inspect.isawaitable(result):
                    self._spawn(result)
            self._apply_after(event)
        self._unsubscribe_finish()

    def _unsubscribe_prepare(self) -> list[Event]:
        m = self.membership
        if m is None or self.mode != "subscribe":
            return []
        self._leave = m.close(_now_ms())
        events = [e for e in m.events if e.kind in ("revoke", "assign", "lost")]
        kept = [e for e in m.events if e.kind not in ("revoke", "assign", "lost")]
        m.events.clear()
        m.events.extend(kept)
        return list(self._listener_events) + events

    def _unsubscribe_finish(self) -> None:
        m = self.membership
        self._listener_events.clear()
        if m is not None and self.mode == "subscribe":
            for request in [*self._held, *self._leave]:
                self._spawn(self._send_core(request))
            self._held, self._leave = [], []
            m.finish_close()
        self.mode = "none"
        self.topics = frozenset()
        self.pattern = None
        self.fetcher.assign([])
        self._kick.set()

    def assignment(self) -> set[TopicPartition]:
        return set(self.fetcher.parts)

    # ------------------------------------------------------------ positions

    def position(self, partition: Any) -> int | None:
        return self.fetcher.position(_tp(partition))

    def seek(self, partition: Any, offset: int | None = None) -> None:
        """Fetch from `offset` next (EARLIEST=-2 / LATEST=-1 reset)."""
        if offset is None:  # a confluent TopicPartition carrying its offset
            offset = int(partition.offset)
        self.fetcher.seek(_tp(partition), offset)
        self._kick.set()

    def seek_to_beginning(self, partitions: Iterable[Any] | None = None) -> None:
        for tp in self._targets(partitions):
            self.seek(tp, EARLIEST)

    def seek_to_end(self, partitions: Iterable[Any] | None = None) -> None:
        for tp in self._targets(partitions):
            self.seek(tp, LATEST)

    def pause(self, partitions: Iterable[Any]) -> None:
        self.fetcher.pause(self._targets(partitions))

    def resume(self, partitions: Iterable[Any]) -> None:
        self.fetcher.resume(self._targets(partitions))
        self._kick.set()

    def paused(self) -> set[TopicPartition]:
        return {tp for tp, p in self.fetcher.parts.items() if p.paused}

    def lag(self, partition: Any) -> int | None:
        """How far the position is behind the end of the partition as the last
        Fetch answer said (the last stable offset with read_committed, the high
        watermark without); None until both are known. Java's currentLag."""
        return self.fetcher.lag(_tp(partition))

    def _targets(self, partitions: Iterable[Any] | None) -> list[TopicPartition]:
        if partitions is None:
            return list(self.fetcher.parts)
        out = [_tp(p) for p in partitions]
        for tp in out:
            if tp not in self.fetcher.parts:
                raise KafkaError(f"{tp} is not assigned")
        return out

    def _consumed_offsets(self) -> dict[TP, int]:
        return self.fetcher.consumed()

    # ------------------------------------------------------------ commits

    def _new_future(self) -> tuple[int, asyncio.Future[Any]]:
        self._tags += 1
        future = asyncio.get_running_loop().create_future()
        self._futures[self._tags] = future
        return self._tags, future

    async def commit(self, offsets: Any = None) -> dict[TopicPartition, int]:
        """Commit `offsets` ({tp: next offset to read}) or the consumed
        positions; raises CommitFailedError if the group rebalanced."""
        m = self._require_group()
        to_commit = self._consumed_offsets() if offsets is None else _offsets_arg(offsets)
        if not to_commit:
            return {}
        tag, future = self._new_future()
        m.commit(to_commit, tag)
        self._kick.set()
        await future
        return {_tp(k): v for k, v in to_commit.items()}

    def commit_nowait(
        self, offsets: Any = None, callback: Callable[[KafkaError | None, Any], None] | None = None
    ) -> asyncio.Future[Any]:
        m = self._require_group()
        to_commit = self._consumed_offsets() if offsets is None else _offsets_arg(offsets)
        tag, future = self._new_future()
        if not to_commit:
            future.set_result({})
        else:
            m.commit(to_commit, tag)
            self._kick.set()
        if callback is not None:

            def done(f: asyncio.Future[Any]) -> None:
                exc = f.exception()
                callback(
                    exc if isinstance(exc, KafkaError) or exc is None else KafkaError(str(exc)),
                    to_commit,
                )

            future.add_done_callback(done)
        return future

    async def committed(self, partitions: Iterable[Any]) -> dict[TopicPartition, int | None]:
        m = self._require_group()
        tps = [_tp(p) for p in partitions]
        tag, future = self._new_future()
        m.fetch_committed(tps, tag)
        self._kick.set()
        offsets = await future
        return {tp: (offsets.get(tp) if offsets.get(tp, -1) >= 0 else None) for tp in tps}

    def _require_group(self) -> GroupMembership | ConsumerGroupMember:
        if self.membership is None:
            raise ConfigError("this operation needs group.id")
        if self._group_task is None:
            raise KafkaError("consumer not started")
        return self.membership

    # ------------------------------------------------------------ the group driver

    # ------------------------------------------------------------ poll

    async def poll(self, timeout_s: float = 0.0) -> list[ConsumerRecord]:
        deadline = time.monotonic() + timeout_s
        while True:
            result = await self._poll(max(0.0, deadline - time.monotonic()), defer=False)
            if result.records or time.monotonic() >= deadline:
                return result.records

    async def _poll(self, timeout_s: float, defer: bool) -> _PollResult:
        """One poll. With defer, listener events stop the poll and are handed
        back (the blocking facade runs them on the application's thread)."""
        deadline = time.monotonic() + timeout_s
        self._app_polled()
        m = self.membership
        while True:
            result, wake_at = self._poll_step(defer)
            if result is not None:
                return result
            if m is not None and self._listener_events:  # only without defer
                await self._run_listener_events(m)
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return _PollResult()
            if wake_at is not None:
                remaining = min(remaining, max(0.0, (wake_at - _now_ms()) / 1000))
            self._kick.clear()
            await wait_event(self._kick, remaining)

    def _poll_now(self) -> _PollResult | None:
        """The facade's poll when something is ready: a plain call, one loop
        iteration, no task. None: nothing yet, wait in `_poll`."""
        self._app_polled()
        return self._poll_step(defer=True)[0]

    def _app_polled(self) -> None:
        if self._closed:
            raise KafkaError("consumer is closed")
        if self.membership is not None:
            self.membership.app_polled(_now_ms())

    def _poll_step(self, defer: bool) -> tuple[_PollResult | None, int | None]:
        """Errors, the group step, records: what a poll can hand out now, and
        when the fetcher next wants to run. (None, _) when there is nothing,
        or, without defer, when listener events are waiting to be run."""
        m = self.membership
        if self._errors:
            raise self._errors.popleft()
        if m is not None and m.fatal is not None and self.mode == "subscribe":
            raise m.fatal  # sticky: the member cannot go on (e.g. fenced)
        if m is not None and self.mode == "subscribe":
            self._group_step(m, join=True)
            if self._listener_events:
                if not defer:
                    return None, None
                events = list(self._listener_events)
                self._listener_events.clear()
                return _PollResult(events=events), None
        if self.fetcher.errors:
            raise self.fetcher.errors.popleft()
        records = self.fetcher.take_records()
        wake_at = self._fetch_step()  # the next fetch goes out before we return
        return (_PollResult(records=records) if records else None), wake_at

    async def list_offsets(
        self, request: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, int]:
        """{tp: timestamp or EARLIEST/LATEST} -> {tp: offset}, asked of each leader
        with the consumer's isolation level (read_committed: LATEST is the last
        stable offset), as Java's endOffsets / offsetsForTimes."""
        return await self.cluster.list_offsets(request, self.isolation_level)

    def _fetch_step(self) -> int | None:
        requests, wake_at = self.fetcher.poll(_now_ms(), self.cluster.leader_for)
        for request in requests:
            sent = self._write_fetch(request) if request.kind == "fetch" else None
            self._spawn(self._send_fetcher(request, sent))
        return wake_at

    def _write_fetch(self, request: Request) -> asyncio.Future[Any] | None:
        """Writes a Fetch now when its broker's connection is up: a task only
        runs after the current callback, which may be decoding megabytes."""
        conn = self.cluster.ready_connection(request.node)
        if conn is None:
            return None
        try:
            sent = conn.send_nowait(request.api_key, request.body)
        except KafkaError as exc:  # reported by _send_fetcher, as any send error
            sent = asyncio.get_running_loop().create_future()
            sent.set_exception(exc)
        # _send_fetcher awaits it and reports its error; only when close()
        # cancelled that task first is nobody left to tell
        sent.add_done_callback(_mark_retrieved)
        return sent

    async def _send_fetcher(
        self, request: Request, sent: asyncio.Future[Any] | None = None
    ) -> None:
        f = self.fetcher
        try:
            if sent is not None:
                timeout = self.request_timeout_s + self.fetch_max_wait_ms / 1000
                response: Any = await with_timeout(sent, timeout)
            elif request.kind == "committed":
                response = await self.committed(list(request.tag))
            elif request.kind == "metadata":
                topics = set(request.body["topics"]) | set(self.cluster.topics)
                await self.cluster.refresh_metadata(topics)
                response = None
            else:
                conn = await self.cluster.connection(request.node)
                timeout = self.request_timeout_s + self.fetch_max_wait_ms / 1000
                response = await with_timeout(conn.send(request.api_key, request.body), timeout)
        except (KafkaError, TimeoutError) as exc:
            error = exc if isinstance(exc, KafkaError) else KafkaTimeoutError(request.kind)
            f.on_failure(request, error, _now_ms())
        else:
            # A Fetch answer stays raw until the app polls for its records, and
            # the next fetches (prefetches behind buffered answers, fetches of
            # partitions with nothing buffered) go out now, so the broker
            # prepares them while the app decodes and processes these.
            f.accept(request, response, _now_ms())
            if request.kind == "fetch" and f.buffer and not self._closed:
                self._fetch_step()
        self._kick.set()
