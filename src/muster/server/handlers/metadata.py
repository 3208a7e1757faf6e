"""Metadata: one broker that leads every partition."""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

from kio.schema.errors import ErrorCode

from muster.coordinator.topics import EVENTS_TOPIC
from muster.security.acl import CLUSTER_NAME, Operation
from muster.server import authz
from muster.server.handlers.common import Slices, resolve_topic, shown
from muster.server.security import advertised_endpoint
from muster.server.state import BrokerState, RequestContext

log = logging.getLogger(__name__)

INTERNAL_TOPICS = frozenset(
    {"__consumer_offsets", "__transaction_state", "__share_group_state", EVENTS_TOPIC}
)
NOT_REQUESTED = -2147483648
DESCRIBE = Operation.DESCRIBE  # Kafka's "authorized operations not requested"


def topic_entry(state: BrokerState, name: str, error: ErrorCode) -> dict[str, Any]:
    info = state.logs.topics().get(name) if error == ErrorCode.none else None
    if info is None:
        return {
            "error_code": error,
            "name": name,
            "topic_id": uuid.UUID(int=0),
            "partitions": [],
            "topic_authorized_operations": NOT_REQUESTED,
        }
    node = state.node_id
    return {
        "error_code": ErrorCode.none,
        "name": name,
        "topic_id": info.topic_id,
        "is_internal": name in INTERNAL_TOPICS,
        "partitions": [
            {
                "error_code": ErrorCode.none,
                "partition_index": p,
                "leader_id": node,
                "leader_epoch": 0,
                "replica_nodes": [node],
                "isr_nodes": [node],
                "offline_replicas": [],
            }
            for p in range(info.num_partitions)
        ],
        "topic_authorized_operations": NOT_REQUESTED,
    }


def brokers(state: BrokerState, listener: str = "") -> list[dict[str, Any]]:
    host, port = advertised_endpoint(state, listener)
    return [{"node_id": state.node_id, "host": host, "port": port, "rack": None}]


async def handle_metadata(ctx: RequestContext, req: Any) -> dict[str, Any]:
    state = ctx.state
    requested = req.topics
    slices = Slices(ctx)
    # v0 uses an empty list for "all topics"; v1+ uses null.
    if requested is None or (ctx.api_version == 0 and not requested):
        # a listing shows only what the principal may describe (not audited)
        names = [n for n in sorted(state.logs.topics()) if authz.topic(ctx, DESCRIBE, n, False)]
        topics = []
        for n in names:
            if slices.due():
                await asyncio.sleep(0)
            topics.append(topic_entry(state, n, ErrorCode.none))
    else:
        auto = bool(getattr(req, "allow_auto_topic_creation", True))
        by_id = {info.topic_id: n for n, info in state.logs.topics().items()}
        topics = []
        refused: list[str] = []
        for t in requested:
            if slices.due():
                await asyncio.sleep(0)
            name = t.name
            if name is None:
                tid = getattr(t, "topic_id", None)
                if tid in by_id and authz.topic(ctx, DESCRIBE, by_id[tid]):
                    topics.append(topic_entry(state, by_id[tid], ErrorCode.none))
                else:
                    entry = topic_entry(state, "", ErrorCode.unknown_topic_id)
                    entry["topic_id"] = tid
                    topics.append(entry)
                continue
            if not authz.topic(ctx, DESCRIBE, name):
                error = ErrorCode.topic_authorization_failed
            elif state.logs.topic(name) is None and auto and not authz.may_create_topic(ctx, name):
                error = ErrorCode.topic_authorization_failed
            else:
                error = resolve_topic(state, name, auto)
            if error != ErrorCode.none:
                refused.append(f"{shown(name)}: {error.name}")
            topics.append(topic_entry(state, name, error))
        if refused:  # one line per request, however many topics it names
            more = f" and {len(refused) - 3:,} more" if len(refused) > 3 else ""
            log.info("metadata v%d for %s%s", ctx.api_version, ", ".join(refused[:3]), more)
    if getattr(req, "include_topic_authorized_operations", False):
        for entry in topics:
            if entry["error_code"] == ErrorCode.none:
                entry["topic_authorized_operations"] = authz.operations(
                    ctx, authz.TOPIC, entry["name"]
                )
    cluster_ops = NOT_REQUESTED
    if getattr(req, "include_cluster_authorized_operations", False):
        cluster_ops = authz.operations(ctx, authz.CLUSTER, CLUSTER_NAME)
    return {
        "throttle_time": 0,
        "brokers": brokers(state, ctx.listener),
        "cluster_id": state.config["cluster.id"],
        "controller_id": state.node_id,
        "topics": topics,
        "cluster_authorized_operations": cluster_ops,
    }
