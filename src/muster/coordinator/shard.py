"""One coordinator shard: the pure state machine of one `__consumer_offsets`
partition. The runtime drives it serially:

    shard = CoordinatorShard(partition, config)
    for key, value, offset in partition_log: shard.replay(key, value, offset)
    result = shard.loaded(now_ms)                  # re-arms timers
    result = shard.handle(request_id, request, now_ms)
    result = shard.on_timer(key, now_ms)
    writes = WriteTracker(shard)                   # the runtime's, not the shard's
    writes.track(result.on_durable)                # as it appends result.records
    result = writes.complete(result.on_durable, error_code, now_ms)

See muster.coordinator.result for what a Result obliges the runtime
to do. Nothing here does I/O or reads a clock.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from muster.coordinator import errors as E
from muster.coordinator import events as ev
from muster.coordinator import requests as rq
from muster.coordinator import responses as rs
from muster.coordinator.context import (
    EXPIRE_OFFSETS_KEY,
    CoordinatorConfig,
    Effects,
    TimerKey,
    heartbeat_key,
)
from muster.coordinator.groups.classic import admin, rebalance
from muster.coordinator.groups.classic import timers as classic_timers
from muster.coordinator.groups.classic.domain import ClassicDomain
from muster.coordinator.groups.classic.group import ClassicGroup
from muster.coordinator.groups.classic.state import GroupState as S
from muster.coordinator.groups.classic.timers import TimerHandler
from muster.coordinator.groups.modern import describe as modern_describe
from muster.coordinator.groups.modern import shard_api as modern
from muster.coordinator.groups.modern.api import ConsumerGroupDescribe
from muster.coordinator.groups.modern.domain import ModernDomain
from muster.coordinator.groups.share import describe as share_describe
from muster.coordinator.groups.share import heartbeat as share_heartbeat
from muster.coordinator.groups.share.api import ShareGroupDescribe, ShareGroupDescribeResponse
from muster.coordinator.groups.share.domain import ShareDomain
from muster.coordinator.groups.store import GroupStore, random_member_id
from muster.coordinator.offsets.domain import OffsetsDomain
from muster.coordinator.offsets.manager import OffsetManager
from muster.coordinator.partitioning import partition_for
from muster.coordinator.result import Cancel, Result, Schedule
from muster.coordinator.routes import GROUP_ROWS, REFUSALS
from muster.coordinator.tracker import Domain, Write
from muster.records.offsets_topic import record_type

# APIs for which an empty group id is acceptable (Kafka's isValidGroupId)
_EMPTY_ID_OK = (
    rq.OffsetCommit,
    rq.TxnOffsetCommit,
    rq.OffsetFetch,
    rq.DescribeGroups,
    rq.DeleteGroups,
)


class CoordinatorShard:
    def __init__(
        self,
        partition: int,
        config: CoordinatorConfig | Mapping[str, Any] | None = None,
        new_member_id: Callable[[str], str] = random_member_id,
    ) -> None:
        if not isinstance(config, CoordinatorConfig):
            config = CoordinatorConfig.from_mapping(config or {})
        self.partition = partition
        self.cfg = config
        self.store = GroupStore(config, new_member_id)
        self.offsets = OffsetManager(self.store)
        self.loading = True
        # the record sequence of the next record appended: records are ordered
        # by it (after a load it continues from the last log offset replayed)
        self.next_seq = 0
        self._timers: dict[str, tuple[TimerKey, int]] = {}
        self.domains: tuple[Domain, ...] = (
            OffsetsDomain(self.offsets, self._is_loading),
            ClassicDomain(self.store, self.offsets, self._is_loading),
            ModernDomain(self.store, self._armed),
            ShareDomain(self.store),
        )
        # the one replay dispatch, by record type (a key's version), at load
        # and for durable writes alike; a type no domain claims is skipped
        self._replay_table: dict[int, Domain] = {
            t: domain for domain in self.domains for t in domain.record_types
        }
        assert len(self._replay_table) == sum(len(d.record_types) for d in self.domains), (
            "a record type in two domains"
        )

    # ---- the runtime's API -------------------------------------------------

    def handle(self, request_id: int, request: Any, now_ms: int) -> Result:
        """Route a request once, on (group kind, request type) (`_ROUTES`): a
        request for one group is first refused with its type's error answer
        if this shard does not serve the group (`routes.REFUSALS`); requests
        over several groups or none are the shard's own rows (kind None)."""
        fx = Effects(now_ms, self.next_seq)
        t = type(request)
        refuse = REFUSALS.get(t)
        kind = None
        if refuse is not None:
            group_id = request.group_id
            error = self._group_error(group_id, request)
            if error is not None:
                refuse(fx, request_id, request, error)
                return self.finish(fx)
            kind = self.store.kind_of(group_id)
        row = _ROUTES.get((kind, t))
        if row is None:
            raise TypeError(f"not a coordinator request: {t.__name__}")
        row(self, fx, request_id, request)
        return self.finish(fx)

    def on_timer(self, key: str, now_ms: int) -> Result:
        fx = Effects(now_ms, self.next_seq)
        entry = self._timers.get(key)
        if entry is None:
            return Result()  # cancelled or replaced meanwhile
        tkey, deadline = entry
        if now_ms < deadline:
            fx.schedule(tkey, deadline)  # fired early: keep waiting
            return self.finish(fx)
        del self._timers[key]
        on_timer = _TIMERS.get(tkey.kind)
        if on_timer is not None:
            on_timer(self, fx, tkey)
        return self.finish(fx)

    def _expire_offsets(self, fx: Effects, _key: TimerKey) -> None:
        done = self.offsets.expire(fx)
        # an unfinished pass continues as soon as queued requests are served
        delay = self.cfg.offsets_retention_check_interval_ms if done else 0
        fx.schedule(EXPIRE_OFFSETS_KEY, fx.now + delay)

    def delete_partitions(self, partitions: list[tuple[str, int]], now_ms: int) -> Result:
        """Topics or partitions were deleted: drop every group's offsets for them
        (Kafka's handleDeletedPartitions); Empty groups left without offsets go."""
        fx = Effects(now_ms, self.next_seq)
        for group in self.store:
            removable = self.offsets.removable(group.group_id)
            gone = [tp for tp in partitions if tp in removable]
            if gone:
                self.offsets.remove_offsets(group, gone, fx)
                self.offsets.remove_group_if_dead(group, fx, ev.OFFSETS_EXPIRED)
        return self.finish(fx)

    # ---- replay: the one way durable state changes --------------------------

    def replay(
        self, key: bytes, value: bytes | None, offset: int, producer_id: int | None = None
    ) -> None:
        """Apply one `__consumer_offsets` record at log position `offset`: a
        record read at load, or one this shard appended, once it is durable
        (`WriteTracker.complete`), in the domain of its record type. With
        `producer_id` it belongs to that producer's transaction and waits for
        the marker. A record type we do not know is skipped, like Kafka."""
        domain = self._replay_table.get(record_type(key))
        if domain is not None:
            domain.apply(key, value, offset, producer_id)
        if offset >= self.next_seq:
            self.next_seq = offset + 1

    def replay_marker(self, producer_id: int, commit: bool) -> None:
        """A durable transaction marker: only offsets wait for markers."""
        self.offsets.replay_marker(producer_id, commit)

    def domain_of(self, key: bytes) -> Domain | None:
        return self._replay_table.get(record_type(key))

    def replay_latest(self, latest: Mapping[bytes, tuple[int, bytes | None]]) -> None:
        """Replay the last record of each key, in log order of those records
        (what compaction would leave: the same state as replaying every
        record), each applied as `replay` applies a record: by its domain in
        the one table. `replay`'s own steps are inline (a load is a million
        records), the log position once at the end."""
        domain_of = self._replay_table.get
        top = self.next_seq - 1
        for key, (offset, value) in latest.items():
            domain = domain_of(record_type(key))
            if domain is not None:
                domain.apply(key, value, offset, None)
            if offset > top:
                top = offset
        self.next_seq = top + 1

    def loaded(self, now_ms: int) -> Result:
        """Loading is over: re-arm members' session deadlines and offset expiry."""
        self.loading = False
        fx = Effects(now_ms, self.next_seq)
        for group in self.store:
            for member in group.members.values():
                fx.schedule(
                    heartbeat_key(group.group_id, member.member_id),
                    now_ms + member.session_timeout_ms,
                )
            if len(group.members) > self.cfg.group_max_size:
                # group.max.size was lowered: let the group shrink through a rebalance
                rebalance.prepare_rebalance(
                    self.store,
                    group,
                    fx,
                    ev.GROUP_MAX_SIZE,
                    "",
                    None,
                    f"loaded with {len(group.members)} members, over group.max.size",
                )
        modern.arm_timers(self.store, fx)
        share_heartbeat.arm_timers(self.store, fx)
        fx.schedule(EXPIRE_OFFSETS_KEY, now_ms + self.cfg.offsets_retention_check_interval_ms)
        return self.finish(fx)

    # ---- inspection (tests, CLI, metrics) ----------------------------------

    def group(self, group_id: str) -> ClassicGroup | None:
        return self.store.get(group_id)

    def groups(self) -> list[ClassicGroup]:
        return list(self.store)

    def persisted(self, group_id: str) -> Any:
        """The group's last GroupMetadataValue in the log (None: none or tombstoned)."""
        return self.store.persisted(group_id)

    def pending_timers(self) -> dict[str, int]:
        return {k: deadline for k, (_, deadline) in self._timers.items()}

    # ---- internals ---------------------------------------------------------

    def finish(self, fx: Effects) -> Result:
        """The Result of the step `fx` ends; its write, if any, is the Result's
        `on_durable`, for the runtime's `WriteTracker`."""
        # its lists go to the Result and the write as they are (a commit's
        # step is otherwise half copies)
        timers = fx.timers
        if timers:
            for op in timers:
                if isinstance(op, Schedule):
                    assert isinstance(op.key, TimerKey)
                    self._timers[str(op.key)] = (op.key, op.deadline_ms)
                else:
                    self._timers.pop(str(op.key), None)
            timers = [
                Schedule(str(t.key), t.deadline_ms)
                if isinstance(t, Schedule)
                else Cancel(str(t.key))
                for t in timers
            ]
        write = None
        records = fx.records
        if records or fx.marker is not None or fx.continuations:
            write = Write.of(fx, self.domains)
            self.next_seq = fx.first_seq + len(records)
        return Result(records, fx.replies, timers, fx.events, write, fx.producer, fx.marker)

    def _is_loading(self) -> bool:
        return self.loading

    def _armed(self) -> list[TimerKey]:
        return [k for k, _ in self._timers.values()]

    def _group_error(self, group_id: str | None, request: Any) -> int | None:
        if group_id is None or (group_id == "" and not isinstance(request, _EMPTY_ID_OK)):
            return E.INVALID_GROUP_ID
        if self.loading:
            return E.COORDINATOR_LOAD_IN_PROGRESS
        if partition_for(group_id, self.cfg.num_partitions) != self.partition:
            return E.NOT_COORDINATOR
        return None

    # ---- dispatch ------------------------------------------------------------

    def _modern_describe(self, fx: Effects, rid: int, req: ConsumerGroupDescribe) -> None:
        errors = [self._group_error(gid, req) for gid in req.group_ids]
        modern.describe(self.store, fx, rid, req, errors)

    def _share_describe(self, fx: Effects, rid: int, req: ShareGroupDescribe) -> None:
        out = []
        for gid in req.group_ids:
            error = self._group_error(gid, req)
            group = self.store.share.get(gid)
            if error is not None:
                out.append({**share_describe.not_found(gid, ""), "error_code": error})
            elif group is None:
                other = gid in self.store.modern or self.store.get(gid) is not None
                msg = f"Group {gid} is not a share group." if other else f"Group {gid} not found."
                out.append(share_describe.not_found(gid, msg))
            else:
                out.append(share_describe.described(group, req.topic_names))
        fx.reply(rid, ShareGroupDescribeResponse(tuple(out)))

    def _complete_txn(self, fx: Effects, rid: int, req: rq.CompleteTxn) -> None:
        self.offsets.complete_txn(fx, rid, req)

    def replay_txn_offsets(
        self, producer_id: int, latest: Mapping[bytes, tuple[int, bytes | None]]
    ) -> None:
        """Offset records of a transaction still open at the end of the log
        (load path): pending, as they were before the restart."""
        for key, (offset, value) in latest.items():
            self.replay(key, value, offset, producer_id)

    def _fetch(self, fx: Effects, rid: int, req: rq.OffsetFetch) -> None:
        out = []
        for fg in req.groups:
            error = self._group_error(fg.group_id, req)
            cgroup = self.store.modern.get(fg.group_id)
            if error is None and cgroup is not None:
                error = modern.validate_fetch(cgroup, fg.member_id, fg.member_epoch)
            if error is not None:
                out.append(rs.FetchedGroup(fg.group_id, (), error))
            else:
                out.append(self.offsets.fetch(fg, req.require_stable))
        fx.reply(rid, rs.OffsetFetchResponse(tuple(out)))

    def _describe(self, fx: Effects, rid: int, req: rq.DescribeGroups) -> None:
        out = []
        for gid in req.groups:
            error = self._group_error(gid, req)
            if error is not None:
                out.append(rs.DescribedGroup(error, gid, "", "", ""))
            else:
                # a modern group is not a classic one: Kafka answers Dead
                described = admin.describe(gid, self.store.get(gid))
                if req.include_authorized_operations:
                    described = dataclasses.replace(
                        described, authorized_operations=rs.GROUP_AUTHORIZED_OPERATIONS
                    )
                out.append(described)
        fx.reply(rid, rs.DescribeGroupsResponse(tuple(out)))

    def _list(self, fx: Effects, rid: int, req: rq.ListGroups) -> None:
        if self.loading:
            fx.reply(rid, rs.ListGroupsResponse(E.COORDINATOR_LOAD_IN_PROGRESS))
            return
        groups = (
            tuple(
                admin.listing(g)
                for g in self.store
                if admin.listed(g, req.states_filter, req.types_filter)
                and g.group_id not in self.store.modern
            )
            + tuple(
                rs.ListedGroup(g.group_id, modern_describe.PROTOCOL_TYPE, g.state, "consumer")
                for g in modern.all_groups(self.store)
                if modern_describe.listed(g, req.states_filter, req.types_filter)
            )
            + tuple(
                rs.ListedGroup(g.group_id, share_describe.PROTOCOL_TYPE, g.state, "share")
                for g in self.store.share.values()
                if share_describe.listed(g, req.states_filter, req.types_filter)
            )
        )
        fx.reply(rid, rs.ListGroupsResponse(E.NONE, groups))

    def _delete_groups(self, fx: Effects, rid: int, req: rq.DeleteGroups) -> None:
        out = []
        appended = len(fx.records)
        for gid in req.groups:
            error = self._group_error(gid, req)
            if error is None and gid in self.store.share:
                share = self.store.share[gid]
                error = E.NON_EMPTY_GROUP if share.members else E.NONE
                if not share.members:
                    share_heartbeat.tombstones(self.store, fx, share)
            elif error is None and gid in self.store.modern:
                error = modern.delete_group(self.offsets, fx, self.store.modern[gid])
            elif error is None:
                group = self.store.get(gid)
                if group is None or group.is_(S.DEAD):
                    error = E.GROUP_ID_NOT_FOUND
                elif group.is_(S.EMPTY):
                    self.offsets.delete_all(group, fx)
                    error = E.NONE
                else:
                    error = E.NON_EMPTY_GROUP
            out.append(rs.DeletedGroup(gid, error))
        if len(fx.records) == appended:
            fx.reply(rid, rs.DeleteGroupsResponse(tuple(out)))
        else:
            fx.after_durable(partial(_groups_deleted, rid, tuple(out)))


def _groups_deleted(
    rid: int, deleted: tuple[rs.DeletedGroup, ...], error: int, fx: Effects
) -> None:
    """DeleteGroups' records are durable, or failed: then nothing was deleted."""
    failed = E.append_error_to_client(error)
    fx.reply(
        rid,
        rs.DeleteGroupsResponse(
            tuple(
                rs.DeletedGroup(d.group_id, failed if d.error_code == E.NONE else d.error_code)
                for d in deleted
            )
        ),
    )


def _in_store(on_timer: TimerHandler) -> Callable[[CoordinatorShard, Effects, TimerKey], None]:
    return lambda shard, fx, key: on_timer(shard.store, fx, key)


# what runs when a timer comes due, by its kind (`TimerKey.kind`): each group
# kind brings its own rows; offset expiry is the shard's
_TIMERS: dict[str, Callable[[CoordinatorShard, Effects, TimerKey], None]] = {
    EXPIRE_OFFSETS_KEY.kind: CoordinatorShard._expire_offsets,
    **{kind: _in_store(on) for kind, on in classic_timers.TIMERS.items()},
    **{kind: _in_store(on) for kind, on in modern.TIMERS.items()},
    share_heartbeat.SESSION: _in_store(share_heartbeat.session_expired),
}
assert len(_TIMERS) == 2 + len(classic_timers.TIMERS) + len(modern.TIMERS), "a kind twice"


# every coordinator request, by (group kind, request type): the groups' rows
# (`routes.GROUP_ROWS`: one per kind and request type) and the shard's own
# rows for requests over several groups or none (kind None)
_ROUTES: dict[tuple[str | None, type], Callable[[CoordinatorShard, Effects, int, Any], None]] = {
    **GROUP_ROWS,
    (None, rq.OffsetFetch): CoordinatorShard._fetch,
    (None, rq.DescribeGroups): CoordinatorShard._describe,
    (None, rq.ListGroups): CoordinatorShard._list,
    (None, rq.DeleteGroups): CoordinatorShard._delete_groups,
    (None, rq.CompleteTxn): CoordinatorShard._complete_txn,
    (None, ConsumerGroupDescribe): CoordinatorShard._modern_describe,
    (None, ShareGroupDescribe): CoordinatorShard._share_describe,
}
