"""Fetch: whole stored batches, long-polled without busy-waiting.

read_committed (isolation_level 1) reads only below the last stable offset
(LSO: the high watermark, or the first offset of the oldest ongoing
transaction if lower) and gets the aborted transactions overlapping what it
read, so the client can drop their records; read_uncommitted reads up to the
high watermark. Both are told the LSO.
"""

from __future__ import annotations

import asyncio
import struct
import time
from typing import Any

from kio.schema.errors import ErrorCode

from muster.log.port import PartitionLog
from muster.security.acl import Operation
from muster.server import authz
from muster.server.clock import now_ms
from muster.server.fetch_sessions import FINAL_EPOCH, FetchPlan, plan_fetch
from muster.server.handlers.common import Slices
from muster.server.state import BrokerState, RequestContext

READ_COMMITTED = 1
_BATCH_LENGTH = struct.Struct(">i")  # at byte 8 of a batch
_BASE_AND_DELTA = struct.Struct(">q15xi")  # base offset, last offset delta (byte 23)


def last_stable_offset(plog: PartitionLog, high_watermark: int) -> int:
    unstable = plog.first_unstable_offset(high_watermark)
    return high_watermark if unstable is None or unstable > high_watermark else unstable


def _end_offset(data: bytes) -> int:
    """The offset after the last batch of a read (which holds whole batches)."""
    pos = last = 0
    n = len(data)
    unpack = _BATCH_LENGTH.unpack_from
    while pos + 12 <= n:
        last = pos
        pos += 12 + unpack(data, pos + 8)[0]
    base, delta = _BASE_AND_DELTA.unpack_from(data, last)
    return int(base + delta + 1)


_NOT_HOSTED = (ErrorCode.unknown_topic_or_partition, ErrorCode.unknown_topic_id)


def _error_entry(index: int, error: ErrorCode) -> dict[str, Any]:
    return {
        "partition_index": index,
        "error_code": error,
        "high_watermark": -1,
        "last_stable_offset": -1,
        "log_start_offset": -1,
        # as Kafka 4.4: an empty list for a partition it does not host
        "aborted_transactions": [] if error in _NOT_HOSTED else None,
        "preferred_read_replica": -1,
        "records": b"",
    }


def _read_partition(
    state: BrokerState, name: str, p: Any, budget: int, min_one: bool, committed: bool
) -> tuple[dict[str, Any], int, tuple[str, int] | None]:
    """(response entry, bytes returned, key to watch for new data or None)."""
    index = p.partition
    entry = _error_entry(index, ErrorCode.none)
    plog = state.logs.get(name, index) if name else None
    if plog is None:
        return _error_entry(index, ErrorCode.unknown_topic_or_partition), 0, None
    visible = state.durability.visible_end(plog)
    stable = last_stable_offset(plog, visible)
    start = plog.log_start_offset
    entry.update(high_watermark=visible, last_stable_offset=stable, log_start_offset=start)
    offset = p.fetch_offset
    if offset < start or offset > plog.log_end_offset:
        # Kafka 4.4 answers the error alone: no offsets, an empty aborted list
        out_of_range = _error_entry(index, ErrorCode.offset_out_of_range)
        return out_of_range, 0, None
    if committed:
        entry["aborted_transactions"] = []  # Kafka: a list, empty or not, for read_committed
    upper = stable if committed else visible
    if offset >= upper or budget <= 0:
        return entry, 0, (name, index)
    limit = min(p.partition_max_bytes, budget)
    data = plog.read(offset, limit, upper=upper)
    if len(data) > limit and not min_one:
        # KIP-74: only the first partition with data may exceed the limits
        # (by one batch); a later one waits for the next fetch.
        data = b""
    entry["records"] = data
    if committed and data:
        # read_committed is librdkafka's default, and most partitions have no
        # aborted transactions: the batch headers are walked only when some
        # overlap what the client may read
        aborted = plog.aborted_transactions(offset, upper)
        if aborted:
            end = _end_offset(data)
            entry["aborted_transactions"] = [
                {"producer_id": pid, "first_offset": first} for pid, first in aborted if first < end
            ]
    return entry, len(data), (name, index)


def _unchanged(state: BrokerState, name: str, cached: Any, committed: bool) -> bool:
    """For a session partition (a CachedPartition): True when a read would return
    no records and no news (what CachedPartition.must_answer would say False to),
    so the answer leaves it out."""
    plog = state.logs.get(name, cached.partition)
    if plog is None:
        return False
    visible = state.durability.visible_end(plog)
    start = plog.log_start_offset
    if visible != cached.high_watermark or start != cached.log_start_offset:
        return False
    offset = cached.fetch_offset
    if offset < start or offset > plog.log_end_offset:
        return False  # an error to answer
    return offset >= (last_stable_offset(plog, visible) if committed else visible)


async def _collect(
    state: BrokerState,
    req: Any,
    by_id: bool,
    plan: FetchPlan,
    denied: set[str],
    slices: Slices,
) -> tuple[list[dict[str, Any]], int, bool, list[tuple[str, int]]]:
    ids = state.logs.names_by_id() if by_id else {}
    responses: list[dict[str, Any]] = []
    total = 0
    errors = False
    watch: list[tuple[str, int]] = []
    budget = req.max_bytes if req.max_bytes > 0 else 2**31 - 1
    committed = req.isolation_level == READ_COMMITTED
    session = plan.session
    moved: list[Any] = []  # session partitions that returned data go last next time
    parts: list[dict[str, Any]] = []
    last_topic: Any = object()
    for topic, p in plan.reads:
        if slices.due():
            await asyncio.sleep(0)
        name = ids.get(topic, "") if by_id else topic
        if by_id and not name:
            entry, size, key = _error_entry(p.partition, ErrorCode.unknown_topic_id), 0, None
        elif name in denied:
            error = ErrorCode.topic_authorization_failed
            entry, size, key = _error_entry(p.partition, error), 0, None
        elif plan.incremental and _unchanged(state, name, p, committed):
            # nothing to read and nothing the session's client was not told:
            # no entry is built (an idle poll of 10,000 partitions stays cheap)
            watch.append((name, p.partition))
            continue
        else:
            # KIP-74: the first non-empty partition may exceed max_bytes by one batch.
            entry, size, key = _read_partition(
                state,
                name,
                p,
                budget if total else max(budget, 1),
                min_one=total == 0,
                committed=committed,
            )
        total += size
        budget -= size
        errors |= entry["error_code"] != ErrorCode.none
        if key is not None:
            watch.append(key)
        if session is not None:
            cached = session.partitions.get((topic, p.partition))
            news = cached.must_answer(entry) if cached is not None else True
            if size and cached is not None:
                moved.append((topic, p.partition))
            if plan.incremental and not news:
                continue
        if topic != last_topic:
            parts = []
            topic_entry: dict[str, Any] = {"partitions": parts}
            topic_entry["topic_id" if by_id else "topic"] = topic if by_id else name
            responses.append(topic_entry)
            last_topic = topic
        parts.append(entry)
    if session is not None:
        for key in moved:
            session.partitions.move_to_end(key)
    return responses, total, errors, watch


def _requested(req: Any, by_id: bool) -> list[tuple[Any, Any]]:
    return [
        (topic.topic_id if by_id else topic.topic, p)
        for topic in req.topics
        for p in topic.partitions
    ]


def _forgotten(req: Any, by_id: bool) -> list[tuple[Any, int]]:
    return [
        (topic.topic_id if by_id else topic.topic, index)
        for topic in getattr(req, "forgotten_topics_data", None) or ()
        for index in topic.partitions
    ]


def _plan(state: BrokerState, req: Any, by_id: bool) -> FetchPlan:
    requested = _requested(req, by_id)
    epoch = getattr(req, "session_epoch", FINAL_EPOCH)  # Fetch < v7 has no sessions
    return plan_fetch(
        state.fetch_sessions,
        getattr(req, "session_id", 0),
        epoch,
        by_id,
        requested,
        _forgotten(req, by_id),
        now_ms(),
    )


def _denied(ctx: RequestContext, req: Any, by_id: bool, plan: FetchPlan) -> set[str]:
    """Topics this consumer may not Read (a follower would need ClusterAction);
    a session's reads count, not only the partitions this request names."""
    if not authz.enabled(ctx):
        return set()
    ids = ctx.state.logs.names_by_id() if by_id else {}
    names = {ids.get(topic, "") if by_id else topic for topic, _p in plan.reads}
    if getattr(req, "replica_id", -1) >= 0 and not authz.cluster(ctx, Operation.CLUSTER_ACTION):
        return names
    return authz.denied_topics(ctx, Operation.READ, (n for n in names if n))


async def handle_fetch(ctx: RequestContext, req: Any) -> dict[str, Any]:
    state = ctx.state
    by_id = ctx.api_version >= 13
    plan = _plan(state, req, by_id)
    if plan.error != ErrorCode.none:
        return {"throttle_time": 0, "error_code": plan.error, "session_id": 0, "responses": []}
    max_wait_s = max(0.0, req.max_wait.total_seconds())
    deadline = time.monotonic() + max_wait_s
    min_bytes = max(1, req.min_bytes)
    denied = _denied(ctx, req, by_id, plan)
    while True:
        slices = Slices(ctx)
        responses, total, errors, watch = await _collect(state, req, by_id, plan, denied, slices)
        remaining = deadline - time.monotonic()
        if total >= min_bytes or errors or remaining <= 0 or not watch:
            break
        event = asyncio.Event()
        state.notifier.subscribe(watch, event)
        try:
            await asyncio.wait_for(event.wait(), remaining)
        except TimeoutError:
            pass
        finally:
            state.notifier.unsubscribe(watch, event)
    return {
        "throttle_time": 0,
        "error_code": ErrorCode.none,
        "session_id": plan.session.id if plan.session is not None else 0,
        "responses": responses,
    }
