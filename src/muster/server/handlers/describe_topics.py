"""DescribeTopicPartitions (75), which Kafka 4.x's Admin.describeTopics sends,
answered as a one-node Kafka 4.4 answers it (kafka-diff `describe_topic_partitions.*`):
topics in name order, at most `response_partition_limit` partitions (1..2000)
per answer and a cursor where the next answer starts; an empty topic list
describes every topic the principal may describe."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from kio.schema.errors import ErrorCode

from muster.log.manager import valid_topic_name
from muster.server import authz
from muster.server.handlers.common import Slices
from muster.server.handlers.metadata import DESCRIBE, INTERNAL_TOPICS, NOT_REQUESTED, topic_entry
from muster.server.state import RequestContext

MAX_PARTITIONS = 2000  # Kafka's max.request.partition.size.limit default


def _error_topic(name: str, error: ErrorCode, ops: int) -> dict[str, Any]:
    return {
        "error_code": error,
        "name": name,
        "topic_id": uuid.UUID(int=0),
        "is_internal": name in INTERNAL_TOPICS,
        "partitions": [],
        "topic_authorized_operations": ops,
    }


async def handle_describe_topic_partitions(ctx: RequestContext, req: Any) -> dict[str, Any]:
    state = ctx.state
    fetch_all = not req.topics
    cursor = req.cursor
    if fetch_all:
        names = sorted(state.logs.topics())
    else:
        names = sorted({t.name for t in req.topics})
    if cursor is not None and (
        cursor.partition_index < 0 or (not fetch_all and cursor.topic_name not in names)
    ):
        # Kafka refuses a cursor outside the request: every topic it names (in
        # its order) INVALID_REQUEST
        asked = [t.name for t in req.topics]
        topics = [_error_topic(n, ErrorCode.invalid_request, NOT_REQUESTED) for n in asked]
        return {"throttle_time": 0, "topics": topics, "next_cursor": None}
    if cursor is not None:
        names = [n for n in names if n >= cursor.topic_name]
    limit = max(min(MAX_PARTITIONS, int(req.response_partition_limit)), 1)
    topics: list[dict[str, Any]] = []
    next_cursor = None
    slices = Slices(ctx)
    for name in names:
        if slices.due():
            await asyncio.sleep(0)
        if not authz.topic(ctx, DESCRIBE, name, log=not fetch_all):
            if not fetch_all:  # a listing leaves out what the principal may not see
                topics.append(
                    _error_topic(name, ErrorCode.topic_authorization_failed, NOT_REQUESTED)
                )
            continue
        if limit == 0:  # the previous topic filled the answer: the next one starts here
            next_cursor = {"topic_name": name, "partition_index": 0}
            break
        ops = authz.operations(ctx, authz.TOPIC, name)
        info = state.logs.topic(name)
        if info is None:
            if not fetch_all:
                if name == "":  # what Kafka 4.4 answers for an empty name
                    error, ops = ErrorCode.unknown_server_error, NOT_REQUESTED
                elif valid_topic_name(name):
                    error = ErrorCode.unknown_topic_or_partition
                else:
                    error = ErrorCode.invalid_topic_exception
                topics.append(_error_topic(name, error, ops))
            continue
        entry = topic_entry(state, name, ErrorCode.none)
        start = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
        partitions = entry["partitions"][start:]
        if len(partitions) > limit:
            next_cursor = {"topic_name": name, "partition_index": start + limit}
            partitions = partitions[:limit]
        for p in partitions:  # fields DescribeTopicPartitions has and Metadata has not
            p["eligible_leader_replicas"] = []
            p["last_known_elr"] = []
        limit -= len(partitions)
        entry["partitions"] = partitions
        entry["topic_authorized_operations"] = ops
        topics.append(entry)
        if next_cursor is not None:
            break
    return {"throttle_time": 0, "topics": topics, "next_cursor": next_cursor}
