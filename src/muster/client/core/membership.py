"""The classic-protocol consumer group member as a pure state machine.

Mirrors Kafka's ConsumerCoordinator/AbstractCoordinator (spec §11): find
the coordinator through any broker, JoinGroup (retrying at once with the id
a MEMBER_ID_REQUIRED answer hands out), the leader runs the selected assignor
over every member's subscription (after asking the driver for the partition
counts of all their topics) and sends SyncGroup with the result, followers
send it empty; then heartbeats every `heartbeat.interval.ms`, auto-commits
every `auto.commit.interval.ms` and before a revocation, and leaves the
group when the application has not polled within `max.poll.interval.ms`.

Inputs: the app calls (`subscribe`, `commit`, `fetch_committed`,
`app_polled`, `update_metadata`, `close`) and the driver feeds back
`on_response(request, response, now)` / `on_failure(request, error, now)`.
Outputs: `poll(now) -> (requests, wake_at)` and `events` (a deque the driver
drains; callbacks run in order, before the requests of the same poll go
out, so a revoke callback runs before the JoinGroup that follows it).

Nothing here imports asyncio, sockets or a clock: time is the `now` argument.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from muster.assignors import ASSIGNORS, RebalanceProtocol, perform_assignment, subscription_for
from muster.client.errors import (
    CommitFailedError,
    KafkaError,
    error_for,
)
from muster.protocol.consumer_protocol import (
    PROTOCOL_TYPE,
    ConsumerProtocolError,
    decode_assignment,
    decode_subscription,
    encode_subscription,
)

TP = tuple[str, int]

FIND_COORDINATOR = 10
JOIN_GROUP = 11
HEARTBEAT = 12
LEAVE_GROUP = 13
SYNC_GROUP = 14
OFFSET_COMMIT = 8
OFFSET_FETCH = 9

# Kafka error codes the machine branches on.
NONE = 0
OFFSET_METADATA_TOO_LARGE = 12
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
ILLEGAL_GENERATION = 22
UNKNOWN_MEMBER_ID = 25
REBALANCE_IN_PROGRESS = 27
MEMBER_ID_REQUIRED = 79
FENCED_INSTANCE_ID = 82
COORDINATOR_ERRORS = frozenset(
    {COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR}
)
LOST_ERRORS = frozenset({ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID})


class MemberState(enum.Enum):
    UNJOINED = "UNJOINED"
    REBALANCING = "REBALANCING"  # JoinGroup sent / preparing to send it
    COMPLETING_REBALANCE = "COMPLETING_REBALANCE"  # SyncGroup sent
    STABLE = "STABLE"


@dataclass(frozen=True)
class Request:
    """A request for the driver to send. `to` is "any" (the least-loaded
    broker), "coordinator", "node" (broker `node`), "metadata" (not a Kafka
    request: the driver refreshes metadata for body["topics"] and answers
    with {topic: partition_count}) or "group" (the fetcher asking the
    membership for committed offsets of `tag`)."""

    kind: str
    api_key: int
    body: dict[str, Any]
    to: str
    tag: Any = None
    node: int = -1  # the broker, when to == "node"


@dataclass(frozen=True)
class Event:
    """Something for the driver: `revoke`/`assign`/`lost` (partitions),
    `commit` (tag, offsets, error), `committed` (tag, offsets, error),
    `fatal` (error)."""

    kind: str
    partitions: frozenset[TP] = frozenset()
    tag: Any = None
    offsets: Mapping[TP, int] = field(default_factory=dict)
    error: KafkaError | None = None


@dataclass
class _Commit:
    tag: Any
    offsets: dict[TP, int]
    generation_bound: bool  # fails (not retried) if the generation moves on
    attempts: int = 0


class GroupMembership:
    def __init__(
        self,
        group_id: str,
        *,
        assignors: Iterable[str] = ("range",),
        session_timeout_ms: int = 45_000,
        max_poll_interval_ms: int = 300_000,
        heartbeat_interval_ms: int = 3_000,
        group_instance_id: str | None = None,
        enable_auto_commit: bool = True,
        auto_commit_interval_ms: int = 5_000,
        retry_backoff_ms: int = 100,
        rack: str | None = None,
        now_ms: int = 0,
    ) -> None:
        self.group_id = group_id
        self.assignors = [ASSIGNORS[name] for name in assignors]
        if not self.assignors:
            raise ValueError("at least one assignor is required")
        self.cooperative = all(
            RebalanceProtocol.COOPERATIVE in a.supported_protocols for a in self.assignors
        )
        self.session_timeout_ms = session_timeout_ms
        self.max_poll_interval_ms = max_poll_interval_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.group_instance_id = group_instance_id
        self.enable_auto_commit = enable_auto_commit
        self.auto_commit_interval_ms = auto_commit_interval_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.rack = rack

        self.state = MemberState.UNJOINED
        self.member_id = ""
        self.generation = -1
        self.protocol: str | None = None
        self.leader_id = ""
        self.coordinator: tuple[int, str, int] | None = None
        self.subscription: frozenset[str] = frozenset()
        self.assignment: frozenset[TP] = frozenset()
        self.partition_counts: dict[str, int] = {}
        self.positions: dict[TP, int] = {}
        self.events: deque[Event] = deque()
        self.rejoin_cause: str | None = None
        self.rebalances = 0
        self.fatal: KafkaError | None = None

        self._in_flight: set[str] = set()
        self._backoff_until = 0
        self._last_app_poll = now_ms
        self._left_for_poll_timeout = False
        self._next_heartbeat = 0
        self._last_heartbeat_ok = now_ms
        self._next_auto_commit = now_ms + auto_commit_interval_ms
        self._last_committed: dict[TP, int] = {}
        self._commits: deque[_Commit] = deque()
        self._commit_in_flight: _Commit | None = None
        self._offset_fetches: deque[tuple[Any, frozenset[TP]]] = deque()
        self._prepared = False  # onJoinPrepare done for the pending rejoin
        self._prepare_commit: _Commit | None = None
        self._join_snapshot: dict[str, int] = {}
        self._join_members: list[Any] = []
        self._previous: frozenset[TP] | None = None
        self._prepare_commit_tried = False
        self._queued: list[Request] = []

    # ------------------------------------------------------------ app inputs

    def subscribe(self, topics: Iterable[str], now_ms: int) -> None:
        topics = frozenset(topics)
        for t in topics:
            if not t or not t.strip():
                raise ValueError("topic names must be non-empty")
        if topics == self.subscription:
            return
        self.subscription = topics
        if not topics:
            self._revoke_all("unsubscribe")
            self._queued.extend(self._leave_requests(now_ms, "unsubscribe"))
            return
        self.request_rejoin("subscription changed")

    def request_rejoin(self, cause: str) -> None:
        if self.rejoin_cause is None:
            self.rejoin_cause = cause
        self._prepared = self._prepared and self.state is not MemberState.STABLE

    def update_metadata(self, partition_counts: Mapping[str, int], now_ms: int) -> None:
        """Latest partition counts for (at least) the subscribed topics."""
        self.partition_counts = dict(partition_counts)
        if self.state is MemberState.STABLE:
            current = {t: n for t, n in self.partition_counts.items() if t in self.subscription}
            if current != self._join_snapshot:
                self.request_rejoin("metadata changed")

    def app_polled(self, now_ms: int) -> None:
        self._last_app_poll = now_ms
        if self._left_for_poll_timeout:
            self._left_for_poll_timeout = False
            if self.assignment:
                self._lose_all()
            self.request_rejoin("poll after max.poll.interval.ms expired")

    def set_positions(self, positions: Mapping[TP, int]) -> None:
        """Consumed positions (for auto-commit)."""
        self.positions = dict(positions)

    def commit(self, offsets: Mapping[TP, int], tag: Any = None) -> None:
        """Queue a commit; an Event("commit", tag=tag) reports the result."""
        self._commits.append(_Commit(tag, dict(offsets), bool(self.subscription)))
        if self.fatal is not None:
            self._fail_pending()

    def fetch_committed(self, partitions: Iterable[TP], tag: Any = None) -> None:
        self._offset_fetches.append((tag, frozenset(partitions)))
        if self.fatal is not None:
            self._fail_pending()

    def close(self, now_ms: int) -> list[Request]:
        """Leave the group (Java's onLeavePrepare): a revoke event now, and
        LeaveGroup for dynamic members (static members just go quiet). The
        generation stays valid until `finish_close`, so the revoke callback
        can still commit."""
        self._revoke_all("close")
        return self._leave_requests(now_ms, "the consumer is being closed", reset=False)

    def finish_close(self) -> None:
        self._reset_generation(keep_member_id=self.group_instance_id is not None)
        self.subscription = frozenset()

    @property
    def rebalance_protocol(self) -> RebalanceProtocol:
        return RebalanceProtocol.COOPERATIVE if self.cooperative else RebalanceProtocol.EAGER

    # ------------------------------------------------------------ the step

    def poll(self, now_ms: int, join: bool = True) -> tuple[list[Request], int | None]:
        """Requests to send now and when to call again. With join=False (the
        background heartbeat task) the member does not (re)join: as in
        Java, joining and its callbacks happen only inside the app's poll."""
        out = self.take_queued()
        if self.fatal is not None:
            return out, None
        self._check_poll_interval(now_ms, out)
        manual = not self.subscription  # assign(): commits carry no generation
        if (
            self.enable_auto_commit
            and (self.state is MemberState.STABLE or manual)
            and now_ms >= self._next_auto_commit
        ):
            self._next_auto_commit = now_ms + self.auto_commit_interval_ms
            self._queue_auto_commit()
        wants_coordinator = bool(
            self.subscription or self._commits or self._offset_fetches or self._commit_in_flight
        )
        if self.coordinator is None:
            if (
                wants_coordinator
                and "find" not in self._in_flight
                and now_ms >= self._backoff_until
            ):
                self._in_flight.add("find")
                out.append(
                    Request(
                        "find",
                        FIND_COORDINATOR,
                        {"key": self.group_id, "key_type": 0, "coordinator_keys": [self.group_id]},
                        "any",
                    )
                )
            return out, self._wake_at(now_ms)
        self._commit_step(now_ms, out)
        self._offset_fetch_step(out)
        if self.subscription and not self._left_for_poll_timeout:
            if join:
                self._join_step(now_ms, out)
            self._heartbeat_step(now_ms, out)
        return out, self._wake_at(now_ms)

    def _wake_at(self, now_ms: int) -> int | None:
        times = []
        if self._backoff_until > now_ms:
            times.append(self._backoff_until)
        if self.state is MemberState.STABLE:
            times.append(self._next_heartbeat)
        if self.enable_auto_commit and (self.state is MemberState.STABLE or self.positions):
            times.append(self._next_auto_commit)
        if self.state is not MemberState.UNJOINED and not self._left_for_poll_timeout:
            times.append(self._last_app_poll + self.max_poll_interval_ms)
        return min(times) if times else None

    def _check_poll_interval(self, now_ms: int, out: list[Request]) -> None:
        if self.state is MemberState.UNJOINED or self._left_for_poll_timeout:
            return
        if now_ms - self._last_app_poll <= self.max_poll_interval_ms:
            return
        # The app is stuck: leave so the group can move on (Java's
        # maybeLeaveGroup("consumer poll timeout has expired")).
        out.extend(self._leave_requests(now_ms, "consumer poll timeout has expired"))
        self._left_for_poll_timeout = True

    def _commit_step(self, now_ms: int, out: list[Request]) -> None:
        if self._commit_in_flight is not None or not self._commits:
            return
        if now_ms < self._backoff_until:
            return
        commit = self._commits[0]
        if (
            commit.generation_bound
            and self.state is not MemberState.STABLE
            and commit is not self._prepare_commit
        ):
            if self.state is MemberState.UNJOINED:
                self._commits.popleft()
                self._commit_failed(
                    commit, CommitFailedError("not a member of the group (no generation)")
                )
            return  # otherwise wait for the rebalance to finish
        self._commits.popleft()
        self._commit_in_flight = commit
        commit.attempts += 1
        generation, member_id = (
            (self.generation, self.member_id) if commit.generation_bound else (-1, "")
        )
        topics: dict[str, list[dict[str, Any]]] = {}
        for (topic, partition), offset in sorted(commit.offsets.items()):
            topics.setdefault(topic, []).append(
                {
                    "partition_index": partition,
                    "committed_offset": offset,
                    "committed_leader_epoch": -1,
                    "committed_metadata": "",
                }
            )
        out.append(
            Request(
                "commit",
                OFFSET_COMMIT,
                {
                    "group_id": self.group_id,
                    "generation_id_or_member_epoch": generation,
                    "generation_id": generation,
                    "member_id": member_id,
                    "group_instance_id": self.group_instance_id
                    if commit.generation_bound
                    else None,
                    "retention_time_ms": -1,
                    "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
                },
                "coordinator",
                commit,
            )
        )

    def _queue_auto_commit(self) -> _Commit | None:
        manual = not self.subscription
        offsets = {tp: off for tp, off in self.positions.items() if manual or tp in self.assignment}
        offsets = {tp: off for tp, off in offsets.items() if self._last_committed.get(tp) != off}
        if not offsets:
            return None
        commit = _Commit("auto", offsets, not manual)
        self._commits.append(commit)
        return commit

    def _offset_fetch_step(self, out: list[Request]) -> None:
        if "offset_fetch" in self._in_flight or not self._offset_fetches:
            return
        tag, tps = self._offset_fetches.popleft()
        topics: dict[str, list[int]] = {}
        for topic, partition in sorted(tps):
            topics.setdefault(topic, []).append(partition)
        self._in_flight.add("offset_fetch")
        out.append(
            Request(
                "offset_fetch",
                OFFSET_FETCH,
                {
                    "group_id": self.group_id,
                    "topics": [{"name": t, "partition_indexes": ps} for t, ps in topics.items()],
                    "require_stable": True,
                },
                "coordinator",
                (tag, tps),
            )
        )

    def _join_step(self, now_ms: int, out: list[Request]) -> None:
        needs_join = self.state is MemberState.UNJOINED or (
            self.state is MemberState.STABLE and self.rejoin_cause is not None
        )
        if not needs_join or now_ms < self._backoff_until:
            return
        if not self._prepared:
            # onJoinPrepare: commit (auto-commit) and wait for it, then revoke (eager).
            if (
                self._prepare_commit is None
                and not self._prepare_commit_tried
                and self.enable_auto_commit
                and self.assignment
                and self.generation >= 0
            ):
                self._prepare_commit_tried = True
                self._prepare_commit = self._queue_auto_commit()
                if self._prepare_commit is not None:
                    self._commits.remove(self._prepare_commit)
                    self._commits.appendleft(self._prepare_commit)
            pending = self._prepare_commit
            if pending is not None and (
                pending in self._commits or self._commit_in_flight is pending
            ):
                self._commit_step(now_ms, out)
                return
            self._prepare_commit = None
            self._prepare_commit_tried = False
            if not self.cooperative and self.assignment:
                self._previous = self.assignment
                self.events.append(Event("revoke", self.assignment))
                self.assignment = frozenset()
            self._prepared = True
        if "join" in self._in_flight:
            return
        self._send_join(now_ms, out)

    def _send_join(self, now_ms: int, out: list[Request]) -> None:
        self.state = MemberState.REBALANCING
        self._join_snapshot = {
            t: n for t, n in self.partition_counts.items() if t in self.subscription
        }
        owned = self.assignment if self.cooperative else frozenset()
        previous = self.assignment if self.cooperative else self._previous
        protocols = []
        for a in self.assignors:
            sub = subscription_for(
                a.name, self.subscription, owned, self.generation, self.rack, previous
            )
            protocols.append({"name": a.name, "metadata": encode_subscription(sub)})
        self._in_flight.add("join")
        out.append(
            Request(
                "join",
                JOIN_GROUP,
                {
                    "group_id": self.group_id,
                    "session_timeout": self.session_timeout_ms,
                    "rebalance_timeout": self.max_poll_interval_ms,
                    "member_id": self.member_id,
                    "group_instance_id": self.group_instance_id,
                    "protocol_type": PROTOCOL_TYPE,
                    "protocols": protocols,
                    "reason": self.rejoin_cause,
                },
                "coordinator",
            )
        )
        self.rejoin_cause = None

    def _heartbeat_step(self, now_ms: int, out: list[Request]) -> None:
        if self.state is not MemberState.STABLE:
            return
        if now_ms - self._last_heartbeat_ok > self.session_timeout_ms:
            # No answer for a whole session: the coordinator is gone for us.
            self._coordinator_dead()
            return
        if "heartbeat" in self._in_flight or now_ms < self._next_heartbeat:
            return
        self._in_flight.add("heartbeat")
        self._next_heartbeat = now_ms + self.heartbeat_interval_ms
        out.append(
            Request(
                "heartbeat",
                HEARTBEAT,
                {
                    "group_id": self.group_id,
                    "generation_id": self.generation,
                    "member_id": self.member_id,
                    "group_instance_id": self.group_instance_id,
                },
                "coordinator",
                self.generation,
            )
        )

    def _leave_requests(self, now_ms: int, reason: str, reset: bool = True) -> list[Request]:
        out = []
        dynamic = self.group_instance_id is None
        if dynamic and self.member_id and self.coordinator is not None:
            out.append(
                Request(
                    "leave",
                    LEAVE_GROUP,
                    {
                        "group_id": self.group_id,
                        "member_id": self.member_id,
                        "members": [
                            {
                                "member_id": self.member_id,
                                "group_instance_id": None,
                                "reason": reason,
                            }
                        ],
                    },
                    "coordinator",
                )
            )
        if reset:
            self._reset_generation(keep_member_id=not dynamic)
        return out

    # ------------------------------------------------------------ responses

    def on_response(self, request: Request, response: Any, now_ms: int) -> None:
        handler = getattr(self, f"_on_{request.kind}")
        handler(request, response, now_ms)

    def on_failure(self, request: Request, error: KafkaError, now_ms: int) -> None:
        """The request never got an answer (connection lost, timeout)."""
        self._backoff_until = now_ms + self.retry_backoff_ms
        kind = request.kind
        if kind == "find":
            self._in_flight.discard("find")
            return
        if kind == "metadata":
            self._in_flight.discard("metadata")
            self._restart_join()
            return
        self._coordinator_dead()
        if kind == "commit":
            commit = request.tag
            self._commit_in_flight = None
            self._commits.appendleft(commit)
        elif kind == "offset_fetch":
            self._in_flight.discard("offset_fetch")
            self._offset_fetches.appendleft(request.tag)
        elif kind in ("join", "sync"):
            self._in_flight.discard(kind)
            self._restart_join()
        elif kind == "heartbeat":
            self._in_flight.discard("heartbeat")

    def _on_find(self, request: Request, response: Any, now_ms: int) -> None:
        self._in_flight.discard("find")
        coordinators = getattr(response, "coordinators", None)
        entry = coordinators[0] if coordinators else response
        code = int(entry.error_code)
        if code != NONE:
            error = error_for(code, getattr(entry, "error_message", None))
            if error.retriable:
                self._backoff_until = now_ms + self.retry_backoff_ms
                return
            self._fail(error)
            return
        self.coordinator = (int(entry.node_id), str(entry.host), int(entry.port))
        self._last_heartbeat_ok = now_ms

    def _on_join(self, request: Request, response: Any, now_ms: int) -> None:
        self._in_flight.discard("join")
        if self.state is not MemberState.REBALANCING:
            return  # we left or reset meanwhile
        code = int(response.error_code)
        if code == NONE:
            self.member_id = str(response.member_id)
            self.generation = int(response.generation_id)
            self.protocol = response.protocol_name
            self.leader_id = str(response.leader)
            self.state = MemberState.COMPLETING_REBALANCE
            if self.leader_id == self.member_id and not getattr(response, "skip_assignment", False):
                self._join_members = list(response.members)
                topics = set(self.subscription)
                for m in self._join_members:
                    try:
                        topics |= set(decode_subscription(m.metadata).topics)
                    except ConsumerProtocolError:
                        continue
                self._in_flight.add("metadata")
                self._queued.append(Request("metadata", -1, {"topics": sorted(topics)}, "metadata"))
            else:
                self._send_sync({})
            return
        if code == MEMBER_ID_REQUIRED:
            self.member_id = str(response.member_id)
            self.state = MemberState.UNJOINED
            self._prepared = True
            return
        if code == UNKNOWN_MEMBER_ID:
            self.member_id = ""
            self._restart_join()
            return
        if code in (ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS):
            self._restart_join()
            return
        if code in COORDINATOR_ERRORS:
            self._coordinator_dead()
            self._restart_join()
            self._backoff_until = now_ms + self.retry_backoff_ms
            return
        self._fail(error_for(code, "JoinGroup"))

    def take_queued(self) -> list[Request]:
        """Requests produced while handling a response (the leader's metadata
        lookup and SyncGroup); the driver sends them right away."""
        out, self._queued = self._queued, []
        return out

    def _on_metadata(self, request: Request, counts: Mapping[str, int], now_ms: int) -> None:
        self._in_flight.discard("metadata")
        if self.state is not MemberState.COMPLETING_REBALANCE:
            return
        name = self.protocol or self.assignors[0].name
        members = {
            m.member_id: (bytes(m.metadata), m.group_instance_id) for m in self._join_members
        }
        try:
            assignments = perform_assignment(name, members, dict(counts))
        except (ConsumerProtocolError, ValueError, KeyError) as exc:
            self._fail(KafkaError(f"assignor {name} failed: {exc}"))
            return
        self._send_sync(assignments)

    def _send_sync(self, assignments: Mapping[str, bytes]) -> None:
        self._in_flight.add("sync")
        self._queued.append(
            Request(
                "sync",
                SYNC_GROUP,
                {
                    "group_id": self.group_id,
                    "generation_id": self.generation,
                    "member_id": self.member_id,
                    "group_instance_id": self.group_instance_id,
                    "protocol_type": PROTOCOL_TYPE,
                    "protocol_name": self.protocol,
                    "assignments": [
                        {"member_id": m, "assignment": a} for m, a in sorted(assignments.items())
                    ],
                },
                "coordinator",
                self.generation,
            )
        )

    def _on_sync(self, request: Request, response: Any, now_ms: int) -> None:
        self._in_flight.discard("sync")
        if self.state is not MemberState.COMPLETING_REBALANCE or request.tag != self.generation:
            return
        code = int(response.error_code)
        if code == NONE:
            try:
                new = decode_assignment(bytes(response.assignment)).partition_set()
            except ConsumerProtocolError as exc:
                self._fail(KafkaError(f"undecodable assignment: {exc}"))
                return
            self._install(new, now_ms)
            return
        if code == REBALANCE_IN_PROGRESS:
            self._restart_join()
            return
        if code in (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION):
            self._lose_all()
            self._reset_generation(keep_member_id=code != UNKNOWN_MEMBER_ID)
            return
        if code in COORDINATOR_ERRORS:
            self._coordinator_dead()
            self._restart_join()
            return
        self._fail(error_for(code, "SyncGroup"))

    def _install(self, new: frozenset[TP], now_ms: int) -> None:
        old = self.assignment
        self.state = MemberState.STABLE
        self.rebalances += 1
        self._prepared = False
        self._last_heartbeat_ok = now_ms
        self._next_heartbeat = now_ms + self.heartbeat_interval_ms
        self._next_auto_commit = now_ms + self.auto_commit_interval_ms
        if self.cooperative:
            revoked = old - new
            added = new - old
            if revoked:
                self.events.append(Event("revoke", frozenset(revoked)))
                self.request_rejoin("cooperative revocation")
            self.assignment = new
            self.events.append(Event("assign", frozenset(added)))
        else:
            self.assignment = new
            self.events.append(Event("assign", new))
        current = {t: n for t, n in self.partition_counts.items() if t in self.subscription}
        if current != self._join_snapshot:
            self.request_rejoin("metadata changed during the rebalance")

    def _on_heartbeat(self, request: Request, response: Any, now_ms: int) -> None:
        self._in_flight.discard("heartbeat")
        if request.tag != self.generation or self.state is not MemberState.STABLE:
            return
        code = int(response.error_code)
        if code == NONE:
            self._last_heartbeat_ok = now_ms
            return
        if code == REBALANCE_IN_PROGRESS:
            self._last_heartbeat_ok = now_ms
            self.request_rejoin("the group is rebalancing")
            return
        if code in (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION):
            self._lose_all()
            self._reset_generation(keep_member_id=code != UNKNOWN_MEMBER_ID)
            return
        if code in COORDINATOR_ERRORS:
            self._coordinator_dead()
            return
        self._fail(error_for(code, "Heartbeat"))

    def _on_leave(self, request: Request, response: Any, now_ms: int) -> None:
        pass  # best effort, as Java's: the member is gone either way

    def _on_commit(self, request: Request, response: Any, now_ms: int) -> None:
        commit: _Commit = request.tag
        self._commit_in_flight = None
        codes = {
            (t.name, int(p.partition_index)): int(p.error_code)
            for t in response.topics
            for p in t.partitions
        }
        bad = {c for c in codes.values() if c != NONE}
        if not bad:
            self._last_committed.update(commit.offsets)
            self.events.append(Event("commit", tag=commit.tag, offsets=commit.offsets))
            return
        code = min(bad)
        if bad & COORDINATOR_ERRORS:
            self._coordinator_dead()
            self._commits.appendleft(commit)
            return
        if code == REBALANCE_IN_PROGRESS:
            self.request_rejoin("commit during a rebalance")
            self._commit_failed(commit, CommitFailedError("REBALANCE_IN_PROGRESS", code=code))
            return
        if bad & {UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION}:
            self._lose_all()
            self._reset_generation(keep_member_id=UNKNOWN_MEMBER_ID not in bad)
            self._commit_failed(commit, CommitFailedError(error_for(code).message, code=code))
            return
        self._commit_failed(commit, error_for(code, "OffsetCommit"))

    def _commit_failed(self, commit: _Commit, error: KafkaError) -> None:
        self.events.append(Event("commit", tag=commit.tag, offsets=commit.offsets, error=error))

    def _on_offset_fetch(self, request: Request, response: Any, now_ms: int) -> None:
        self._in_flight.discard("offset_fetch")
        tag, tps = request.tag
        top = int(getattr(response, "error_code", 0))
        if top in COORDINATOR_ERRORS:
            self._coordinator_dead()
            self._offset_fetches.appendleft((tag, tps))
            return
        offsets: dict[TP, int] = {}
        error: KafkaError | None = error_for(top, "OffsetFetch") if top else None
        for t in response.topics:
            for p in t.partitions:
                code = int(p.error_code)
                if code in COORDINATOR_ERRORS:
                    self._coordinator_dead()
                    self._offset_fetches.appendleft((tag, tps))
                    return
                if code != NONE:
                    error = error_for(code, "OffsetFetch")
                    continue
                offsets[(t.name, int(p.partition_index))] = int(p.committed_offset)
        self.events.append(Event("committed", tag=tag, offsets=offsets, error=error))

    # ------------------------------------------------------------ transitions

    def _coordinator_dead(self) -> None:
        self.coordinator = None
        self._in_flight.discard("heartbeat")

    def _restart_join(self) -> None:
        """Back to sending JoinGroup (keeping the member id)."""
        if self.state in (MemberState.REBALANCING, MemberState.COMPLETING_REBALANCE):
            self.state = MemberState.UNJOINED
            self._prepared = True

    def _reset_generation(self, keep_member_id: bool) -> None:
        self.state = MemberState.UNJOINED
        self.generation = -1
        self.protocol = None
        self._prepared = False
        if not keep_member_id:
            self.member_id = ""
        self._in_flight -= {"join", "sync", "heartbeat", "metadata"}

    def _revoke_all(self, cause: str) -> None:
        if self.assignment:
            self.events.append(Event("revoke", self.assignment))
            self.assignment = frozenset()

    def _lose_all(self) -> None:
        if self.assignment:
            self.events.append(Event("lost", self.assignment))
            self._previous = None
            self.assignment = frozenset()

    def _fail(self, error: KafkaError) -> None:
        self.fatal = error
        self.events.append(Event("fatal", error=error))
        self._fail_pending()

    def _fail_pending(self) -> None:
        """After a fatal error nothing more is sent: answer what waits."""
        assert self.fatal is not None
        commits = list(self._commits)
        if self._commit_in_flight is not None:
            commits.append(self._commit_in_flight)
        self._commits.clear()
        self._commit_in_flight = None
        for commit in commits:
            self._commit_failed(commit, self.fatal)
        fetches, self._offset_fetches = list(self._offset_fetches), deque()
        for tag, _tps in fetches:
            self.events.append(Event("committed", tag=tag, error=self.fatal))
