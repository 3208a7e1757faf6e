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
The states and their transitions are the table in `member_state.py`; the
offsets a member commits and fetches are `commits.py`; heartbeats, the
poll-interval check and leaving are `liveness.py`; the requests and
events it exchanges with its driver are `messages.py`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

from muster.assignors.registry import (
    ASSIGNORS,
    RebalanceProtocol,
    perform_assignment,
    subscription_for,
)
from muster.client.core.commits import OffsetCommits
from muster.client.core.coordinator import CoordinatorLookup, checked_topics
from muster.client.core.liveness import Liveness
from muster.client.core.member_state import MemberState, Trigger, next_state
from muster.client.core.messages import (
    COORDINATOR_ERRORS,
    ILLEGAL_GENERATION,
    JOIN_GROUP,
    MEMBER_ID_REQUIRED,
    NONE,
    REBALANCE_IN_PROGRESS,
    SYNC_GROUP,
    TP,
    UNKNOWN_MEMBER_ID,
    Commit,
    Event,
    Request,
)
from muster.client.errors import (
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


class GroupMembership(CoordinatorLookup, OffsetCommits, Liveness):
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
        self._init_offsets(now_ms)
        self._prepared = False  # onJoinPrepare done for the pending rejoin
        self._prepare_commit: Commit | None = None
        self._join_snapshot: dict[str, int] = {}
        self._join_members: list[Any] = []
        self._previous: frozenset[TP] | None = None
        self._prepare_commit_tried = False
        self._queued: list[Request] = []

    # ------------------------------------------------------------ app inputs

    def subscribe(self, topics: Iterable[str], now_ms: int) -> None:
        topics = checked_topics(topics)
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

    def listener_done(self, event: Event, now_ms: int) -> None:
        """The driver ran the callback of `event` (the classic member needs
        nothing: its JoinGroup waits for callbacks in the driver)."""

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
            self._find_step(now_ms, out, wants_coordinator)
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

    def _move(self, trigger: Trigger) -> None:
        self.state = next_state(self.state, trigger)

    def _send_join(self, now_ms: int, out: list[Request]) -> None:
        self._move(Trigger.JOIN_SENT)
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
            self._move(Trigger.JOINED)
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
            self._move(Trigger.MEMBER_ID_GIVEN)
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
        self._move(Trigger.SYNCED)
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

    # ------------------------------------------------------------ transitions

    def _coordinator_dead(self) -> None:
        self.coordinator = None
        self._in_flight.discard("heartbeat")

    def _restart_join(self) -> None:
        """Back to sending JoinGroup (keeping the member id)."""
        if self.state in (MemberState.REBALANCING, MemberState.COMPLETING_REBALANCE):
            self._move(Trigger.RESTART_JOIN)
            self._prepared = True

    def _reset_generation(self, keep_member_id: bool) -> None:
        self._move(Trigger.RESET)
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


__all__ = ["Event", "GroupMembership", "MemberState", "Request"]
