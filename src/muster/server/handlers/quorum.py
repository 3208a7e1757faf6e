"""DescribeQuorum (55) as a one-node KRaft Kafka 4.4 (combined broker and
controller) answers a client that asks its broker listener — what
`kafka-metadata-quorum.sh --bootstrap-server ... describe --status` and UIs
read: this node leads the metadata partition and is its only voter, no
observers (kafka-diff `describe_quorum.*`).

muster keeps no metadata log, so the leader epoch is 1 (a single node's first
election) and the high watermark 0; every follower lag is 0, which is true of
a quorum of one."""

from __future__ import annotations

import time
from typing import Any

from kio.schema.errors import ErrorCode

from muster.security.acl import Operation
from muster.server import authz
from muster.server.security import advertised_endpoint
from muster.server.state import RequestContext

METADATA_TOPIC = "__cluster_metadata"
LEADER_EPOCH = 1
HIGH_WATERMARK = 0
NOT_HOSTED = "This server does not host this topic-partition."


def _error_partition(index: int, error: ErrorCode, message: str | None) -> dict[str, Any]:
    return {
        "partition_index": index,
        "error_code": error,
        "error_message": message,
        "leader_id": 0,
        "leader_epoch": 0,
        "high_watermark": 0,
        "current_voters": [],
        "observers": [],
    }


async def handle_describe_quorum(ctx: RequestContext, req: Any) -> dict[str, Any]:
    topics = list(req.topics)
    if not authz.cluster(ctx, Operation.DESCRIBE):
        return {
            "error_code": ErrorCode.cluster_authorization_failed,
            "error_message": "Cluster authorization failed.",
            "topics": [],
            "nodes": [],
        }
    parts = [(t.topic_name, p.partition_index) for t in topics for p in t.partitions]
    if parts != [(METADATA_TOPIC, 0)]:
        # as Kafka: unless the request names exactly the metadata partition,
        # every partition it names is one this node does not host
        return {
            "error_code": ErrorCode.none,
            "error_message": "",
            "topics": [
                {
                    "topic_name": t.topic_name,
                    "partitions": [
                        _error_partition(
                            p.partition_index, ErrorCode.unknown_topic_or_partition, NOT_HOSTED
                        )
                        for p in t.partitions
                    ],
                }
                for t in topics
            ],
            "nodes": [],
        }
    node = ctx.state.node_id
    now = int(time.time() * 1000)
    voter = {
        "replica_id": node,
        "replica_directory_id": None,
        "log_end_offset": HIGH_WATERMARK,
        "last_fetch_timestamp": now,  # the leader reports itself caught up now
        "last_caught_up_timestamp": now,
    }
    host, port = advertised_endpoint(ctx.state, ctx.listener)
    partition = _error_partition(0, ErrorCode.none, "") | {
        "leader_id": node,
        "leader_epoch": LEADER_EPOCH,
        "high_watermark": HIGH_WATERMARK,
        "current_voters": [voter],
    }
    return {
        "error_code": ErrorCode.none,
        "error_message": "",
        "topics": [{"topic_name": METADATA_TOPIC, "partitions": [partition]}],
        # muster's controller is the broker itself: it listens where the broker does
        "nodes": [
            {
                "node_id": node,
                "listeners": [{"name": ctx.listener or "PLAINTEXT", "host": host, "port": port}],
            }
        ],
    }
