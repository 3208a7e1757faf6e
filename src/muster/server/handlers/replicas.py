"""ElectLeaders and ListPartitionReassignments as a single-node Kafka answers
them: the one replica of every partition is its leader, so no election is ever
needed and nothing is ever being reassigned (kafka-leader-election.sh,
kafka-reassign-partitions.sh --list, Admin.electLeaders and
Admin.listPartitionReassignments)."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from muster.security.acl import Operation
from muster.server import authz
from muster.server.state import RequestContext

NOT_NEEDED_MESSAGE = "Leader election not needed for topic partition."


async def handle_elect_leaders(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if not authz.cluster(ctx, Operation.ALTER):
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.cluster_authorization_failed,
            "replica_election_results": [],
        }
    results = []
    # topic_partitions null asks for every partition, and Kafka then reports
    # only the partitions it elected a leader for: none on one node
    for topic in req.topic_partitions or ():
        parts = []
        for index in topic.partitions:
            if ctx.state.logs.get(topic.topic, index) is None:
                error, message = ErrorCode.unknown_topic_or_partition, None
            else:
                error, message = ErrorCode.election_not_needed, NOT_NEEDED_MESSAGE
            parts.append({"partition_id": index, "error_code": error, "error_message": message})
        results.append({"topic": topic.topic, "partition_result": parts})
    return {"throttle_time": 0, "error_code": ErrorCode.none, "replica_election_results": results}


async def handle_list_partition_reassignments(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if not authz.cluster(ctx, Operation.DESCRIBE):
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.cluster_authorization_failed,
            "error_message": None,
            "topics": [],
        }
    return {"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None, "topics": []}
