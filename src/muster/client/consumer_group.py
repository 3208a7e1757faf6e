"""Driving a consumer's group membership (`core.membership.GroupMembership`):
the background loop that sends what it asks for and feeds answers back, metadata
refreshes for the subscription, and the rebalance listener callbacks, run inside
the application's poll as Java does. A mixin of `AIOConsumer`."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable
from typing import Any

from muster.client._runner import wait_event, with_timeout
from muster.client.consumer_args import _now_ms, _tp
from muster.client.core.consumer_member import ConsumerGroupMember
from muster.client.core.membership import Event, GroupMembership, Request
from muster.client.errors import (
    CommitFailedError,
    KafkaError,
    KafkaTimeoutError,
)

Member = GroupMembership | ConsumerGroupMember  # classic or consumer protocol


class GroupDriver:
    async def _group_loop(self) -> None:
        m = self.membership
        assert m is not None
        while not self._closed:
            wake_at = self._group_step(m, join=False)
            self._kick.clear()
            timeout = None if wake_at is None else max(0.0, (wake_at - _now_ms()) / 1000)
            await wait_event(self._kick, 1.0 if timeout is None else timeout)

    def _group_step(self, m: Member, join: bool) -> int | None:
        m.set_positions(self._consumed_offsets())
        requests, wake_at = m.poll(_now_ms(), join=join)
        while m.events:
            event = m.events.popleft()
            if event.kind in ("revoke", "assign", "lost"):
                self._listener_events.append(event)
            elif event.kind == "fatal":
                self._errors.append(event.error or KafkaError("group failure"))
            else:
                future = self._futures.pop(event.tag, None) if isinstance(event.tag, int) else None
                if future is not None and not future.done():
                    if event.error is not None:
                        future.set_exception(event.error)
                    else:
                        future.set_result(dict(event.offsets))
                elif event.error is not None and event.tag == "auto":
                    # A rebalance or a retriable error: the next interval (or
                    # the rejoin's commit) tries again. Anything else surfaces.
                    if not (event.error.retriable or isinstance(event.error, CommitFailedError)):
                        self._errors.append(event.error)
        if self._listener_events and join:
            self._held.extend(requests)  # the JoinGroup goes after the callbacks ran
        else:
            for request in requests:
                self._spawn(self._send_core(request))
        return wake_at

    async def _send_core(self, request: Request) -> None:
        m = self.membership
        assert m is not None
        try:
            if request.to == "metadata":
                topics = request.body["topics"]
                await self.cluster.refresh_metadata(set(topics) | set(self.cluster.topics))
                if request.kind == "ids":  # the consumer protocol names topics by id
                    response: Any = self.cluster.topic_ids()
                else:
                    response = self.cluster.partition_counts(topics)
            elif request.to == "any":
                response = await with_timeout(
                    self.cluster.send_any(request.api_key, request.body), self.request_timeout_s
                )
            else:
                if m.coordinator is None:
                    raise KafkaError("coordinator unknown", code=15, retriable=True)
                node, host, port = m.coordinator
                conn = await self.cluster.coordinator_connection(node, host, port)
                timeout = self.request_timeout_s
                if request.kind == "join":
                    timeout += m.max_poll_interval_ms / 1000
                version = None
                if request.versions is not None:
                    version = conn.version_for(request.api_key, request.versions)
                sent = conn.send(request.api_key, request.body, version)
                response = await with_timeout(sent, timeout)
        except (KafkaError, TimeoutError) as exc:
            error = exc if isinstance(exc, KafkaError) else KafkaTimeoutError(str(request.kind))
            m.on_failure(request, error, _now_ms())
        else:
            m.on_response(request, response, _now_ms())
        self._kick.set()

    async def _metadata_loop(self) -> None:
        m = self.membership
        assert m is not None
        while not self._closed:
            due = self._metadata_at + self.metadata_max_age_s
            if time.monotonic() >= due:
                await self._refresh_subscription_metadata(m)
            await asyncio.sleep(min(max(0.05, due - time.monotonic()), 1.0))

    async def _refresh_subscription_metadata(self, m: Member) -> None:
        self._metadata_at = time.monotonic()
        try:
            if self.pattern is not None:
                await self.cluster.refresh_metadata(None)
                matching = {
                    t
                    for t in self.cluster.topics
                    if self.pattern.fullmatch(t) and not t.startswith("__")
                }
                m.subscribe(matching, _now_ms())
            else:
                await self.cluster.refresh_metadata(set(self.topics) | set(self.cluster.topics))
        except KafkaError:
            self._metadata_at = time.monotonic() - self.metadata_max_age_s + self.retry_backoff_s
            return
        m.update_metadata(self.cluster.partition_counts(m.subscription), _now_ms())
        self._kick.set()

    def _apply_before(self, event: Event) -> None:
        if event.kind == "assign":
            self.fetcher.add(_tp(tp) for tp in event.partitions)

    def _apply_after(self, event: Event) -> None:
        if event.kind in ("revoke", "lost"):
            self.fetcher.remove(_tp(tp) for tp in event.partitions)
        if self.membership is not None:  # the consumer protocol acks after callbacks
            self.membership.listener_done(event, _now_ms())

    def _release_held(self) -> None:
        held, self._held = self._held, []
        for request in held:
            self._spawn(self._send_core(request))
        self._kick.set()

    def _callback_for(self, event: Event) -> tuple[Callable[..., Any] | None, tuple[Any, ...]]:
        parts = {_tp(tp) for tp in event.partitions}
        names = {
            "assign": "on_partitions_assigned",
            "revoke": "on_partitions_revoked",
            "lost": "on_partitions_lost",
        }
        fn = getattr(self.listener, names[event.kind], None) if self.listener else None
        if fn is not None:
            return fn, (parts,)
        on_assign, on_revoke, on_lost = self._confluent_callbacks
        cb = {"assign": on_assign, "revoke": on_revoke, "lost": on_lost or on_revoke}[event.kind]
        if cb is not None:
            return cb, (self.facade or self, sorted(parts))
        if event.kind == "lost" and self.listener is not None:
            fn = getattr(self.listener, "on_partitions_revoked", None)  # Java's default
            if fn is not None:
                return fn, (parts,)
        return None, ()

    async def _run_listener_events(self, m: Member) -> None:
        self._group_step(m, join=False)
        while self._listener_events:
            await self._deliver_listener_event(self._listener_events.popleft())
        self._release_held()

    async def _deliver_listener_event(self, event: Event) -> None:
        """State change before the user's callback (revoke/assign/lost), the rest after."""
        self._apply_before(event)
        fn, args = self._callback_for(event)
        if fn is not None:
            result = fn(*args)
            if inspect.isawaitable(result):
                await result
        self._apply_after(event)
