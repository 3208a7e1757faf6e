"""The offsets a consumer group member commits and fetches (Kafka's
ConsumerCoordinator commit path): queued commits, one in flight at a time,
auto-commit, retries, and OffsetFetch for the fetcher. A mixin of
`GroupMembership`, whose state it reads."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

from muster.client.core.member_state import MemberState
from muster.client.core.messages import (
    COORDINATOR_ERRORS,
    ILLEGAL_GENERATION,
    NONE,
    OFFSET_COMMIT,
    OFFSET_FETCH,
    REBALANCE_IN_PROGRESS,
    TP,
    UNKNOWN_MEMBER_ID,
    Commit,
    Event,
    Request,
)
from muster.client.errors import CommitFailedError, KafkaError, error_for


class OffsetCommits:
    def _init_offsets(self, now_ms: int) -> None:
        """The member's commit and offset-fetch state (both protocols)."""
        self.positions: dict[TP, int] = {}
        self._next_auto_commit = now_ms + self.auto_commit_interval_ms
        self._last_committed: dict[TP, int] = {}
        self._commits: deque[Commit] = deque()
        self._commit_in_flight: Commit | None = None
        self._offset_fetches: deque[tuple[Any, frozenset[TP]]] = deque()

    def commit(self, offsets: Mapping[TP, int], tag: Any = None) -> None:
        """Queue a commit; an Event("commit", tag=tag) reports the result."""
        self._commits.append(Commit(tag, dict(offsets), bool(self.subscription)))
        if self.fatal is not None:
            self._fail_pending()

    def fetch_committed(self, partitions: Iterable[TP], tag: Any = None) -> None:
        self._offset_fetches.append((tag, frozenset(partitions)))
        if self.fatal is not None:
            self._fail_pending()

    def _commit_step(self, now_ms: int, out: list[Request]) -> None:
        if self._commit_in_flight is not None or not self._commits:
            return
        if now_ms < self._backoff_until:
            return
        commit = self._commits[0]
        gate = self._commit_gate(commit)
        if gate != "send":
            if gate == "fail":
                self._commits.popleft()
                self._commit_failed(
                    commit, CommitFailedError("not a member of the group (no generation)")
                )
            return  # otherwise wait for the rebalance to finish
        self._commits.popleft()
        self._commit_in_flight = commit
        commit.attempts += 1
        generation, member_id = self._commit_identity(commit)
        commit.epoch = generation
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
                versions=self.commit_versions,
            )
        )

    # The classic protocol's rules; the consumer protocol's member overrides them.
    commit_versions: tuple[int, int] | None = None  # OffsetCommit versions (None: any)

    def _commit_gate(self, commit: Commit) -> str:
        """ "send" the commit now, "wait" (a rebalance is under way) or "fail"."""
        if (
            not commit.generation_bound
            or self.state is MemberState.STABLE
            or commit is self._prepare_commit
        ):
            return "send"
        return "fail" if self.state is MemberState.UNJOINED else "wait"

    def _commit_identity(self, commit: Commit) -> tuple[int, str]:
        """(generation id or member epoch, member id) the commit carries."""
        return (self.generation, self.member_id) if commit.generation_bound else (-1, "")

    def _queue_auto_commit(self) -> Commit | None:
        manual = not self.subscription
        offsets = {tp: off for tp, off in self.positions.items() if manual or tp in self.assignment}
        offsets = {tp: off for tp, off in offsets.items() if self._last_committed.get(tp) != off}
        if not offsets:
            return None
        commit = Commit("auto", offsets, not manual)
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
        out.append(self._offset_fetch_request(topics, (tag, tps)))

    def _offset_fetch_request(self, topics: dict[str, list[int]], tag: Any) -> Request:
        return Request(
            "offset_fetch",
            OFFSET_FETCH,
            {
                "group_id": self.group_id,
                "topics": [{"name": t, "partition_indexes": ps} for t, ps in topics.items()],
                "require_stable": True,
            },
            "coordinator",
            tag,
        )

    def _offset_fetch_answer(self, response: Any) -> Any:
        """The part of an OffsetFetch answer with error_code and topics."""
        return response

    def _on_commit(self, request: Request, response: Any, now_ms: int) -> None:
        commit: Commit = request.tag
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
        if bad & COORDINATOR_ERRORS:
            self._coordinator_dead()
            self._commits.appendleft(commit)
            return
        self._commit_rejected(commit, bad, now_ms)

    def _commit_rejected(self, commit: Commit, bad: set[int], now_ms: int) -> None:
        code = min(bad)
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

    def _commit_failed(self, commit: Commit, error: KafkaError) -> None:
        self.events.append(Event("commit", tag=commit.tag, offsets=commit.offsets, error=error))

    def _on_offset_fetch(self, request: Request, response: Any, now_ms: int) -> None:
        self._in_flight.discard("offset_fetch")
        tag, tps = request.tag
        response = self._offset_fetch_answer(response)
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
