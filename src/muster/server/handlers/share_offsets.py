"""DescribeShareGroupOffsets (90) v0-1, AlterShareGroupOffsets (91) v0 and
DeleteShareGroupOffsets (92) v0: a share group's start offsets (SPSO) per
partition, read from and set in the share partitions (`server/share_state`,
durable in `__share_group_state`). Altering or deleting needs an empty group, as in
Kafka (NON_EMPTY_GROUP otherwise)."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from muster.coordinator.groups.share.api import ShareGroupDescribe, ShareOffsetsChange
from muster.security.acl import Operation
from muster.server import authz
from muster.server.group_runtime.runtime import CoordinatorLoading
from muster.server.handlers.modern_groups import _coordinator
from muster.server.share_state import ShareState
from muster.server.state import RequestContext
from muster.share.partition import RecordState, SharePartition


def _share(ctx: RequestContext) -> ShareState:
    share = ctx.state.services.share
    assert share is not None, "served only with muster.share.enable"
    return share


async def _group_error(ctx: RequestContext, group: str, need_empty: bool) -> int:
    """Why the group's offsets cannot be read (or, `need_empty`, changed:
    the core makes an unknown id an empty share group) now; 0: they can."""
    op = Operation.DELETE if need_empty else Operation.DESCRIBE
    if not authz.group(ctx, op, group):
        return int(ErrorCode.group_authorization_failed)
    request: Any = ShareOffsetsChange(group) if need_empty else ShareGroupDescribe((group,))
    try:
        resp = await _coordinator(ctx).call(group, request)
    except CoordinatorLoading:
        return int(ErrorCode.coordinator_load_in_progress)
    if need_empty:
        return int(resp.error_code)
    described = resp.groups[0]
    code = int(described["error_code"])
    if code == int(ErrorCode.group_id_not_found):
        # no share group yet: nothing to describe but no error, unless the id is another kind's
        return code if "not a share group" in (described["error_message"] or "") else 0
    return code


def _lag(sp: SharePartition, high_watermark: int) -> int:
    """Records not yet done: from the SPSO to the end, less those finished in the window."""
    finished = sum(
        1
        for r in sp.records.values()
        if r.state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
    )
    return max(0, high_watermark - sp.spso - finished)


async def handle_describe_share_group_offsets(ctx: RequestContext, req: Any) -> dict[str, Any]:
    share = _share(ctx)
    logs = ctx.state.logs
    groups = []
    for g in req.groups:
        error = await _group_error(ctx, g.group_id, need_empty=False)
        if error and error != int(ErrorCode.group_id_not_found):
            groups.append(
                {"group_id": g.group_id, "topics": [], "error_code": error, "error_message": None}
            )
            continue
        names = logs.names_by_id()
        if g.topics is None:  # every partition the group has state for
            wanted: dict[str, list[int]] = {}
            for tid, index in share.keys(g.group_id):
                if tid in names:
                    wanted.setdefault(names[tid], []).append(index)
        else:
            wanted = {t.topic_name: list(t.partitions) for t in g.topics}
        topics = []
        for name, indexes in wanted.items():
            info = logs.topic(name)
            parts = []
            for index in indexes:
                entry = {
                    "partition_index": index,
                    "start_offset": -1,
                    "leader_epoch": -1,
                    "lag": -1,
                    "error_code": 0,
                    "error_message": None,
                }
                plog = logs.get(name, index) if info is not None else None
                if plog is None:
                    entry["error_code"] = int(ErrorCode.unknown_topic_or_partition)
                else:
                    sp = share.existing(g.group_id, (info.topic_id, index))
                    if sp is not None:
                        hw = ctx.state.durability.visible_end(plog)
                        entry.update(start_offset=sp.spso, leader_epoch=0, lag=_lag(sp, hw))
                parts.append(entry)
            topics.append(
                {
                    "topic_name": name,
                    "topic_id": info.topic_id if info else None,
                    "partitions": parts,
                }
            )
        groups.append(
            {"group_id": g.group_id, "topics": topics, "error_code": 0, "error_message": None}
        )
    return {"throttle_time": 0, "groups": groups}


async def _changing(ctx: RequestContext, group: str) -> dict[str, Any]:
    """The answer so far of a request that changes the group's offsets: an
    error unless the group is empty (or not made yet)."""
    out: dict[str, Any] = {
        "throttle_time": 0,
        "error_code": 0,
        "error_message": None,
        "responses": [],
    }
    out["error_code"] = await _group_error(ctx, group, need_empty=True)
    return out


async def handle_alter_share_group_offsets(ctx: RequestContext, req: Any) -> dict[str, Any]:
    share = _share(ctx)
    out = await _changing(ctx, req.group_id)
    if out["error_code"]:
        return out
    logs = ctx.state.logs
    for t in req.topics:
        info = logs.topic(t.topic_name)
        parts = []
        for p in t.partitions:
            index = int(p.partition_index)
            plog = logs.get(t.topic_name, index) if info is not None else None
            code = 0
            if plog is None:
                code = int(ErrorCode.unknown_topic_or_partition)
            else:
                share.reset(req.group_id, (info.topic_id, index), int(p.start_offset))
            parts.append({"partition_index": index, "error_code": code, "error_message": None})
        out["responses"].append(
            {
                "topic_name": t.topic_name,
                "topic_id": info.topic_id if info else None,
                "partitions": parts,
            }
        )
    if not await share.persist():  # answered once the new start offsets are written
        for r in out["responses"]:
            for part in r["partitions"]:
                part["error_code"] = part["error_code"] or int(ErrorCode.coordinator_not_available)
    return out


async def handle_delete_share_group_offsets(ctx: RequestContext, req: Any) -> dict[str, Any]:
    share = _share(ctx)
    out = await _changing(ctx, req.group_id)
    if out["error_code"]:
        return out
    logs = ctx.state.logs
    for t in req.topics:
        info = logs.topic(t.topic_name)
        code = 0 if info is not None else int(ErrorCode.unknown_topic_or_partition)
        if info is not None and not await share.delete_state(req.group_id, info.topic_id):
            code = int(ErrorCode.coordinator_not_available)
        out["responses"].append(
            {
                "topic_name": t.topic_name,
                "topic_id": info.topic_id if info else None,
                "error_code": code,
                "error_message": None,
            }
        )
    return out
