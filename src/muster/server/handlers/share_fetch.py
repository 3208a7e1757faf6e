"""ShareFetch (78) v1-2 and ShareAcknowledge (79) v1-2, KIP-932: share
sessions, acknowledgements, and handing records out under locks from the
share partitions (`muster.share.partition`, state in `server/share_state`).

A fetch first applies the acknowledgements it carries, then acquires up to
MaxRecords records over the session's partitions and returns the batches
holding them with their AcquiredRecords ranges; with nothing to hand out it
waits (MaxWaitMs) for new data. A partition with nothing carries empty,
non-null records (librdkafka fails on null)."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

from kio.schema.errors import ErrorCode

from muster.records.v2 import iter_batches
from muster.security.acl import Operation
from muster.server import authz
from muster.server.handlers.fetch import last_stable_offset
from muster.server.security import advertised_endpoint
from muster.server.share_state import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    ShareSession,
    ShareState,
    next_epoch,
)
from muster.server.state import RequestContext
from muster.share.partition import Batch

COMMITTED = "read_committed"


def _batches(data: bytes, aborted: list[tuple[int, int]]) -> list[tuple[Batch, int]]:
    """(batch offsets, end byte) of each whole batch in `data`. Under
    read_committed, `aborted` lists (producer id, first offset) of aborted
    transactions: their batches, up to the producer's marker, are gaps like
    the markers themselves (Kafka's SharePartition archives them)."""
    starts: dict[int, list[int]] = {}
    for pid, first in aborted:
        starts.setdefault(pid, []).append(first)
    open_aborts: set[int] = set()
    out = []
    for h in iter_batches(data):
        pid = h.producer_id
        if h.is_control:
            open_aborts.discard(pid)  # the marker ends the producer's transaction
            gap = True
        else:
            if h.is_transactional and any(f <= h.base_offset for f in starts.get(pid, ())):
                open_aborts.add(pid)
                starts[pid] = [f for f in starts[pid] if f > h.base_offset]
            gap = h.is_transactional and pid in open_aborts
        out.append((Batch(h.base_offset, h.last_offset, gap), h.end))
    return out


def _share(ctx: RequestContext) -> ShareState:
    share = ctx.state.services.share
    assert share is not None, "the share APIs are served only with muster.share.enable"
    return share


def _leader(ctx: RequestContext) -> dict[str, int]:
    return {"leader_id": ctx.state.node_id, "leader_epoch": 0}


def _endpoints(ctx: RequestContext) -> list[dict[str, Any]]:
    host, port = advertised_endpoint(ctx.state, ctx.listener)
    return [{"node_id": ctx.state.node_id, "host": host, "port": port, "rack": None}]


def _session(
    share: ShareState, group: str, member: str, epoch: int, connection: object
) -> tuple[ShareSession | None, int]:
    """The request's share session (made at epoch 0, unless the broker holds
    `group.share.max.share.sessions` already) and an error code."""
    key = (group, member)
    current = share.sessions.get(key)
    if epoch == INITIAL_EPOCH:
        if current is not None:
            share.close_session(current)
        elif len(share.sessions) >= share.max_sessions:
            return None, int(ErrorCode.share_session_limit_reached)
        session = share.sessions[key] = ShareSession(group, member, connection=connection)
        return session, 0
    if current is None:
        return None, int(ErrorCode.share_session_not_found)
    if epoch != FINAL_EPOCH and epoch != current.epoch:
        return None, int(ErrorCode.invalid_share_session_epoch)
    return current, 0


def _acknowledge(
    ctx: RequestContext, share: ShareState, session: ShareSession, topics: Any, now: int
) -> dict[tuple[uuid.UUID, int], int]:
    """Apply acknowledgement batches: (topic id, partition) -> error code."""
    names = ctx.state.logs.names_by_id()
    out: dict[tuple[uuid.UUID, int], int] = {}
    for t in topics:
        for p in t.partitions:
            if not p.acknowledgement_batches:
                continue
            key = (t.topic_id, int(p.partition_index))
            name = names.get(t.topic_id)
            sp = share.existing(session.group_id, key)
            if name is None:
                out[key] = int(ErrorCode.unknown_topic_id)
                continue
            if sp is None:
                out[key] = int(ErrorCode.invalid_record_state)
                continue
            error = 0
            for b in p.acknowledgement_batches:
                types = tuple(int(x) for x in b.acknowledge_types)
                code = sp.acknowledge(
                    session.member_id, int(b.first_offset), int(b.last_offset), types, now
                )
                error = error or code
            out[key] = error
    return out


def _first_since(plog: Any) -> Any:
    """`by_duration:`'s look-up: the first offset with a timestamp >= ts."""

    def first(ts: int) -> int | None:
        found = plog.offset_for_timestamp(ts)
        return None if found is None else int(found[0])

    return first


def _not_written(acks: dict[tuple[uuid.UUID, int], int]) -> dict[tuple[uuid.UUID, int], int]:
    """The acknowledgements could not be written: not done, as far as the
    client can tell (the share partition starts again from what was written)."""
    return {k: code or int(ErrorCode.coordinator_not_available) for k, code in acks.items()}


def _now_ms() -> int:
    return int(time.time() * 1000)


def _acquire(
    ctx: RequestContext, share: ShareState, session: ShareSession, max_records: int, max_bytes: int
) -> tuple[dict[tuple[uuid.UUID, int], dict[str, Any]], int, list[tuple[str, int]]]:
    """One pass over the session's partitions: their entries, records acquired, keys to watch."""
    state = ctx.state
    names = state.logs.names_by_id()
    now = _now_ms()
    entries: dict[tuple[uuid.UUID, int], dict[str, Any]] = {}
    taken = 0
    watch: list[tuple[str, int]] = []
    for tp in sorted(session.partitions):
        entry = {"records": b"", "acquired_records": [], "error_code": 0}
        entries[tp] = entry
        name = names.get(tp[0])
        plog = state.logs.get(name, tp[1]) if name else None
        if plog is None:
            entry["error_code"] = int(ErrorCode.unknown_topic_or_partition)
            continue
        if not authz.topic(ctx, Operation.READ, name):
            entry["error_code"] = int(ErrorCode.topic_authorization_failed)
            continue
        watch.append((name, tp[1]))
        visible = state.durability.visible_end(plog)
        committed = share.group_config(session.group_id, "share.isolation.level") == COMMITTED
        # read_committed hands out nothing past the last stable offset
        upper = last_stable_offset(plog, visible) if committed else visible
        # Kafka initialises a group's share partitions off the fetch path and
        # answers with the first that has records; the others' records come
        # in the next answers (librdkafka 0179 counts on it: one partition's
        # records per answer while a new group starts). Made now, a share
        # partition waits for the next fetch when this one has records already.
        fresh = share.existing(session.group_id, tp) is None
        sp = share.partition(
            session.group_id, tp, plog.log_start_offset, visible, _first_since(plog)
        )
        sp.expire(now)
        if taken >= max_records or max_bytes <= 0 or (fresh and taken):
            continue
        start = sp.first_available()
        if start is None or start >= upper:
            continue
        data = plog.read(start, max_bytes, upper=upper)
        batches = _batches(data, plog.aborted_transactions(start, upper) if committed else [])
        runs = sp.acquire(
            session.member_id, (b for b, _ in batches), start, max_records - taken, now
        )
        if not runs:
            continue
        last = runs[-1][1]
        cut = next(end for b, end in batches if b.last >= last)
        entry["records"] = data[:cut]
        max_bytes -= cut
        entry["acquired_records"] = [
            {"first_offset": f, "last_offset": la, "delivery_count": c} for f, la, c in runs
        ]
        taken += sum(la - f + 1 for f, la, _ in runs)
    return entries, taken, watch


def _begin(
    ctx: RequestContext, req: Any, initial_error: int | None
) -> tuple[dict[str, Any], ShareSession | None]:
    """What ShareFetch and ShareAcknowledge check first: the group's ACL, the
    session epoch (`initial_error`: the answer to epoch 0, None if allowed)
    and the session. Returns the answer so far and the session (None: the
    answer is an error)."""
    share = _share(ctx)
    out: dict[str, Any] = {
        "throttle_time": 0,
        "error_code": 0,
        "error_message": None,
        "acquisition_lock_timeout": 0,
        "responses": [],
        "node_endpoints": [],
    }
    group, member = req.group_id or "", req.member_id or ""
    if not authz.group(ctx, Operation.READ, group):
        return {**out, "error_code": ErrorCode.group_authorization_failed}, None
    epoch = int(req.share_session_epoch)
    if epoch == INITIAL_EPOCH and initial_error is not None:
        return {**out, "error_code": initial_error}, None
    session, error = _session(share, group, member, epoch, ctx.session)
    if session is None:
        return {**out, "error_code": error}, None
    out["acquisition_lock_timeout"] = share.lock_duration(group)
    return out, session


async def handle_share_fetch(ctx: RequestContext, req: Any) -> dict[str, Any]:
    share = _share(ctx)
    has_acks = any(p.acknowledgement_batches for t in req.topics for p in t.partitions)
    # acknowledgements on a session's first fetch are refused
    out, session = _begin(ctx, req, int(ErrorCode.invalid_request) if has_acks else None)
    if session is None:
        return out
    epoch = int(req.share_session_epoch)
    acks = _acknowledge(ctx, share, session, req.topics, _now_ms())
    if epoch == FINAL_EPOCH:
        share.close_session(session)
    # acknowledgements are answered once written (Kafka persists them first)
    if not await share.persist():
        acks = _not_written(acks)
    if epoch == FINAL_EPOCH:
        return {**out, "responses": _responses(ctx, {}, acks)}
    for t in req.topics:
        for p in t.partitions:
            session.partitions.add((t.topic_id, int(p.partition_index)))
    for t in req.forgotten_topics_data:
        for index in t.partitions:
            session.partitions.discard((t.topic_id, int(index)))
    session.epoch = next_epoch(epoch)
    renew = bool(getattr(req, "is_renew_ack", False))
    max_records = 0 if renew else max(1, int(req.max_records))
    deadline = time.monotonic() + max(0.0, req.max_wait.total_seconds())
    while True:
        entries, taken, watch = _acquire(ctx, share, session, max_records, int(req.max_bytes))
        remaining = deadline - time.monotonic()
        if taken or renew or remaining <= 0 or not watch or acks:
            break
        event = asyncio.Event()
        ctx.state.notifier.subscribe(watch, event)
        try:
            # a lock may expire meanwhile: look again within a second
            await asyncio.wait_for(event.wait(), min(remaining, 1.0))
        except TimeoutError:
            pass
        finally:
            ctx.state.notifier.unsubscribe(watch, event)
    # a share partition made now (its SPSO) and locks expired meanwhile
    await share.persist()
    out["responses"] = _responses(ctx, entries, acks)
    if any(e["acquired_records"] for e in entries.values()):
        out["node_endpoints"] = _endpoints(ctx)
    return out


def _responses(
    ctx: RequestContext,
    entries: dict[tuple[uuid.UUID, int], dict[str, Any]],
    acks: dict[tuple[uuid.UUID, int], int],
) -> list[dict[str, Any]]:
    by_topic: dict[uuid.UUID, list[dict[str, Any]]] = {}
    for key in sorted(set(entries) | set(acks)):
        entry = entries.get(key, {"records": b"", "acquired_records": [], "error_code": 0})
        by_topic.setdefault(key[0], []).append(
            {
                "partition_index": key[1],
                "error_code": entry["error_code"],
                "error_message": None,
                "acknowledge_error_code": acks.get(key, 0),
                "acknowledge_error_message": None,
                "current_leader": _leader(ctx),
                "records": entry["records"],
                "acquired_records": entry["acquired_records"],
            }
        )
    return [{"topic_id": t, "partitions": ps} for t, ps in by_topic.items()]


async def handle_share_acknowledge(ctx: RequestContext, req: Any) -> dict[str, Any]:
    share = _share(ctx)
    # a session opens only with a fetch
    out, session = _begin(ctx, req, int(ErrorCode.invalid_share_session_epoch))
    if session is None:
        return out
    epoch = int(req.share_session_epoch)
    acks = _acknowledge(ctx, share, session, req.topics, _now_ms())
    if epoch == FINAL_EPOCH:
        share.close_session(session)
    else:
        session.epoch = next_epoch(epoch)
    if not await share.persist():
        acks = _not_written(acks)
    out["responses"] = [
        {
            "topic_id": t,
            "partitions": [
                {
                    "partition_index": i,
                    "error_code": code,
                    "error_message": None,
                    "current_leader": _leader(ctx),
                }
                for (t2, i), code in sorted(acks.items())
                if t2 == t
            ],
        }
        for t in dict.fromkeys(t for t, _ in sorted(acks))
    ]
    return out
