"""Incremental fetch sessions (KIP-227), as Kafka's FetchManager keeps them.

A consumer that fetches many partitions sends the whole list once (epoch 0)
and gets a session id; afterwards each request names only the partitions whose
fetch position changed (and those to forget), and each answer carries only the
partitions with something new: records, an error, or a moved high watermark
or log start. So an idle poll of 10,000 partitions is a few bytes each way.

Kafka's rules kept here: the session's epoch must match the request's
(INVALID_FETCH_SESSION_EPOCH), an unknown id gets FETCH_SESSION_ID_NOT_FOUND,
a session created with topic ids (v13+) cannot be used without them
(FETCH_SESSION_TOPIC_ID_ERROR), epoch -1 closes a session, a session left
with no partitions is closed, a partition that returned data moves to the end
so the next answer starts elsewhere, and the cache holds at most
`max.incremental.fetch.session.cache.slots` sessions: a new one evicts one
unused for two minutes, or one at least that old that is not larger.
"""

from __future__ import annotations

import random
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from kio.schema.errors import ErrorCode

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
EVICTION_MS = 120_000  # Kafka's FetchSessionCache eviction age, not configurable there

TopicKey = Any  # the topic's name (Fetch < v13) or its id (v13+)
PartitionKey = tuple[TopicKey, int]


def next_epoch(epoch: int) -> int:
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == 2**31 - 1 else epoch + 1


@dataclass(slots=True)
class CachedPartition:
    """What the client asked of one partition, and what it was last told."""

    partition: int
    fetch_offset: int
    partition_max_bytes: int
    high_watermark: int = -1
    log_start_offset: int = -1

    def must_answer(self, entry: dict[str, Any]) -> bool:
        """Kafka's maybeUpdateResponseData: is there news, and remember it."""
        news = bool(entry["records"])
        if entry["error_code"] != ErrorCode.none:
            self.high_watermark = -1
            return True
        if self.high_watermark != entry["high_watermark"]:
            self.high_watermark = entry["high_watermark"]
            news = True
        if self.log_start_offset != entry["log_start_offset"]:
            self.log_start_offset = entry["log_start_offset"]
            news = True
        return news


@dataclass(slots=True)
class FetchSession:
    id: int
    uses_topic_ids: bool
    created_ms: int
    last_used_ms: int
    epoch: int = 1
    # insertion order is fetch order; a partition that returned data moves last
    partitions: OrderedDict[PartitionKey, CachedPartition] = field(default_factory=OrderedDict)

    def update(self, requested: list[tuple[TopicKey, Any]], forgotten: list[PartitionKey]) -> None:
        for topic, p in requested:
            key = (topic, p.partition)
            cached = self.partitions.get(key)
            if cached is None:
                self.partitions[key] = CachedPartition(
                    p.partition, p.fetch_offset, p.partition_max_bytes
                )
            else:
                cached.fetch_offset = p.fetch_offset
                cached.partition_max_bytes = p.partition_max_bytes
        for key in forgotten:
            self.partitions.pop(key, None)


class FetchSessionCache:
    def __init__(self, max_sessions: int, rng: random.Random | None = None) -> None:
        self.max_sessions = max_sessions
        self._sessions: dict[int, FetchSession] = {}
        self._rng = rng or random.Random()

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, session_id: int) -> FetchSession | None:
        return self._sessions.get(session_id)

    def remove(self, session_id: int) -> None:
        self._sessions.pop(session_id, None)

    def create(self, uses_topic_ids: bool, size: int, now_ms: int) -> FetchSession | None:
        """A new session, or None when the cache is full and nothing may be evicted."""
        if len(self._sessions) >= self.max_sessions and not self._evict_for(size, now_ms):
            return None
        session_id = INVALID_SESSION_ID
        while session_id == INVALID_SESSION_ID or session_id in self._sessions:
            session_id = self._rng.randint(1, 2**31 - 1)
        session = FetchSession(session_id, uses_topic_ids, now_ms, now_ms)
        self._sessions[session_id] = session
        return session

    def _evict_for(self, size: int, now_ms: int) -> bool:
        if not self._sessions:
            return False
        stalest = min(self._sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now_ms - stalest.last_used_ms > EVICTION_MS:
            del self._sessions[stalest.id]
            return True
        # Kafka: only sessions older than the eviction age are evictable, the
        # smallest first, and only by a session at least as large
        old = [s for s in self._sessions.values() if now_ms - s.created_ms > EVICTION_MS]
        if not old:
            return False
        smallest = min(old, key=lambda s: (len(s.partitions), s.id))
        if size < len(smallest.partitions):
            return False
        del self._sessions[smallest.id]
        return True


@dataclass(slots=True)
class FetchPlan:
    """What one Fetch request reads, and how its answer is cut."""

    error: ErrorCode = ErrorCode.none
    session: FetchSession | None = None  # set: answer with this session's id
    incremental: bool = False  # answer only the partitions with news
    # (topic key, partition request or CachedPartition) in fetch order
    reads: list[tuple[TopicKey, Any]] = field(default_factory=list)


def plan_fetch(
    cache: FetchSessionCache,
    session_id: int,
    epoch: int,
    by_id: bool,
    requested: list[tuple[TopicKey, Any]],
    forgotten: list[PartitionKey],
    now_ms: int,
) -> FetchPlan:
    """Kafka's FetchManager.newContext: full, sessionless, incremental or an error."""
    if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
        if session_id != INVALID_SESSION_ID:
            cache.remove(session_id)
        plan = FetchPlan(reads=requested)
        if epoch == INITIAL_EPOCH:
            plan.session = cache.create(by_id, len(requested), now_ms)
            if plan.session is not None:
                plan.session.update(requested, [])
        return plan
    session = cache.get(session_id)
    if session is None:
        return FetchPlan(error=ErrorCode.fetch_session_id_not_found)
    if session.epoch != epoch:
        return FetchPlan(error=ErrorCode.invalid_fetch_session_epoch)
    if session.uses_topic_ids != by_id:
        return FetchPlan(error=ErrorCode.fetch_session_topic_id_error)
    session.update(requested, forgotten)
    if not session.partitions:
        cache.remove(session.id)
        return FetchPlan(reads=requested)
    session.last_used_ms = now_ms
    session.epoch = next_epoch(session.epoch)
    reads = [(topic, cached) for (topic, _), cached in session.partitions.items()]
    return FetchPlan(session=session, incremental=True, reads=reads)
