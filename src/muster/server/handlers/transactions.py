"""AddPartitionsToTxn, AddOffsetsToTxn, EndTxn and TxnOffsetCommit: wire
entities <-> the transaction coordinator and the group coordinator."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from muster.coordinator import requests as rq
from muster.security.acl import Operation
from muster.server import authz
from muster.server.group_runtime.runtime import CoordinatorLoading
from muster.server.handlers.groups import _coordinator
from muster.server.state import RequestContext
from muster.server.transactions import TransactionCoordinator
from muster.transactions.core import (
    INVALID_PRODUCER_EPOCH,
    PRODUCER_FENCED,
    check_producer,
)
from muster.transactions.core import INVALID_PRODUCER_ID_MAPPING as ID_MAPPING

LOADING = int(ErrorCode.coordinator_load_in_progress)
TXN_DENIED = int(ErrorCode.transactional_id_authorization_failed)
GROUP_DENIED = int(ErrorCode.group_authorization_failed)
TOPIC_DENIED = int(ErrorCode.topic_authorization_failed)
NOT_ATTEMPTED = int(ErrorCode.operation_not_attempted)
# AddPartitionsToTxn, AddOffsetsToTxn and EndTxn learnt PRODUCER_FENCED in v2 (KIP-588)
_FENCED_SINCE = 2


def transaction_coordinator(ctx: RequestContext) -> TransactionCoordinator | None:
    return ctx.state.services.transactions


def fenced_for_version(error: int, version: int, since: int) -> int:
    """Older clients only know INVALID_PRODUCER_EPOCH for a fenced producer."""
    return INVALID_PRODUCER_EPOCH if error == PRODUCER_FENCED and version < since else error


def _ready(ctx: RequestContext) -> TransactionCoordinator | None:
    coordinator = transaction_coordinator(ctx)
    return coordinator if coordinator is not None and coordinator.loaded else None


async def handle_add_partitions_to_txn(ctx: RequestContext, req: Any) -> dict[str, Any]:
    wanted = [(t.name, int(p)) for t in req.v3_and_below_topics for p in t.partitions]
    coordinator = _ready(ctx)
    denied = authz.denied_topics(ctx, Operation.WRITE, (t for t, _ in wanted))
    if not authz.transactional_id(ctx, Operation.WRITE, req.v3_and_below_transactional_id):
        errors = dict.fromkeys(wanted, TXN_DENIED)
    elif denied:
        # Kafka: the denied topics fail, the rest are not attempted
        errors = {tp: TOPIC_DENIED if tp[0] in denied else NOT_ATTEMPTED for tp in wanted}
    elif coordinator is None:
        errors = dict.fromkeys(wanted, LOADING)
    else:
        errors = await coordinator.add_partitions(
            req.v3_and_below_transactional_id,
            req.v3_and_below_producer_id,
            req.v3_and_below_producer_epoch,
            wanted,
        )
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), error in errors.items():
        by_topic.setdefault(topic, []).append(
            {
                "partition_index": partition,
                "partition_error_code": ErrorCode(
                    fenced_for_version(error, ctx.api_version, _FENCED_SINCE)
                ),
            }
        )
    return {
        "throttle_time": 0,
        "results_by_topic_v3_and_below": [
            {"name": name, "results_by_partition": results} for name, results in by_topic.items()
        ],
    }


async def handle_add_offsets_to_txn(ctx: RequestContext, req: Any) -> dict[str, Any]:
    coordinator = _ready(ctx)
    if not authz.transactional_id(ctx, Operation.WRITE, req.transactional_id):
        error = TXN_DENIED
    elif not authz.group(ctx, Operation.READ, req.group_id):
        error = GROUP_DENIED
    elif coordinator is None:
        error = LOADING
    else:
        error = await coordinator.add_offsets(
            req.transactional_id, req.producer_id, req.producer_epoch, req.group_id
        )
    return {
        "throttle_time": 0,
        "error_code": ErrorCode(fenced_for_version(error, ctx.api_version, _FENCED_SINCE)),
    }


async def handle_end_txn(ctx: RequestContext, req: Any) -> dict[str, Any]:
    coordinator = _ready(ctx)
    if not authz.transactional_id(ctx, Operation.WRITE, req.transactional_id):
        error = TXN_DENIED
    elif coordinator is None:
        error = LOADING
    else:
        error = await coordinator.end_txn(
            req.transactional_id, req.producer_id, req.producer_epoch, bool(req.committed)
        )
    return {
        "throttle_time": 0,
        "error_code": ErrorCode(fenced_for_version(error, ctx.api_version, _FENCED_SINCE)),
    }


def _failed(topics: Any, error: Any) -> list[dict[str, Any]]:
    return [
        {
            "name": t.name,
            "partitions": [
                {"partition_index": p.partition_index, "error_code": ErrorCode(error(t.name))}
                for p in t.partitions
            ],
        }
        for t in topics
    ]


async def handle_txn_offset_commit(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if not authz.transactional_id(ctx, Operation.WRITE, req.transactional_id):
        return {"throttle_time": 0, "topics": _failed(req.topics, lambda _t: TXN_DENIED)}
    if not authz.group(ctx, Operation.READ, req.group_id):
        return {"throttle_time": 0, "topics": _failed(req.topics, lambda _t: GROUP_DENIED)}
    denied = authz.denied_topics(ctx, Operation.READ, (t.name for t in req.topics))
    if denied:
        return {
            "throttle_time": 0,
            "topics": _failed(req.topics, lambda t: TOPIC_DENIED if t in denied else NOT_ATTEMPTED),
        }
    coordinator = _ready(ctx)
    if coordinator is not None:
        # Like Kafka (transaction verification): a producer id the transactional
        # id does not hold gets INVALID_PRODUCER_ID_MAPPING before the group sees it
        meta = coordinator.txns.get(req.transactional_id)
        if check_producer(meta, req.producer_id, req.producer_epoch) == ID_MAPPING:
            return {"throttle_time": 0, "topics": _failed(req.topics, lambda _t: ID_MAPPING)}
    core = rq.TxnOffsetCommit(
        group_id=req.group_id,
        producer_id=req.producer_id,
        producer_epoch=req.producer_epoch,
        topics=tuple(
            rq.CommitTopic(
                t.name,
                tuple(
                    rq.CommitPartition(
                        p.partition_index,
                        p.committed_offset,
                        getattr(p, "committed_leader_epoch", -1),
                        p.committed_metadata,
                    )
                    for p in t.partitions
                ),
            )
            for t in req.topics
        ),
        generation_id=getattr(req, "generation_id", -1),
        member_id=getattr(req, "member_id", ""),
        group_instance_id=getattr(req, "group_instance_id", None),
    )
    try:
        resp = await _coordinator(ctx).call(req.group_id, core)
        topics = [
            {
                "name": t.name,
                "partitions": [
                    {"partition_index": p.partition_index, "error_code": ErrorCode(p.error_code)}
                    for p in t.partitions
                ],
            }
            for t in resp.topics
        ]
    except CoordinatorLoading:
        topics = _failed(req.topics, lambda _t: LOADING)
    return {"throttle_time": 0, "topics": topics}


# ---- ListTransactions / DescribeTransactions (KIP-664, kafka-transactions) ----

# Kafka's names of the transaction states (TransactionState.java)
STATE_NAMES = {
    0: "Empty",
    1: "Ongoing",
    2: "PrepareCommit",
    3: "PrepareAbort",
    4: "CompleteCommit",
    5: "CompleteAbort",
    6: "Dead",
    7: "PrepareEpochFence",
}
TXN_ID_NOT_FOUND = int(ErrorCode.transactional_id_not_found)


async def handle_list_transactions(ctx: RequestContext, req: Any) -> dict[str, Any]:
    import time

    coordinator = _ready(ctx)
    if coordinator is None:
        return {
            "throttle_time": 0,
            "error_code": LOADING,
            "unknown_state_filters": [],
            "transaction_states": [],
        }
    known = set(STATE_NAMES.values())
    states = set(req.state_filters or ())
    producers = set(req.producer_id_filters or ())
    # v1 (KIP-994): only transactions running for longer than this many ms
    duration = int(getattr(req, "duration_filter", -1) or -1)
    now_ms = int(time.time() * 1000)
    listed = []
    for txn_id, meta in sorted(coordinator.txns.items()):
        state = STATE_NAMES.get(int(meta.status), "Unknown")
        if states and state not in states:
            continue
        if producers and meta.producer_id not in producers:
            continue
        if duration >= 0 and (meta.start_ms < 0 or now_ms - meta.start_ms <= duration):
            continue
        if not authz.transactional_id(ctx, Operation.DESCRIBE, txn_id):
            continue
        listed.append(
            {
                "transactional_id": txn_id,
                "producer_id": meta.producer_id,
                "transaction_state": state,
            }
        )
    return {
        "throttle_time": 0,
        "error_code": ErrorCode.none,
        "unknown_state_filters": sorted(states - known),
        "transaction_states": listed,
    }


async def handle_describe_transactions(ctx: RequestContext, req: Any) -> dict[str, Any]:
    coordinator = _ready(ctx)

    def one(txn_id: str) -> dict[str, Any]:
        answer: dict[str, Any] = {
            "error_code": ErrorCode.none,
            "transactional_id": txn_id,
            "transaction_state": "",
            # an error's entry keeps the schema's defaults, 0, as Kafka's does
            "transaction_timeout": 0,
            "transaction_start_time": 0,
            "producer_id": 0,
            "producer_epoch": 0,
            "topics": [],
        }
        if not authz.transactional_id(ctx, Operation.DESCRIBE, txn_id):
            answer["error_code"] = TXN_DENIED
            return answer
        if coordinator is None:
            answer["error_code"] = LOADING
            return answer
        meta = coordinator.txns.get(txn_id)
        if meta is None:
            answer["error_code"] = TXN_ID_NOT_FOUND
            return answer
        topics: dict[str, list[int]] = {}
        for topic, partition in sorted(meta.partitions):
            if authz.topic(ctx, Operation.DESCRIBE, topic, False):
                topics.setdefault(topic, []).append(partition)
        answer.update(
            transaction_state=STATE_NAMES.get(int(meta.status), "Unknown"),
            transaction_timeout=meta.timeout_ms,
            transaction_start_time=meta.start_ms,
            producer_id=meta.producer_id,
            producer_epoch=meta.producer_epoch,
            topics=[{"topic": t, "partitions": ps} for t, ps in topics.items()],
        )
        return answer

    return {"throttle_time": 0, "transaction_states": [one(t) for t in req.transactional_ids]}


async def handle_describe_producers(ctx: RequestContext, req: Any) -> dict[str, Any]:
    """The active producers of each partition (kafka-transactions
    describe-producers, Admin.describeProducers): READ on the topic, as Kafka."""
    topics = []
    for topic in req.topics:
        allowed = authz.topic(ctx, Operation.READ, topic.name)
        parts = []
        for index in topic.partition_indexes:
            entry: dict[str, Any] = {
                "partition_index": index,
                "error_code": ErrorCode.none,
                "error_message": None,
                "active_producers": [],
            }
            plog = ctx.state.logs.get(topic.name, index)
            if not allowed:
                entry["error_code"] = TOPIC_DENIED
            elif plog is None:
                entry["error_code"] = ErrorCode.unknown_topic_or_partition
            else:
                manager = getattr(plog, "producers", None)
                producers = dict(manager.producers) if manager is not None else {}
                entry["active_producers"] = [
                    {
                        "producer_id": pid,
                        "producer_epoch": state.epoch,
                        "last_sequence": state.last_seq,
                        "last_timestamp": state.last_timestamp,
                        "coordinator_epoch": -1,
                        "current_txn_start_offset": state.txn_first_offset,
                    }
                    for pid, state in sorted(producers.items())
                ]
            parts.append(entry)
        topics.append({"name": topic.name, "partitions": parts})
    return {"throttle_time": 0, "topics": topics}
