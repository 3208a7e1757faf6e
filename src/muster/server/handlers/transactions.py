"""AddPartitionsToTxn, AddOffsetsToTxn, EndTxn and TxnOffsetCommit: wire
entities <-> the transaction coordinator and the group coordinator."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from muster.coordinator import requests as rq
from muster.security.acl import Operation
from muster.server import authz
from muster.server.coordinator.runtime import CoordinatorLoading
from muster.server.handlers.groups import _coordinator
from muster.server.state import RequestContext
from muster.server.transactions import TransactionCoordinator
from muster.transactions.core import INVALID_PRODUCER_EPOCH, PRODUCER_FENCED

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
