"""Where a request for one group goes: a row per (group kind, request type).

The shard refuses a request for a group it does not serve (an invalid id, a
partition still loading, a group of another partition) with the error
answer of its type (`REFUSALS`), then runs the row of the group's kind:
`classic` for a classic group or a group id nobody holds yet, `consumer` (`MODERN`)
for a KIP-848 group, `groups/modern/` (`GroupStore.kind_of`). Classic members inside
a modern group are the `MODERN` rows of the classic requests
(`groups/modern/classic_bridge.py`). Share groups (KIP-932) bring their
own kind and rows. Requests over several groups or none (OffsetFetch,
DescribeGroups, ListGroups, DeleteGroups, ConsumerGroupDescribe, CompleteTxn)
are the shard's own rows (kind None) in the same table (`shard._ROUTES`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from muster.coordinator import errors as E
from muster.coordinator import requests as rq
from muster.coordinator import responses as rs
from muster.coordinator.context import Effects
from muster.coordinator.groups.classic import join, leave, liveness, sync
from muster.coordinator.groups.modern import classic_bridge
from muster.coordinator.groups.modern import heartbeat as modern_heartbeat
from muster.coordinator.groups.modern import shard_api as modern
from muster.coordinator.groups.modern.api import (
    ConsumerGroupHeartbeat,
    ConsumerGroupHeartbeatResponse,
)
from muster.coordinator.groups.share import heartbeat as share_heartbeat
from muster.coordinator.groups.share.api import (
    ShareGroupHeartbeat,
    ShareGroupHeartbeatResponse,
    ShareOffsetsChange,
    ShareOffsetsChangeResponse,
)
from muster.coordinator.groups.store import CLASSIC, MODERN, SHARE, GroupStore
from muster.coordinator.offsets.manager import commit_response

if TYPE_CHECKING:  # the shard holds the table
    from muster.coordinator.shard import CoordinatorShard

Row = Callable[["CoordinatorShard", Effects, int, Any], None]
Refusal = Callable[[Effects, int, Any, int], None]


def _in_store(handler: Callable[[GroupStore, Effects, int, Any], None]) -> Row:
    """A group kind's handler, which needs only the groups."""

    def row(shard: CoordinatorShard, fx: Effects, rid: int, req: Any) -> None:
        handler(shard.store, fx, rid, req)

    row.__name__ = row.__qualname__ = handler.__name__
    return row


# ---- refusals: the error answer of each request type for one group ---------


def _refuse_join(fx: Effects, rid: int, req: rq.JoinGroup, error: int) -> None:
    fx.reply(rid, rs.JoinGroupResponse(error, member_id=req.member_id))


def _refuse_sync(fx: Effects, rid: int, req: rq.SyncGroup, error: int) -> None:
    if error == E.COORDINATOR_LOAD_IN_PROGRESS:  # Kafka: told to rejoin while loading
        error = E.REBALANCE_IN_PROGRESS
    fx.reply(rid, rs.SyncGroupResponse(error))


def _refuse_heartbeat(fx: Effects, rid: int, req: rq.Heartbeat, error: int) -> None:
    # Kafka answers heartbeats blindly while the partition loads
    ok = error == E.COORDINATOR_LOAD_IN_PROGRESS
    fx.reply(rid, rs.HeartbeatResponse(E.NONE if ok else error))


def _refuse_leave(fx: Effects, rid: int, req: rq.LeaveGroup, error: int) -> None:
    fx.reply(rid, rs.LeaveGroupResponse(error))


def _refuse_commit(fx: Effects, rid: int, req: Any, error: int) -> None:
    fx.reply(rid, commit_response(req.topics, error))


def _refuse_offset_delete(fx: Effects, rid: int, req: rq.OffsetDelete, error: int) -> None:
    fx.reply(rid, rs.OffsetDeleteResponse(error))


def _refuse_consumer_heartbeat(
    fx: Effects, rid: int, req: ConsumerGroupHeartbeat, error: int
) -> None:
    if req.group_id == "":
        fx.reply(rid, ConsumerGroupHeartbeatResponse(E.INVALID_REQUEST, "GroupId can't be empty."))
    else:
        fx.reply(rid, ConsumerGroupHeartbeatResponse(error))


def _refuse_share_heartbeat(fx: Effects, rid: int, req: ShareGroupHeartbeat, error: int) -> None:
    fx.reply(rid, ShareGroupHeartbeatResponse(error))


def _refuse_offsets_change(fx: Effects, rid: int, req: ShareOffsetsChange, error: int) -> None:
    fx.reply(rid, ShareOffsetsChangeResponse(error))


def _not_share(shard: CoordinatorShard, fx: Effects, rid: int, req: Any) -> None:
    """A request of a share group's member for a modern (KIP-848) group's id."""
    msg = f"Group {req.group_id} is not a share group."
    fx.reply(rid, ShareGroupHeartbeatResponse(E.GROUP_ID_NOT_FOUND, msg))


def _share_only(shard: CoordinatorShard, fx: Effects, rid: int, req: Any) -> None:
    """A classic or modern group's request for a share group's id: Kafka answers
    its type's error for a group of another kind."""
    refuse = REFUSALS[type(req)]
    error = E.INCONSISTENT_GROUP_PROTOCOL if isinstance(req, rq.JoinGroup) else E.GROUP_ID_NOT_FOUND
    refuse(fx, rid, req, error)


REFUSALS: dict[type, Refusal] = {
    rq.JoinGroup: _refuse_join,
    rq.SyncGroup: _refuse_sync,
    rq.Heartbeat: _refuse_heartbeat,
    rq.LeaveGroup: _refuse_leave,
    rq.OffsetCommit: _refuse_commit,
    rq.TxnOffsetCommit: _refuse_commit,
    rq.OffsetDelete: _refuse_offset_delete,
    ConsumerGroupHeartbeat: _refuse_consumer_heartbeat,
    ShareGroupHeartbeat: _refuse_share_heartbeat,
    ShareOffsetsChange: _refuse_offsets_change,
}


# ---- offsets: the same manager, the member checks of the group's kind -------


def _classic_commit(shard: CoordinatorShard, fx: Effects, rid: int, req: rq.OffsetCommit) -> None:
    shard.offsets.commit(fx, rid, req)


def _modern_commit(shard: CoordinatorShard, fx: Effects, rid: int, req: rq.OffsetCommit) -> None:
    store = shard.store
    error = modern.validate_commit(store, store.modern[req.group_id], req)
    if error is not None:
        fx.reply(rid, commit_response(req.topics, error))
    else:
        shard.offsets.store_offsets(req.group_id, fx, rid, req)


def _classic_txn_commit(
    shard: CoordinatorShard, fx: Effects, rid: int, req: rq.TxnOffsetCommit
) -> None:
    shard.offsets.txn_commit(fx, rid, req)


def _modern_txn_commit(
    shard: CoordinatorShard, fx: Effects, rid: int, req: rq.TxnOffsetCommit
) -> None:
    store = shard.store
    error = modern.validate_commit(store, store.modern[req.group_id], req)
    if error is not None:
        fx.reply(rid, commit_response(req.topics, error))
    else:
        shard.offsets.txn_commit(fx, rid, req, validated=True)


def _offset_delete(
    delete: Callable[[CoordinatorShard, Effects, Any], rs.OffsetDeleteResponse],
) -> Row:
    """OffsetDelete answers once its tombstones are durable (at once without any)."""

    def row(shard: CoordinatorShard, fx: Effects, rid: int, req: rq.OffsetDelete) -> None:
        appended = len(fx.records)
        resp = delete(shard, fx, req)
        if len(fx.records) == appended:
            fx.reply(rid, resp)
        else:
            fx.after_durable(partial(_offsets_deleted, rid, resp))

    return row


def _classic_offset_delete(shard: CoordinatorShard, fx: Effects, req: Any) -> Any:
    return shard.offsets.offset_delete(fx, req)


def _modern_offset_delete(shard: CoordinatorShard, fx: Effects, req: Any) -> Any:
    return modern.offset_delete(shard.offsets, fx, shard.store.modern[req.group_id], req)


def _offsets_deleted(rid: int, resp: rs.OffsetDeleteResponse, error: int, fx: Effects) -> None:
    """OffsetDelete's tombstones are durable, or failed: then nothing was deleted."""
    if error == E.NONE:
        fx.reply(rid, resp)
        return
    failed = E.append_error_to_client(error)
    topics = tuple(
        rs.TopicErrors(
            t.name,
            tuple(
                rs.PartitionError(
                    p.partition_index, failed if p.error_code == E.NONE else p.error_code
                )
                for p in t.partitions
            ),
        )
        for t in resp.topics
    )
    fx.reply(rid, dataclasses.replace(resp, topics=topics))


# ---- the rows of each group kind --------------------------------------------

GROUP_ROWS: dict[tuple[str, type], Row] = {
    (CLASSIC, rq.JoinGroup): _in_store(join.handle_join_group),
    (CLASSIC, rq.SyncGroup): _in_store(sync.handle_sync_group),
    (CLASSIC, rq.Heartbeat): _in_store(liveness.handle_heartbeat),
    (CLASSIC, rq.LeaveGroup): _in_store(leave.handle_leave_group),
    (CLASSIC, rq.OffsetCommit): _classic_commit,
    (CLASSIC, rq.TxnOffsetCommit): _classic_txn_commit,
    (CLASSIC, rq.OffsetDelete): _offset_delete(_classic_offset_delete),
    # a consumer heartbeat for a classic group (or none yet) may upgrade it
    (CLASSIC, ConsumerGroupHeartbeat): _in_store(modern_heartbeat.handle_heartbeat),
    (MODERN, rq.JoinGroup): _in_store(classic_bridge.join_group),
    (MODERN, rq.SyncGroup): _in_store(classic_bridge.sync),
    (MODERN, rq.Heartbeat): _in_store(classic_bridge.heartbeat),
    (MODERN, rq.LeaveGroup): _in_store(classic_bridge.leave),
    (MODERN, rq.OffsetCommit): _modern_commit,
    (MODERN, rq.TxnOffsetCommit): _modern_txn_commit,
    (MODERN, rq.OffsetDelete): _offset_delete(_modern_offset_delete),
    (MODERN, ConsumerGroupHeartbeat): _in_store(modern_heartbeat.handle_heartbeat),
    # a share heartbeat for an unused id makes a share group
    (CLASSIC, ShareGroupHeartbeat): _in_store(share_heartbeat.handle_heartbeat),
    (MODERN, ShareGroupHeartbeat): _not_share,
    (SHARE, ShareGroupHeartbeat): _in_store(share_heartbeat.handle_heartbeat),
    (CLASSIC, ShareOffsetsChange): _in_store(share_heartbeat.handle_offsets_change),
    (MODERN, ShareOffsetsChange): _in_store(share_heartbeat.handle_offsets_change),
    (SHARE, ShareOffsetsChange): _in_store(share_heartbeat.handle_offsets_change),
    **{
        (SHARE, t): _share_only
        for t in (
            rq.JoinGroup,
            rq.SyncGroup,
            rq.Heartbeat,
            rq.LeaveGroup,
            rq.OffsetCommit,
            rq.TxnOffsetCommit,
            rq.OffsetDelete,
            ConsumerGroupHeartbeat,
        )
    },
}
