"""ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69), KIP-848:
wire entities <-> the pure core (`coordinator/groups/modern/`).

Served at v0-1, as Kafka 4.x does: v1 (KIP-1082) makes the client choose
its member id; at v0 an empty id on the first heartbeat gets one from the
broker. The core reads the broker's topics through `TopicImage`: a fixed
image of the topic table taken when the request arrived (Kafka's
MetadataImage), so a heartbeat notices created, grown and deleted topics and
a step sees one table however long it queued.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from kio.schema.errors import ErrorCode

from muster.coordinator.groups.modern.api import ConsumerGroupDescribe, ConsumerGroupHeartbeat
from muster.coordinator.groups.modern.target import SubscribedTopic
from muster.log.manager import LogManager
from muster.security.acl import Operation
from muster.server import authz
from muster.server.group_runtime.runtime import CoordinatorLoading, GroupCoordinator
from muster.server.state import RequestContext

LOADING = int(ErrorCode.coordinator_load_in_progress)
GROUP_DENIED = int(ErrorCode.group_authorization_failed)


class TopicImage(Mapping[str, SubscribedTopic]):
    """The broker's topics as the group cores see them: the log manager's
    fixed image of its topic table (`LogManager.image`) taken when the
    request arrived, not a live view read when the queued step runs (Kafka
    hands its coordinator a MetadataImage likewise). Taking it copies
    nothing: the log manager makes one image per change of its table."""

    __slots__ = ("_topics",)

    def __init__(self, logs: LogManager) -> None:
        self._topics = logs.image()

    def __getitem__(self, name: str) -> SubscribedTopic:
        info = self._topics.get(name)
        if info is None:
            raise KeyError(name)
        return SubscribedTopic(info.topic_id, info.num_partitions)

    def __iter__(self) -> Iterator[str]:
        return iter(self._topics)

    def __len__(self) -> int:
        return len(self._topics)


def _coordinator(ctx: RequestContext) -> GroupCoordinator:
    coordinator = ctx.state.services.coordinator
    assert coordinator is not None, "the broker makes it before it listens"
    return coordinator


def _ms(value: Any) -> int:
    if hasattr(value, "total_seconds"):
        return round(value.total_seconds() * 1000)
    return int(value)


async def handle_consumer_group_heartbeat(ctx: RequestContext, req: Any) -> dict[str, Any]:
    owned = req.topic_partitions
    core = ConsumerGroupHeartbeat(
        group_id=req.group_id,
        member_id=req.member_id,
        member_epoch=int(req.member_epoch),
        instance_id=req.instance_id,
        rack_id=req.rack_id,
        rebalance_timeout_ms=_ms(req.rebalance_timeout),
        subscribed_topic_names=None
        if req.subscribed_topic_names is None
        else tuple(req.subscribed_topic_names),
        subscribed_topic_regex=getattr(req, "subscribed_topic_regex", None),  # v1+
        server_assignor=req.server_assignor,
        owned=None
        if owned is None
        else tuple(
            (t.topic_id or uuid.UUID(int=0), tuple(int(p) for p in t.partitions)) for t in owned
        ),
        client_id=ctx.client_id or "",
        client_host="/" + ctx.client_host,
        api_version=ctx.api_version,
        topics=TopicImage(ctx.state.logs),
    )
    return await heartbeat(ctx, req.group_id, core)


async def heartbeat(ctx: RequestContext, group_id: str, core: Any) -> dict[str, Any]:
    """A consumer or share group heartbeat (their answers have one shape):
    the group's ACL, the core's answer, the assignment when it is sent."""
    out: dict[str, Any] = {
        "throttle_time": 0,
        "error_code": 0,
        "error_message": None,
        "member_id": None,
        "member_epoch": 0,
        "heartbeat_interval": 0,
        "assignment": None,
    }
    if not authz.group(ctx, Operation.READ, group_id):
        return {**out, "error_code": GROUP_DENIED}
    try:
        resp = await _coordinator(ctx).call(group_id, core)
    except CoordinatorLoading:
        return {**out, "error_code": LOADING}
    out.update(
        error_code=resp.error_code,
        error_message=resp.error_message,
        member_id=resp.member_id,
        member_epoch=resp.member_epoch,
        heartbeat_interval=resp.heartbeat_interval_ms,
    )
    if resp.assignment is not None:
        out["assignment"] = {
            "topic_partitions": [
                {"topic_id": t, "partitions": list(ps)} for t, ps in resp.assignment
            ]
        }
    return out


async def handle_consumer_group_describe(ctx: RequestContext, req: Any) -> dict[str, Any]:
    def shape(group: dict[str, Any]) -> None:
        if ctx.api_version < 1:
            for m in group["members"]:
                m.pop("member_type", None)

    return await describe(ctx, req, lambda group_id: ConsumerGroupDescribe((group_id,)), shape)


async def describe(
    ctx: RequestContext,
    req: Any,
    request_for: Callable[[str], Any],
    shape: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """A consumer or share group describe (one answer shape): each group's
    ACL, the core's answer for it (`request_for`), the version's `shape`,
    the authorized operations when asked for."""
    include_ops = bool(req.include_authorized_operations)

    async def one(group_id: str) -> dict[str, Any]:
        if not authz.group(ctx, Operation.DESCRIBE, group_id):
            return _empty(group_id, GROUP_DENIED)
        try:
            resp = await _coordinator(ctx).call(group_id, request_for(group_id))
        except CoordinatorLoading:
            return _empty(group_id, LOADING)
        group = dict(resp.groups[0])
        if shape is not None:
            shape(group)
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
