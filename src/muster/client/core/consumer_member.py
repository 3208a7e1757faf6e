"""The consumer-protocol (KIP-848, `group.protocol=consumer`) group member as
a pure state machine, beside the classic `GroupMembership` and driven by the
same driver through the same interface.

The broker computes the assignment; the member only heartbeats
(ConsumerGroupHeartbeat, API 68) and reconciles (Java's
ConsumerMembershipManager and ConsumerHeartbeatRequestManager):

- join: heartbeats with epoch 0 and every field (subscription, rebalance
  timeout, server assignor, owned partitions = []) until an epoch comes back;
  the member id is this client's own (a UUID: v1 requires it, v0 accepts it);
- heartbeats at the interval each answer dictates, carrying only the fields
  that changed since the last one (every field again after any error);
- reconcile the assignment an answer brings (topic ids, named through
  Metadata): auto-commit and the revoke callback first, then the assign
  callback, and only after both ran the next heartbeat (sent at once) reports
  the owned partitions: the broker gives a revoked partition to its next owner
  only after that acknowledgement;
- FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID: the partitions are lost (lost
  callback), then rejoin with epoch 0; NOT_COORDINATOR /
  COORDINATOR_NOT_AVAILABLE: find the coordinator again; the rest is fatal;
- leave with epoch -1 (a static member, `group.instance.id`: -2);
- commits carry the member epoch (OffsetCommit v9, OffsetFetch v9);
  STALE_MEMBER_EPOCH is retried while the member is in the group.

States and transitions: the table in `consumer_state.py`. Nothing here
imports asyncio, sockets or a clock: time is the `now_ms` argument.
"""

from __future__ import annotations

import uuid
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

from muster.client.core.commits import OffsetCommits
from muster.client.core.consumer_state import ConsumerState, ConsumerTrigger, next_state
from muster.client.core.coordinator import CoordinatorLookup, checked_topics
from muster.client.core.messages import (
    COORDINATOR_ERRORS,
    COORDINATOR_LOAD_IN_PROGRESS,
    NONE,
    TP,
    UNKNOWN_MEMBER_ID,
    Commit,
    Event,
    Request,
)
from muster.client.errors import CommitFailedError, KafkaError, error_for

CONSUMER_GROUP_HEARTBEAT = 68
FENCED_MEMBER_EPOCH = 110
STALE_MEMBER_EPOCH = 113
LEAVE_EPOCH, STATIC_LEAVE_EPOCH = -1, -2

S, T = ConsumerState, ConsumerTrigger
_IN_GROUP = (S.RECONCILING, S.ACKNOWLEDGING, S.STABLE)  # has an epoch the broker knows
_HEARTBEATING = (S.JOINING, *_IN_GROUP)
IdTP = tuple[Any, int]  # (topic id, partition)


class ConsumerGroupMember(CoordinatorLookup, OffsetCommits):
    protocol_name = "consumer"
    commit_versions = (9, 9)  # OffsetCommit v9: the member epoch and id are checked

    def __init__(
        self,
        group_id: str,
        *,
        server_assignor: str | None = None,
        max_poll_interval_ms: int = 300_000,
        group_instance_id: str | None = None,
        enable_auto_commit: bool = True,
        auto_commit_interval_ms: int = 5_000,
        retry_backoff_ms: int = 100,
        rack: str | None = None,
        member_id: str | None = None,
        now_ms: int = 0,
    ) -> None:
        self.group_id = group_id
        self.server_assignor = server_assignor
        self.max_poll_interval_ms = max_poll_interval_ms
        self.group_instance_id = group_instance_id
        self.enable_auto_commit = enable_auto_commit
        self.auto_commit_interval_ms = auto_commit_interval_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.rack = rack

        self.state = S.UNSUBSCRIBED
        self.member_id = member_id or str(uuid.uuid4())
        self.epoch = 0
        self.heartbeat_interval_ms = 0  # the broker says, in every answer
        self.coordinator: tuple[int, str, int] | None = None
        self.subscription: frozenset[str] = frozenset()
        self.topic_names: dict[Any, str] = {}  # topic id -> name (Metadata)
        self.target: frozenset[IdTP] = frozenset()  # what the broker last assigned
        self.owned: frozenset[IdTP] = frozenset()  # what the application has
        self.assignment: frozenset[TP] = frozenset()  # `owned`, named
        self.partition_counts: dict[str, int] = {}
        self.events: deque[Event] = deque()
        self.rebalances = 0
        self.fatal: KafkaError | None = None

        self._in_flight: set[str] = set()
        self._backoff_until = 0
        self._last_app_poll = now_ms
        self._last_heartbeat_ok = now_ms
        self._next_heartbeat = 0
        self._init_offsets(now_ms)
        self._prepare_commit: Commit | None = None  # auto-commit before a revocation
        self._queued: list[Request] = []
        self._session = 0  # bumped when the member starts over: older answers are stale
        self._callbacks_pending = 0  # reconcile/lost callbacks the driver has not run
        self._sent: dict[str, Any] | None = None  # fields of the last heartbeat (None: all)
        self._reconciled_once = False  # the first assignment always reaches the callbacks
        self._names_answered = False  # a Metadata lookup answered since the target came

    # ------------------------------------------------------------ app inputs

    def subscribe(self, topics: Iterable[str], now_ms: int) -> None:
        topics = checked_topics(topics)
        if topics == self.subscription:
            return
        self.subscription = topics
        if not topics:
            self._queued.extend(self.close(now_ms))
            self.finish_close()
            return
        if self.state is S.UNSUBSCRIBED:
            self._move(T.SUBSCRIBED)
            self._start_joining(now_ms)
        else:
            self._next_heartbeat = now_ms  # the new subscription goes out now

    def update_metadata(self, partition_counts: Mapping[str, int], now_ms: int) -> None:
        """The broker follows topics' metadata itself: nothing to rejoin for."""
        self.partition_counts = dict(partition_counts)

    def app_polled(self, now_ms: int) -> None:
        self._last_app_poll = now_ms
        if self.state is S.STALE and self.subscription:
            self._move(T.REJOIN)
            self._start_joining(now_ms)

    def set_positions(self, positions: Mapping[TP, int]) -> None:
        self.positions = dict(positions)

    def close(self, now_ms: int) -> list[Request]:
        """Revoke everything (a revoke event now) and return the leave
        heartbeat, which the driver sends after the revoke callback ran."""
        if self.state is S.FATAL:
            return []
        was_member = self.state in _IN_GROUP or (self.state is S.FENCED and self.epoch > 0)
        if self.assignment:
            self.events.append(Event("revoke", self.assignment, tag=("close", self._session)))
        self._set_owned(frozenset())
        self._move(T.LEAVE)
        if self.state is not S.PREPARE_LEAVING or not was_member:
            return []
        self._move(T.LEAVE_SENT)
        return [self._leave_request()]

    def finish_close(self) -> None:
        if self.state in (S.PREPARE_LEAVING, S.LEAVING, S.UNSUBSCRIBED):
            self._move(T.LEFT)
        self.subscription = frozenset()
        self._start_over()

    def listener_done(self, event: Event, now_ms: int) -> None:
        """The driver ran `event`'s callback: a reconciliation is acknowledged
        once all of its callbacks ran, a fenced member rejoins after its lost
        callback."""
        tag = event.tag
        if not (isinstance(tag, tuple) and tag[1] == self._session and tag[0] != "close"):
            return
        self._callbacks_pending = max(0, self._callbacks_pending - 1)
        if self._callbacks_pending:
            return
        if self.state is S.RECONCILING:
            self._move(T.RECONCILED)  # the ack heartbeat goes out at once
            self.rebalances += 1
        elif self.state is S.FENCED:
            self._move(T.REJOIN)
            self._start_joining(now_ms)

    # ------------------------------------------------------------ the step

    def poll(self, now_ms: int, join: bool = True) -> tuple[list[Request], int | None]:
        """Requests to send now and when to call again. `join` is accepted for
        the driver's sake: heartbeats go out from the background too, and the
        callbacks wait for the application's poll in the driver anyway."""
        out, self._queued = self._queued, []
        if self.fatal is not None:
            return out, None
        self._check_poll_interval(now_ms, out)
        if self.enable_auto_commit and now_ms >= self._next_auto_commit:
            self._next_auto_commit = now_ms + self.auto_commit_interval_ms
            if self.state in _IN_GROUP or not self.subscription:
                self._queue_auto_commit()
        if self.coordinator is None:
            wanted = self.state in _HEARTBEATING or bool(
                self._commits or self._offset_fetches or self._commit_in_flight
            )
            self._find_step(now_ms, out, wanted)
            return out, self._wake_at(now_ms)
        self._commit_step(now_ms, out)
        if now_ms >= self._backoff_until:
            self._offset_fetch_step(out)
        if self.state is S.STABLE and self._resolved(self.target) != self.owned:
            self._move(T.ASSIGNED)  # topic ids named since, or an answer while reconciling
        if self.state is S.RECONCILING:
            self._reconcile_step(now_ms, out)
        self._heartbeat_step(now_ms, out)
        return out, self._wake_at(now_ms)

    def _wake_at(self, now_ms: int) -> int | None:
        times = []
        if self._backoff_until > now_ms:
            times.append(self._backoff_until)
        if self.state in _HEARTBEATING and self.coordinator is not None:
            ack_now = self.state is S.ACKNOWLEDGING and "heartbeat" not in self._in_flight
            times.append(now_ms if ack_now else self._next_heartbeat)
        if self.enable_auto_commit and (self.assignment or self.positions):
            times.append(self._next_auto_commit)
        if self.state in _HEARTBEATING:
            times.append(self._last_app_poll + self.max_poll_interval_ms)
        return max(now_ms, min(times)) if times else None

    def _check_poll_interval(self, now_ms: int, out: list[Request]) -> None:
        if self.state not in _HEARTBEATING:
            return
        if now_ms - self._last_app_poll <= self.max_poll_interval_ms:
            return
        # The app is stuck: leave so the group moves on (Java: LEAVING then
        # STALE, partitions lost); the next app poll rejoins.
        if self.epoch > 0:
            out.append(self._leave_request())
        self._lose_all()
        self._move(T.POLL_TIMEOUT)
        self._start_over()

    # ------------------------------------------------------------ reconciling

    def _resolved(self, partitions: frozenset[IdTP]) -> frozenset[IdTP]:
        return frozenset(p for p in partitions if p[0] in self.topic_names)

    def _named(self, partitions: Iterable[IdTP]) -> frozenset[TP]:
        return frozenset((self.topic_names[tid], p) for tid, p in partitions)

    def _set_owned(self, owned: frozenset[IdTP]) -> None:
        self.owned = owned
        self.assignment = self._named(owned)

    def _reconcile_step(self, now_ms: int, out: list[Request]) -> None:
        if self._callbacks_pending:
            return  # the previous step's callbacks still run
        self._ask_topic_names(out)
        target = self._resolved(self.target)
        if target != self.target and not self._names_answered:
            return  # one Metadata round trip first, rather than two reconciliations
        if target == self.owned and self._reconciled_once:
            # nothing the application must see (the rest is not named yet):
            # acknowledge without callbacks, as Java's
            self._move(T.RECONCILED)
            return
        revoked, added = self.owned - target, target - self.owned
        if revoked and self.enable_auto_commit:
            # Java's revocation: commit what was consumed, wait for it, then revoke.
            if self._prepare_commit is None:
                self._prepare_commit = self._queue_auto_commit() or Commit(None, {}, True)
                if self._prepare_commit.offsets:
                    self._commits.remove(self._prepare_commit)
                    self._commits.appendleft(self._prepare_commit)
                    self._commit_step(now_ms, out)
            pending = self._prepare_commit
            if pending in self._commits or self._commit_in_flight is pending:
                return
        self._prepare_commit = None
        tag = ("reconcile", self._session)
        if revoked:
            self.events.append(Event("revoke", self._named(revoked), tag=tag))
        self.events.append(Event("assign", self._named(added), tag=tag))
        self._callbacks_pending = 2 if revoked else 1
        self._reconciled_once = True
        self._set_owned(target)

    def _ask_topic_names(self, out: list[Request]) -> None:
        """Name the target's topic ids the member does not know (Metadata):
        the driver answers {topic id: name}."""
        if self._resolved(self.target) != self.target and "ids" not in self._in_flight:
            self._in_flight.add("ids")
            out.append(Request("ids", -1, {"topics": sorted(self.subscription)}, "metadata"))

    def _lose_all(self) -> None:
        if self.assignment:
            self.events.append(Event("lost", self.assignment, tag=("lost", self._session + 1)))
        self._set_owned(frozenset())

    def _fence(self, now_ms: int) -> None:
        """FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID: the partitions are gone;
        rejoin with epoch 0 once the lost callback ran."""
        had = bool(self.assignment)
        self._lose_all()
        self._move(T.FENCED)
        self._start_over()
        if had:
            self._callbacks_pending = 1
        else:
            self._move(T.REJOIN)
            self._start_joining(now_ms)

    def _start_over(self) -> None:
        self._session += 1
        self.epoch = 0
        self.target = frozenset()
        self._sent = None
        self._reconciled_once = False
        self._callbacks_pending = 0
        self._prepare_commit = None
        self._in_flight.discard("heartbeat")

    def _start_joining(self, now_ms: int) -> None:
        self._sent = None
        self._next_heartbeat = now_ms

    # ------------------------------------------------------------ heartbeats

    def _heartbeat_step(self, now_ms: int, out: list[Request]) -> None:
        if self.state not in _HEARTBEATING or "heartbeat" in self._in_flight:
            return
        if now_ms < self._backoff_until:
            return
        if self.state is not S.ACKNOWLEDGING and now_ms < self._next_heartbeat:
            return
        self._ask_topic_names(out)  # e.g. a topic created after the last lookup
        body = self._heartbeat_body()
        self._in_flight.add("heartbeat")
        self._next_heartbeat = now_ms + max(self.heartbeat_interval_ms, self.retry_backoff_ms)
        if self.state is S.ACKNOWLEDGING:
            self._move(T.ACK_SENT)
        out.append(
            Request(
                "heartbeat", CONSUMER_GROUP_HEARTBEAT, body, "coordinator", ("hb", self._session)
            )
        )

    def _heartbeat_body(self) -> dict[str, Any]:
        """Every field when joining or after an error; otherwise only what
        changed since the last heartbeat (null: unchanged), as Java's."""
        full = self._sent is None or self.state is S.JOINING
        sent = {} if full else dict(self._sent or {})
        fields = {
            "rebalance_timeout": self.max_poll_interval_ms,
            "subscribed_topic_names": tuple(sorted(self.subscription)),
            "server_assignor": self.server_assignor,
            "topic_partitions": self._owned_by_topic(),
        }
        body: dict[str, Any] = {
            "group_id": self.group_id,
            "member_id": self.member_id,
            "member_epoch": self.epoch,
            "instance_id": self.group_instance_id,
            "rack_id": self.rack if full else None,
            "rebalance_timeout": -1,
            "subscribed_topic_names": None,
            "subscribed_topic_regex": None,
            "server_assignor": None,
            "topic_partitions": None,
        }
        for name, value in fields.items():
            if full or sent.get(name) != value:
                body[name] = value
                sent[name] = value
        self._sent = sent
        return body

    def _owned_by_topic(self) -> tuple[dict[str, Any], ...]:
        by_topic: dict[Any, list[int]] = {}
        for tid, p in sorted(self.owned, key=lambda x: (str(x[0]), x[1])):
            by_topic.setdefault(tid, []).append(p)
        return tuple({"topic_id": t, "partitions": ps} for t, ps in by_topic.items())

    def _leave_request(self) -> Request:
        epoch = LEAVE_EPOCH if self.group_instance_id is None else STATIC_LEAVE_EPOCH
        body = {
            "group_id": self.group_id,
            "member_id": self.member_id,
            "member_epoch": epoch,
            "instance_id": self.group_instance_id,
            "rack_id": None,
            "rebalance_timeout": -1,
            "subscribed_topic_names": None,
            "subscribed_topic_regex": None,
            "server_assignor": None,
            "topic_partitions": None,
        }
        return Request("leave", CONSUMER_GROUP_HEARTBEAT, body, "coordinator")

    # ------------------------------------------------------------ responses

    def on_response(self, request: Request, response: Any, now_ms: int) -> None:
        getattr(self, f"_on_{request.kind}")(request, response, now_ms)

    def on_failure(self, request: Request, error: KafkaError, now_ms: int) -> None:
        """The request never got an answer (connection lost, timeout)."""
        self._backoff_until = now_ms + self.retry_backoff_ms
        kind = request.kind
        if kind in ("find", "ids", "leave"):
            self._in_flight.discard(kind)
            self._names_answered = self._names_answered or kind == "ids"
            return
        self._coordinator_dead()
        if kind == "commit":
            self._commit_in_flight = None
            self._commits.appendleft(request.tag)
        elif kind == "offset_fetch":
            self._in_flight.discard("offset_fetch")
            self._offset_fetches.appendleft(request.tag)
        elif kind == "heartbeat" and request.tag == ("hb", self._session):
            self._in_flight.discard("heartbeat")
            self._sent = None  # the broker may not have seen it: everything again
            if not error.retriable:  # e.g. a broker without ConsumerGroupHeartbeat
                self._fail(error)

    def _on_ids(self, request: Request, ids: Mapping[Any, str], now_ms: int) -> None:
        self._in_flight.discard("ids")
        self._names_answered = True
        self.topic_names.update(ids)
        if self._resolved(self.target) != self.target:
            self._backoff_until = now_ms + self.retry_backoff_ms  # not created yet: ask again

    def _on_leave(self, request: Request, response: Any, now_ms: int) -> None:
        pass  # best effort, as Java's: the member is gone either way

    def _on_heartbeat(self, request: Request, response: Any, now_ms: int) -> None:
        if request.tag != ("hb", self._session):
            return  # sent before the member started over
        self._in_flight.discard("heartbeat")
        code = int(response.error_code)
        if code == NONE:
            self._last_heartbeat_ok = now_ms
            if response.member_id:
                self.member_id = str(response.member_id)
            self.epoch = int(response.member_epoch)
            interval = response.heartbeat_interval
            if not isinstance(interval, int):  # kio decodes it as a timedelta
                interval = int(interval.total_seconds() * 1000)
            self.heartbeat_interval_ms = interval
            self._next_heartbeat = now_ms + interval
            if response.assignment is not None:
                self._new_target(response.assignment.topic_partitions)
            return
        self._sent = None
        if code in (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID):
            self._fence(now_ms)
        elif code in COORDINATOR_ERRORS:
            self._next_heartbeat = now_ms  # as soon as the coordinator is known again
            if code == COORDINATOR_LOAD_IN_PROGRESS:
                self._backoff_until = now_ms + self.retry_backoff_ms
            else:
                self._coordinator_dead()
        else:
            self._fail(error_for(code, response.error_message or "ConsumerGroupHeartbeat"))

    def _new_target(self, topic_partitions: Iterable[Any]) -> None:
        target = frozenset((tp.topic_id, int(p)) for tp in topic_partitions for p in tp.partitions)
        first = self.state is S.JOINING
        if not first and target == self.target:
            return
        self.target = target
        self._names_answered = False
        if self.state is not S.RECONCILING:
            self._move(T.ASSIGNED)

    def _coordinator_dead(self) -> None:
        self.coordinator = None
        self._sent = None  # a new coordinator hears every field

    def _fail(self, error: KafkaError) -> None:
        self.fatal = error
        self._move(T.FATAL)
        self.events.append(Event("fatal", error=error))
        self._fail_pending()

    def _move(self, trigger: ConsumerTrigger) -> None:
        self.state = next_state(self.state, trigger)

    # ------------------------------------------------------------ offsets (epoch-bound)

    def _commit_gate(self, commit: Commit) -> str:
        if not commit.generation_bound or commit is self._prepare_commit:
            return "send"
        if self.epoch > 0 and self.state in (*_IN_GROUP, S.PREPARE_LEAVING, S.LEAVING):
            return "send"
        return "wait" if self.state in (S.JOINING, S.FENCED) else "fail"

    def _commit_identity(self, commit: Commit) -> tuple[int, str]:
        return (self.epoch, self.member_id) if commit.generation_bound else (-1, "")

    def _commit_rejected(self, commit: Commit, bad: set[int], now_ms: int) -> None:
        code = min(bad)
        if STALE_MEMBER_EPOCH in bad and self.state in _IN_GROUP and commit.attempts < 10:
            # Our epoch is behind the broker's (a heartbeat answer is on its
            # way): retry with the epoch the member has by then.
            self._backoff_until = now_ms + self.retry_backoff_ms
            self._commits.appendleft(commit)
            return
        if bad & {STALE_MEMBER_EPOCH, FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID}:
            text = error_for(code).message
            self._commit_failed(commit, CommitFailedError(text, code=code))
            return
        self._commit_failed(commit, error_for(code, "OffsetCommit"))

    def _offset_fetch_step(self, out: list[Request]) -> None:
        if self.subscription and (self.state not in _IN_GROUP or self.epoch <= 0):
            return  # the fetch names the member: wait for an epoch
        super()._offset_fetch_step(out)

    def _offset_fetch_request(self, topics: dict[str, list[int]], tag: Any) -> Request:
        bound = bool(self.subscription)
        group = {
            "group_id": self.group_id,
            "member_id": self.member_id if bound else None,
            "member_epoch": self.epoch if bound else -1,
            "topics": [{"name": t, "partition_indexes": ps} for t, ps in topics.items()],
        }
        return Request(
            "offset_fetch",
            9,
            {"groups": [group], "require_stable": True},
            "coordinator",
            tag,
            versions=(9, 9),
        )

    def _offset_fetch_answer(self, response: Any) -> Any:
        return response.groups[0]

    def _on_offset_fetch(self, request: Request, response: Any, now_ms: int) -> None:
        code = int(response.groups[0].error_code)
        if code in (STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID) and self.state in _HEARTBEATING:
            # our epoch moved under the fetch: ask again with the new one
            self._in_flight.discard("offset_fetch")
            self._offset_fetches.appendleft(request.tag)
            self._backoff_until = now_ms + self.retry_backoff_ms
            return
        super()._on_offset_fetch(request, response, now_ms)


__all__ = ["ConsumerGroupMember"]
