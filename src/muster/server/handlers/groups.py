"""Group and offset APIs: wire entities of every version <-> the pure core.

Each handler decodes a kio request into a core request, routes it to the
shard that owns the group, and shapes the core's answer for the version the
client asked for.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import uuid
from typing import Any

from kio.schema.errors import ErrorCode

from muster.coordinator import requests as rq
from muster.coordinator import responses as rs
from muster.protocol.small_responses import CommitAnswer
from muster.security.acl import Operation
from muster.server import authz
from muster.server.group_runtime.runtime import CoordinatorLoading, GroupCoordinator, Pending
from muster.server.handlers.modern_groups import TopicImage
from muster.server.security import advertised_endpoint
from muster.server.state import RequestContext

LOADING = int(ErrorCode.coordinator_load_in_progress)
GROUP_DENIED = int(ErrorCode.group_authorization_failed)
TOPIC_DENIED = int(ErrorCode.topic_authorization_failed)
READ, DESCRIBE, DELETE = Operation.READ, Operation.DESCRIBE, Operation.DELETE
GROUP_KEY, TRANSACTION_KEY, SHARE_KEY = 0, 1, 2


def _coordinator(ctx: RequestContext) -> GroupCoordinator:
    coordinator = ctx.state.services.coordinator
    assert coordinator is not None, "the broker makes it before it listens"
    return coordinator


def _client_host(ctx: RequestContext) -> str:
    return "/" + ctx.client_host  # Kafka shows InetAddress.toString()


async def _call(ctx: RequestContext, group_id: str, request: Any) -> Any | None:
    """The core's answer, or None while the owning shard is still loading.
    Most answers are ready once the shard's step has run (a commit with
    muster.fsync=never, a heartbeat): only a Pending one is awaited."""
    answer = _submit(ctx, group_id, request)
    if type(answer) is Pending:
        return await answer.wait()
    return answer


def _submit(ctx: RequestContext, group_id: str, request: Any) -> Any | None:
    """`_call` without a coroutine of its own, for the hottest handlers (a
    heartbeat, a commit): the answer, None while loading, or a Pending."""
    try:
        return _coordinator(ctx).shard_for(group_id).submit(request)
    except CoordinatorLoading:
        return None


def _asdict(obj: Any) -> dict[str, Any]:
    return dataclasses.asdict(obj)


# ---- FindCoordinator ------------------------------------------------------


def _share_key(key: str) -> str | None:
    """The group of a share coordinator key "group:topicId:partition" (None:
    malformed, as Kafka's SharePartitionKey.validate refuses it)."""
    parts = key.rsplit(":", 2)
    if len(parts) != 3 or not parts[0]:
        return None
    try:
        uuid.UUID(parts[1]) if len(parts[1]) == 36 else _base64_uuid(parts[1])
        int(parts[2])
    except ValueError:
        return None
    return parts[0]


def _base64_uuid(text: str) -> uuid.UUID:
    """Kafka's Uuid.toString(): url-safe base64 of the 16 bytes, unpadded."""
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if len(raw) != 16:
        raise ValueError(text)
    return uuid.UUID(bytes=raw)


async def handle_find_coordinator(ctx: RequestContext, req: Any) -> dict[str, Any]:
    host, port = advertised_endpoint(ctx.state, ctx.listener)
    key_type = int(getattr(req, "key_type", GROUP_KEY))

    def answer(key: str) -> dict[str, Any]:
        group = key
        if key_type == SHARE_KEY and 78 in ctx.state.services.api_table:
            # a share partition's key, "group:topicId:partition": its group's
            # coordinator serves it (one node: this one, once loaded)
            parsed = _share_key(key)
            if parsed is None:
                return {
                    "key": key,
                    "node_id": -1,
                    "host": "",
                    "port": -1,
                    "error_code": ErrorCode.invalid_request,
                    "error_message": f"Invalid coordinator key {key} for share group",
                }
            group = parsed
        elif key_type not in (GROUP_KEY, TRANSACTION_KEY):
            return {
                "key": key,
                "node_id": -1,
                "host": "",
                "port": -1,
                "error_code": ErrorCode.invalid_request,
                "error_message": f"unknown coordinator key type {key_type}",
            }
        denied = (
            not authz.transactional_id(ctx, DESCRIBE, key)
            if key_type == TRANSACTION_KEY
            else not authz.group(ctx, DESCRIBE, group)
        )
        if denied:
            return {
                "key": key,
                "node_id": -1,
                "host": "",
                "port": -1,
                "error_code": ErrorCode.transactional_id_authorization_failed
                if key_type == TRANSACTION_KEY
                else ErrorCode.group_authorization_failed,
                "error_message": None,
            }
        if key_type == TRANSACTION_KEY:
            txns = ctx.state.services.transactions
            loaded = txns is not None and txns.loaded
        else:
            loaded = _coordinator(ctx).shard_for(group).loaded
        if not loaded:
            return {
                "key": key,
                "node_id": -1,
                "host": "",
                "port": -1,
                "error_code": ErrorCode.coordinator_load_in_progress,
                "error_message": None,
            }
        return {
            "key": key,
            "node_id": ctx.state.node_id,
            "host": host,
            "port": port,
            "error_code": ErrorCode.none,
            "error_message": None,
        }

    if ctx.api_version >= 4:
        return {"throttle_time": 0, "coordinators": [answer(k) for k in req.coordinator_keys]}
    one = answer(req.key)
    one.pop("key")
    return {"throttle_time": 0, **one}


# ---- JoinGroup / SyncGroup / Heartbeat / LeaveGroup ----------------------


async def handle_join_group(ctx: RequestContext, req: Any) -> dict[str, Any]:
    v = ctx.api_version
    instance_id = getattr(req, "group_instance_id", None)
    core = rq.JoinGroup(
        group_id=req.group_id,
        member_id=req.member_id,
        session_timeout_ms=_ms(req.session_timeout),
        rebalance_timeout_ms=_ms(getattr(req, "rebalance_timeout", req.session_timeout)),
        protocol_type=req.protocol_type,
        protocols=tuple((p.name, bytes(p.metadata)) for p in req.protocols),
        group_instance_id=instance_id,
        client_id=ctx.client_id or "",
        client_host=_client_host(ctx),
        require_known_member_id=v >= 4 and instance_id is None,
        reason=getattr(req, "reason", None),
        supports_skip_assignment=v >= 9,
        topics=TopicImage(ctx.state.logs),
    )
    if not authz.group(ctx, READ, req.group_id):
        resp = rs.JoinGroupResponse(error_code=GROUP_DENIED, member_id=req.member_id)
    else:
        resp = await _call(ctx, req.group_id, core)
    if resp is None:
        resp = rs.JoinGroupResponse(error_code=LOADING, member_id=req.member_id)
    out = _asdict(resp)
    if v < 7 and out["protocol_name"] is None:
        out["protocol_name"] = ""
    out["throttle_time"] = 0
    return out


async def handle_sync_group(ctx: RequestContext, req: Any) -> dict[str, Any]:
    core = rq.SyncGroup(
        group_id=req.group_id,
        generation_id=req.generation_id,
        member_id=req.member_id,
        assignments=tuple((a.member_id, bytes(a.assignment)) for a in req.assignments),
        group_instance_id=getattr(req, "group_instance_id", None),
        protocol_type=getattr(req, "protocol_type", None),
        protocol_name=getattr(req, "protocol_name", None),
    )
    if not authz.group(ctx, READ, req.group_id):
        return {"error_code": GROUP_DENIED, "throttle_time": 0}
    resp = await _call(ctx, req.group_id, core)
    if resp is None:
        resp = rs.SyncGroupResponse(error_code=LOADING)
    return {**_asdict(resp), "throttle_time": 0}


async def handle_heartbeat(ctx: RequestContext, req: Any) -> dict[str, Any]:
    core = rq.Heartbeat(
        group_id=req.group_id,
        generation_id=req.generation_id,
        member_id=req.member_id,
        group_instance_id=getattr(req, "group_instance_id", None),
    )
    if not authz.group(ctx, READ, req.group_id):
        return {"error_code": GROUP_DENIED, "throttle_time": 0}
    resp = _submit(ctx, req.group_id, core)
    if type(resp) is Pending:
        resp = await resp.wait()
    return {"error_code": LOADING if resp is None else resp.error_code, "throttle_time": 0}


async def handle_leave_group(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if ctx.api_version >= 3:
        members = tuple(
            rq.LeavingMember(m.member_id, m.group_instance_id, getattr(m, "reason", None))
            for m in req.members
        )
    else:
        members = (rq.LeavingMember(req.member_id),)
    if not authz.group(ctx, READ, req.group_id):
        return {"error_code": GROUP_DENIED, "members": [], "throttle_time": 0}
    resp = await _call(ctx, req.group_id, rq.LeaveGroup(req.group_id, members))
    if resp is None:
        return {"error_code": LOADING, "members": [], "throttle_time": 0}
    out = {**_asdict(resp), "throttle_time": 0}
    if ctx.api_version < 3 and out["error_code"] == 0 and resp.members:
        # v0-2 have no per-member results: the one member's error is the answer
        out["error_code"] = resp.members[0].error_code
    return out


# ---- OffsetCommit / OffsetFetch / OffsetDelete ------------------------------


async def handle_offset_commit(ctx: RequestContext, req: Any) -> dict[str, Any] | CommitAnswer:
    # Like Kafka's KafkaApis: partitions the broker does not host are refused
    # at the edge with UNKNOWN_TOPIC_OR_PARTITION and never reach the group.
    logs = ctx.state.logs
    unknown: list[dict[str, Any]] = []
    topics: list[rq.CommitTopic] = []
    if not authz.group(ctx, READ, req.group_id):
        return {"throttle_time": 0, "topics": _all_failed(req.topics, GROUP_DENIED)}
    denied = authz.denied_topics(ctx, READ, (t.name for t in req.topics))
    for t in req.topics:
        info = logs.topic(t.name)
        count = -1 if info is None else info.num_partitions
        refused = t.name in denied
        known = []
        bad = []
        for p in t.partitions:
            if refused:
                bad.append({"partition_index": p.partition_index, "error_code": TOPIC_DENIED})
            elif not 0 <= p.partition_index < count:
                bad.append(
                    {
                        "partition_index": p.partition_index,
                        "error_code": ErrorCode.unknown_topic_or_partition,
                    }
                )
            else:
                known.append(  # positional: the hot path's one object per partition
                    rq.CommitPartition(
                        p.partition_index,
                        p.committed_offset,
                        getattr(p, "committed_leader_epoch", -1),
                        p.committed_metadata,
                        getattr(p, "commit_timestamp", -1),  # v1 only
                    )
                )
        if known:
            topics.append(rq.CommitTopic(t.name, tuple(known)))
        if bad:
            unknown.append({"name": t.name, "partitions": bad})
    retention = getattr(req, "retention_time", None)
    core = rq.OffsetCommit(
        req.group_id,
        tuple(topics),
        getattr(req, "generation_id_or_member_epoch", -1),  # v0: none
        getattr(req, "member_id", ""),
        getattr(req, "group_instance_id", None),
        -1 if retention is None else _ms(retention),
        ctx.api_version,
    )
    if topics:
        resp = _submit(ctx, req.group_id, core)
        if type(resp) is Pending:
            resp = await resp.wait()
    else:
        # Kafka: nothing authorized and known, so the group is not touched
        # (and not created)
        resp = rs.OffsetCommitResponse(topics=())
    metrics = ctx.state.services.metrics
    if metrics is not None and resp is not None:
        ok = 0
        for t in resp.topics:
            for p in t.partitions:
                if p.error_code == 0:
                    ok += 1
        metrics.offset_commits.inc(ok)
    if resp is None:
        resp = rs.OffsetCommitResponse(
            topics=tuple(
                rs.TopicErrors(
                    t.name, tuple(rs.PartitionError(p.partition, LOADING) for p in t.partitions)
                )
                for t in topics
            )
        )
    if not unknown:  # the core's answer is the whole answer: written as it is
        return CommitAnswer(resp.topics)
    # Built by hand: dataclasses.asdict deep-copies, and a synchronous commit's
    # latency is made of steps like this one.
    out: dict[str, Any] = {
        "throttle_time": 0,
        "topics": [
            {
                "name": t.name,
                "partitions": [
                    {"partition_index": p.partition_index, "error_code": p.error_code}
                    for p in t.partitions
                ],
            }
            for t in resp.topics
        ],
    }
    by_name = {t["name"]: t for t in out["topics"]}
    for refused in unknown:
        if refused["name"] in by_name:
            by_name[refused["name"]]["partitions"] = (
                list(by_name[refused["name"]]["partitions"]) + refused["partitions"]
            )
        else:
            out["topics"] = [*out["topics"], refused]
    return out


def _all_failed(topics: Any, error: int) -> list[dict[str, Any]]:
    return [
        {
            "name": t.name,
            "partitions": [
                {"partition_index": p.partition_index, "error_code": error} for p in t.partitions
            ],
        }
        for t in topics
    ]


def _fetch_group(
    group_id: str, topics: Any, member_id: Any = None, epoch: int = -1
) -> rq.FetchGroup:
    if topics is None:
        return rq.FetchGroup(group_id, None, member_id, epoch)
    return rq.FetchGroup(
        group_id,
        tuple(rq.FetchTopic(t.name, tuple(t.partition_indexes)) for t in topics),
        member_id,
        epoch,
    )


async def handle_offset_fetch(ctx: RequestContext, req: Any) -> dict[str, Any]:
    v = ctx.api_version
    require_stable = bool(getattr(req, "require_stable", False))
    if v >= 8:
        wanted = [
            _fetch_group(
                g.group_id,
                g.topics,
                getattr(g, "member_id", None),  # v9+: consumer-group members
                int(getattr(g, "member_epoch", -1)),
            )
            for g in req.groups
        ]
    else:
        wanted = [_fetch_group(req.group_id, req.topics)]

    async def one(group: rq.FetchGroup) -> rs.FetchedGroup:
        if not authz.group(ctx, DESCRIBE, group.group_id):
            return rs.FetchedGroup(group.group_id, (), GROUP_DENIED)
        resp = await _call(ctx, group.group_id, rq.OffsetFetch((group,), require_stable))
        if resp is None:
            return rs.FetchedGroup(group.group_id, (), LOADING)
        return _describable(ctx, group, resp.groups[0])

    groups = await asyncio.gather(*(one(g) for g in wanted))
    if v >= 8:
        return {"throttle_time": 0, "groups": [_asdict(g) for g in groups]}
    g = _asdict(groups[0])
    if v < 2 and g["error_code"]:
        # v0-1 carry errors per partition only
        for t in g["topics"]:
            for p in t["partitions"]:
                p["error_code"] = p["error_code"] or g["error_code"]
    return {"throttle_time": 0, "topics": g["topics"], "error_code": g["error_code"]}


def _describable(ctx: RequestContext, asked: rq.FetchGroup, got: rs.FetchedGroup) -> Any:
    """Kafka hides the offsets of topics the principal may not describe: left
    out of an all-topics answer, TOPIC_AUTHORIZATION_FAILED when named."""
    if not authz.enabled(ctx):
        return got
    denied = authz.denied_topics(ctx, DESCRIBE, (t.name for t in got.topics))
    if not denied:
        return got
    if asked.topics is None:
        kept = tuple(t for t in got.topics if t.name not in denied)
    else:
        kept = tuple(
            dataclasses.replace(
                t,
                partitions=tuple(
                    dataclasses.replace(
                        p, committed_offset=-1, metadata="", error_code=TOPIC_DENIED
                    )
                    for p in t.partitions
                ),
            )
            if t.name in denied
            else t
            for t in got.topics
        )
    return dataclasses.replace(got, topics=kept)


async def handle_offset_delete(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if not authz.group(ctx, DELETE, req.group_id):
        return {"error_code": GROUP_DENIED, "throttle_time": 0, "topics": []}
    denied = authz.denied_topics(ctx, READ, (t.name for t in req.topics))
    refused = _all_failed([t for t in req.topics if t.name in denied], TOPIC_DENIED)
    allowed = [t for t in req.topics if t.name not in denied]
    if not allowed and refused:
        return {"error_code": 0, "throttle_time": 0, "topics": refused}
    # Like Kafka's KafkaApis: partitions the broker does not host are refused at
    # the edge with UNKNOWN_TOPIC_OR_PARTITION; a group error drops them all.
    known: list[rq.OffsetDeleteTopic] = []
    for t in allowed:
        info = ctx.state.logs.topic(t.name)
        count = -1 if info is None else info.num_partitions
        parts = [p.partition_index for p in t.partitions]
        if bad := [p for p in parts if not 0 <= p < count]:
            refused.append(
                {
                    "name": t.name,
                    "partitions": [
                        {"partition_index": p, "error_code": ErrorCode.unknown_topic_or_partition}
                        for p in bad
                    ],
                }
            )
        if good := tuple(p for p in parts if 0 <= p < count):
            known.append(rq.OffsetDeleteTopic(t.name, good))
    resp = await _call(ctx, req.group_id, rq.OffsetDelete(req.group_id, tuple(known)))
    if resp is None:
        return {"error_code": LOADING, "throttle_time": 0, "topics": []}
    out = {**_asdict(resp), "throttle_time": 0}
    if out["error_code"] == 0:
        out["topics"] = [*out["topics"], *refused]
    return out


# ---- DescribeGroups / ListGroups / DeleteGroups ------------------------------


GROUP_ID_NOT_FOUND = int(ErrorCode.group_id_not_found)


async def handle_describe_groups(ctx: RequestContext, req: Any) -> dict[str, Any]:
    include_ops = bool(getattr(req, "include_authorized_operations", False))

    async def one(group_id: str) -> dict[str, Any]:
        if not authz.group(ctx, DESCRIBE, group_id):
            return {"error_code": GROUP_DENIED, "group_id": group_id, "members": []}
        resp = await _call(ctx, group_id, rq.DescribeGroups((group_id,), include_ops))
        if resp is None:
            return {
                "error_code": LOADING,
                "group_id": group_id,
                "group_state": "",
                "protocol_type": "",
                "protocol_data": "",
                "members": [],
                "authorized_operations": rs.AUTHORIZED_OPERATIONS_OMITTED,
            }
        out = _asdict(resp.groups[0])
        if ctx.api_version >= 6 and out["error_code"] == 0 and out["group_state"] == "Dead":
            # v6 (KIP-1043): a group the coordinator does not know is an error,
            # as Kafka answers, not a Dead group without members.
            out["error_code"] = GROUP_ID_NOT_FOUND
            out["error_message"] = f"Group {group_id} not found."
        if include_ops and out["error_code"] == 0:
            out["authorized_operations"] = authz.operations(ctx, authz.GROUP, group_id)
        return out

    groups = await asyncio.gather(*(one(g) for g in req.groups))
    return {"throttle_time": 0, "groups": list(groups)}


async def handle_list_groups(ctx: RequestContext, req: Any) -> dict[str, Any]:
    core = rq.ListGroups(
        states_filter=tuple(getattr(req, "states_filter", ()) or ()),
        types_filter=tuple(getattr(req, "types_filter", ()) or ()),
    )
    error = 0
    groups: list[dict[str, Any]] = []
    for shard in _coordinator(ctx).shards:
        try:
            resp = await shard.call(core)
        except CoordinatorLoading:
            error = LOADING
            continue
        error = error or resp.error_code
        groups += [_asdict(g) for g in resp.groups]
    if authz.enabled(ctx) and not authz.cluster(ctx, DESCRIBE, log=False):
        # Describe on the cluster lists every group; otherwise those described
        groups = [
            g for g in groups if authz.allowed(ctx, DESCRIBE, authz.GROUP, g["group_id"], False)
        ]
    return {"throttle_time": 0, "error_code": error, "groups": groups}


async def handle_delete_groups(ctx: RequestContext, req: Any) -> dict[str, Any]:
    async def one(group_id: str) -> dict[str, Any]:
        if not authz.group(ctx, DELETE, group_id):
            return {"group_id": group_id, "error_code": GROUP_DENIED}
        resp = await _call(ctx, group_id, rq.DeleteGroups((group_id,)))
        if resp is None:
            return {"group_id": group_id, "error_code": LOADING}
        share = ctx.state.services.share
        if share is not None and resp.results[0].error_code == 0:
            await share.delete_group(group_id)  # a deleted share group's partitions go too
        return _asdict(resp.results[0])

    results = await asyncio.gather(*(one(g) for g in req.groups_names))
    return {"throttle_time": 0, "results": list(results)}


def _ms(value: Any) -> int:
    if hasattr(value, "total_seconds"):
        return round(value.total_seconds() * 1000)
    return int(value)
