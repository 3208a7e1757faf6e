"""ShareGroupHeartbeat (76) v1 and ShareGroupDescribe (77) v1, KIP-932:
wire entities <-> the pure core (`coordinator/groups/share/`). Served only
with `muster.share.enable` (the API table leaves them out otherwise)."""

from __future__ import annotations

import asyncio
from typing import Any

from muster.coordinator.groups.share.api import ShareGroupDescribe, ShareGroupHeartbeat
from muster.security.acl import Operation
from muster.server import authz
from muster.server.group_runtime.runtime import CoordinatorLoading
from muster.server.handlers.consumer_groups import (
    GROUP_DENIED,
    LOADING,
    TopicImage,
    _coordinator,
    heartbeat,
)
from muster.server.state import RequestContext


async def handle_share_group_heartbeat(ctx: RequestContext, req: Any) -> dict[str, Any]:
    core = ShareGroupHeartbeat(
        group_id=req.group_id,
        member_id=req.member_id,
        member_epoch=int(req.member_epoch),
        rack_id=req.rack_id,
        subscribed_topic_names=None
        if req.subscribed_topic_names is None
        else tuple(req.subscribed_topic_names),
        client_id=ctx.client_id or "",
        client_host="/" + ctx.client_host,
        topics=TopicImage(ctx.state.logs),
    )
    return await heartbeat(ctx, req.group_id, core)


async def handle_share_group_describe(ctx: RequestContext, req: Any) -> dict[str, Any]:
    include_ops = bool(req.include_authorized_operations)
    names = ctx.state.logs.names_by_id()

    async def one(group_id: str) -> dict[str, Any]:
        if not authz.group(ctx, Operation.DESCRIBE, group_id):
            return _empty(group_id, GROUP_DENIED)
        try:
            resp = await _coordinator(ctx).call(group_id, ShareGroupDescribe((group_id,), names))
        except CoordinatorLoading:
            return _empty(group_id, LOADING)
        group = dict(resp.groups[0])
        if include_ops and group["error_code"] == 0:
            group["authorized_operations"] = authz.operations(ctx, authz.GROUP, group_id)
        return group

    groups = await asyncio.gather(*(one(g) for g in req.group_ids))
    return {"throttle_time": 0, "groups": list(groups)}


def _empty(group_id: str, error: int) -> dict[str, Any]:
    return {
        "error_code": error,
        "error_message": None,
        "group_id": group_id,
        "group_state": "",
        "group_epoch": 0,
        "assignment_epoch": 0,
        "assignor_name": "",
        "members": [],
        "authorized_operations": -(2**31),
    }
