"""ShareGroupHeartbeat (76) v1 and ShareGroupDescribe (77) v1, KIP-932:
wire entities <-> the pure core (`coordinator/groups/share/`). Served only
with `muster.share.enable` (the API table leaves them out otherwise)."""

from __future__ import annotations

from typing import Any

from muster.coordinator.groups.share.api import ShareGroupDescribe, ShareGroupHeartbeat
from muster.server.handlers.modern_groups import TopicImage, describe, heartbeat
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
    names = ctx.state.logs.names_by_id()  # the members' assignments name their topics
    return await describe(ctx, req, lambda group_id: ShareGroupDescribe((group_id,), names))
