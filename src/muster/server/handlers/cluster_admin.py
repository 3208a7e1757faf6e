"""DescribeCluster (60) and DescribeLogDirs (35), as a one-node Kafka 4.4
answers them: the admin calls third-party UIs make for the cluster view and
partition sizes on disk."""

from __future__ import annotations

import shutil
from typing import Any

from kio.schema.errors import ErrorCode

from muster.security.acl import CLUSTER_NAME, Operation
from muster.server import authz
from muster.server.handlers.metadata import NOT_REQUESTED, brokers
from muster.server.state import RequestContext

BROKERS_ENDPOINT = 1  # DescribeCluster endpoint_type: 1 brokers, 2 controllers


async def handle_describe_cluster(ctx: RequestContext, req: Any) -> dict[str, Any]:
    state = ctx.state
    endpoint_type = int(getattr(req, "endpoint_type", BROKERS_ENDPOINT))
    out: dict[str, Any] = {
        "throttle_time": 0,
        "error_code": ErrorCode.none,
        "error_message": None,
        "endpoint_type": endpoint_type,
        "cluster_id": state.config["cluster.id"],
        "controller_id": state.node_id,
        "brokers": [],
        "cluster_authorized_operations": NOT_REQUESTED,
    }
    if endpoint_type != BROKERS_ENDPOINT:  # a broker does not describe controllers
        out["error_code"] = ErrorCode.unsupported_endpoint_type
        out["error_message"] = "The request was sent to an endpoint of type BROKER"
        return out
    out["brokers"] = [
        {"broker_id": b["node_id"], "host": b["host"], "port": b["port"], "rack": b["rack"]}
        | {"is_fenced": False}
        for b in brokers(state, ctx.listener)
    ]
    if req.include_cluster_authorized_operations:
        out["cluster_authorized_operations"] = authz.operations(ctx, authz.CLUSTER, CLUSTER_NAME)
    return out


def _size(plog: Any) -> int:
    size = getattr(plog, "size_in_bytes", None)
    return int(size) if size is not None else 0


async def handle_describe_log_dirs(ctx: RequestContext, req: Any) -> dict[str, Any]:
    state = ctx.state
    if not authz.cluster(ctx, Operation.DESCRIBE):
        # Kafka: v3+ says so at the top; older versions answer with no results
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.cluster_authorization_failed,
            "results": [],
        }
    logs = state.logs
    wanted: dict[str, set[int] | None] | None = None
    if req.topics is not None:
        wanted = {t.topic: set(int(p) for p in t.partitions) for t in req.topics}
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for plog in logs.logs():
        if wanted is not None:
            parts = wanted.get(plog.topic)
            if parts is None or plog.partition not in parts:
                continue
        by_topic.setdefault(plog.topic, []).append(
            {
                "partition_index": plog.partition,
                "partition_size": _size(plog),
                "offset_lag": 0,
                "is_future_key": False,
            }
        )
    data_dir = logs.data_dir
    total = usable = -1
    if data_dir is not None:
        usage = shutil.disk_usage(data_dir)
        total, usable = usage.total, usage.free
    result = {
        "error_code": ErrorCode.none,
        "log_dir": str(data_dir.resolve()) if data_dir is not None else "memory",
        "topics": [
            {"name": name, "partitions": sorted(parts, key=lambda p: p["partition_index"])}
            for name, parts in sorted(by_topic.items())
        ],
        "total_bytes": total,
        "usable_bytes": usable,
    }
    return {"throttle_time": 0, "error_code": ErrorCode.none, "results": [result]}
