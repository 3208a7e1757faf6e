"""Committed offsets (spec §9): commit with pending-until-durable, fetch,
OffsetDelete, DeleteGroups' offset cleanup and Kafka's expiry rules."""

from __future__ import annotations

from collections.abc import Iterable

from muster.coordinator import errors as E
from muster.coordinator import events as ev
from muster.coordinator.context import Effects, heartbeat_key
from muster.coordinator.groups.classic.group import (
    CONSUMER_PROTOCOL_TYPE,
    ClassicGroup,
    CommittedOffset,
)
from muster.coordinator.groups.classic.state import GroupState as S
from muster.coordinator.groups.store import GroupStore
from muster.coordinator.requests import (
    CommitTopic,
    CompleteTxn,
    FetchGroup,
    OffsetCommit,
    OffsetDelete,
    TxnOffsetCommit,
)
from muster.coordinator.responses import (
    FetchedGroup,
    FetchedPartition,
    FetchedTopic,
    OffsetCommitResponse,
    OffsetDeleteResponse,
    PartitionError,
    TopicErrors,
)
from muster.records.offsets_topic import (
    OffsetCommitValue,
    group_metadata_record,
    offset_commit_record,
)

TP = tuple[str, int]


def commit_response(
    topics: tuple[CommitTopic, ...], errors: dict[TP, int] | int
) -> OffsetCommitResponse:
    """The answer to an (Txn)OffsetCommit: per-partition errors, or one for all."""
    return OffsetCommitResponse(
        tuple(
            TopicErrors(
                t.name,
                tuple(
                    PartitionError(
                        p.partition,
                        errors if isinstance(errors, int) else errors[(t.name, p.partition)],
                    )
                    for p in t.partitions
                ),
            )
            for t in topics
        )
    )


def _all_errors(req: OffsetCommit, error: int) -> OffsetCommitResponse:
    return commit_response(req.topics, error)


class OffsetManager:
    def __init__(self, store: GroupStore) -> None:
        self.store = store
        self.next_seq = 0  # orders commit records; the log offset after replay
        self.next_token = 0

    # ---- OffsetCommit ------------------------------------------------------

    def commit(self, fx: Effects, rid: int, req: OffsetCommit) -> None:
        group = self.store.get(req.group_id)
        if group is None:
            if req.generation_id >= 0:
                fx.reply(rid, _all_errors(req, E.ILLEGAL_GENERATION))
                return
            group = self.store.get_or_create(req.group_id)  # a simple (assign-mode) group
            group.state_timestamp = fx.now
        error = self._validate(group, req)
        if error is None and group.is_(S.COMPLETING_REBALANCE):
            error = E.REBALANCE_IN_PROGRESS
        if error is not None:
            fx.reply(rid, _all_errors(req, error))
            return
        member = group.members.get(req.member_id)
        if member is not None:  # a commit is as good as a heartbeat
            fx.schedule(
                heartbeat_key(group.group_id, member.member_id), fx.now + member.session_timeout_ms
            )
        self._store_offsets(group, fx, rid, req)

    def _validate(self, group: ClassicGroup, req: OffsetCommit) -> int | None:
        if group.is_(S.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE
        if req.generation_id < 0 and group.is_(S.EMPTY):
            return None  # admin clients and assign()-mode consumers
        if req.generation_id >= 0 or req.member_id != "" or req.group_instance_id is not None:
            error = group.validate_current_member(req.member_id, req.group_instance_id)
            if error is not None:
                return error
            if req.generation_id != group.generation:
                return E.ILLEGAL_GENERATION
            return None
        if not group.is_(S.EMPTY):
            return E.UNKNOWN_MEMBER_ID  # only members commit to a live group
        return None

    def _offset_records(
        self,
        group: ClassicGroup,
        fx: Effects,
        topics: tuple[CommitTopic, ...],
        retention_time_ms: int = -1,
    ) -> tuple[dict[TP, int], list[tuple[TP, CommittedOffset]]]:
        """Records the commit records of an (Txn)OffsetCommit; returns the
        per-partition results and the offsets written, in record order."""
        limit = self.store.cfg.offset_metadata_max_bytes
        results: dict[TP, int] = {}
        writes: list[tuple[TP, CommittedOffset]] = []
        for topic in topics:
            for p in topic.partitions:
                tp = (topic.name, p.partition)
                metadata = p.metadata or ""
                if len(metadata) > limit:
                    results[tp] = E.OFFSET_METADATA_TOO_LARGE
                    continue
                commit_ts = p.commit_timestamp if p.commit_timestamp >= 0 else fx.now
                expire_ts = fx.now + retention_time_ms if retention_time_ms >= 0 else -1
                value = OffsetCommitValue(
                    offset=p.offset,
                    leader_epoch=p.leader_epoch if expire_ts < 0 else -1,
                    metadata=metadata,
                    commit_timestamp=commit_ts,
                    expire_timestamp=expire_ts,
                )
                fx.record(offset_commit_record(group.group_id, topic.name, p.partition, value))
                committed = CommittedOffset(
                    value.offset,
                    value.leader_epoch,
                    value.metadata,
                    value.commit_timestamp,
                    value.expire_timestamp,
                    self.next_seq,
                )
                self.next_seq += 1
                writes.append((tp, committed))
                results[tp] = E.NONE
        return results, writes

    def _store_offsets(self, group: ClassicGroup, fx: Effects, rid: int, req: OffsetCommit) -> None:
        results, writes = self._offset_records(group, fx, req.topics, req.retention_time_ms)
        if not writes:
            fx.reply(rid, commit_response(req.topics, results))
            return
        token = self.next_token
        self.next_token += 1
        for tp, _ in writes:
            group.pending_offsets.setdefault(tp, set()).add(token)

        def durable(error: int, fx2: Effects) -> None:
            for tp, committed in writes:
                tokens = group.pending_offsets.get(tp)
                if tokens is not None:
                    tokens.discard(token)
                    if not tokens:
                        del group.pending_offsets[tp]
                if error != E.NONE:
                    results[tp] = E.append_error_to_client(error)
                elif committed.record_seq < group.cleared(tp):
                    # a deletion was appended after our record: it wins, unless
                    # its own append fails (then this value comes back)
                    old = group.suppressed.get(tp)
                    if old is None or old.record_seq < committed.record_seq:
                        group.suppressed[tp] = committed
                else:
                    current = group.offsets.get(tp)
                    if current is None or current.record_seq < committed.record_seq:
                        group.offsets[tp] = committed
            fx2.reply(rid, commit_response(req.topics, results))

        fx.after_durable(durable)

    # ---- TxnOffsetCommit and transaction completion ---------------------------

    def txn_commit(self, fx: Effects, rid: int, req: TxnOffsetCommit) -> None:
        """Kafka's handleTxnCommitOffsets: the records go to the log as one
        transactional batch of the producer; once durable they are pending
        for that producer until its marker commits or aborts them."""
        group = self.store.get(req.group_id)
        as_commit = OffsetCommit(
            req.group_id, req.topics, req.generation_id, req.member_id, req.group_instance_id
        )
        if group is None:
            if req.generation_id >= 0:
                fx.reply(rid, _all_errors(as_commit, E.ILLEGAL_GENERATION))
                return
            group = self.store.get_or_create(req.group_id)
            group.state_timestamp = fx.now
        error = None
        if group.is_(S.DEAD):
            error = E.COORDINATOR_NOT_AVAILABLE
        elif req.generation_id >= 0 or req.member_id or req.group_instance_id is not None:
            error = group.validate_current_member(req.member_id, req.group_instance_id)
            if error is None and req.generation_id != group.generation:
                error = E.ILLEGAL_GENERATION
        if error is not None:
            fx.reply(rid, _all_errors(as_commit, error))
            return
        results, writes = self._offset_records(group, fx, req.topics)
        if not writes:
            fx.reply(rid, commit_response(req.topics, results))
            return
        fx.producer = (req.producer_id, req.producer_epoch)
        pid = req.producer_id

        def durable(error: int, fx2: Effects) -> None:
            if error != E.NONE:
                for tp, _ in writes:
                    results[tp] = E.append_error_to_client(error)
            else:
                pending = group.txn_offsets.setdefault(pid, {})
                for tp, committed in writes:
                    pending[tp] = committed
            fx2.reply(rid, commit_response(req.topics, results))

        fx.after_durable(durable)

    def complete_txn(self, fx: Effects, rid: int, req: CompleteTxn) -> None:
        """Writes the marker; once it is durable a commit moves the producer's
        pending offsets into the committed ones (unless a newer plain commit
        of the same partition is already there, as Kafka decides by log
        position), an abort drops them."""
        fx.marker = (req.producer_id, req.producer_epoch, req.commit)
        pid = req.producer_id

        def durable(error: int, fx2: Effects) -> None:
            if error == E.NONE:
                for group in self.store:
                    pending = group.txn_offsets.pop(pid, None)
                    if not pending or not req.commit:
                        continue
                    for tp, committed in pending.items():
                        current = group.offsets.get(tp)
                        if current is None or current.record_seq < committed.record_seq:
                            group.offsets[tp] = committed
            fx2.reply(rid, error)

        fx.after_durable(durable)

    # ---- OffsetFetch -------------------------------------------------------

    def fetch(self, fg: FetchGroup, require_stable: bool) -> FetchedGroup:
        group = self.store.get(fg.group_id)
        if group is None or group.is_(S.DEAD):
            if fg.topics is None:
                return FetchedGroup(fg.group_id, ())
            return FetchedGroup(
                fg.group_id,
                tuple(
                    FetchedTopic(t.name, tuple(FetchedPartition(p, -1) for p in t.partitions))
                    for t in fg.topics
                ),
            )

        def one(tp: TP) -> FetchedPartition:
            if require_stable and (
                tp in group.pending_offsets
                or any(tp in pending for pending in group.txn_offsets.values())
            ):
                return FetchedPartition(tp[1], -1, -1, "", E.UNSTABLE_OFFSET_COMMIT)
            committed = group.offsets.get(tp)
            if committed is None:
                return FetchedPartition(tp[1], -1)
            return FetchedPartition(
                tp[1], committed.offset, committed.leader_epoch, committed.metadata
            )

        if fg.topics is None:
            by_topic: dict[str, list[int]] = {}
            for topic, partition in sorted(group.offsets):
                by_topic.setdefault(topic, []).append(partition)
            return FetchedGroup(
                fg.group_id,
                tuple(
                    FetchedTopic(t, tuple(one((t, p)) for p in parts))
                    for t, parts in by_topic.items()
                ),
            )
        return FetchedGroup(
            fg.group_id,
            tuple(
                FetchedTopic(t.name, tuple(one((t.name, p)) for p in t.partitions))
                for t in fg.topics
            ),
        )

    # ---- removal -----------------------------------------------------------

    def remove_offsets(self, group: ClassicGroup, tps: Iterable[TP], fx: Effects) -> int:
        """Tombstones for these partitions (committed or still pending). The
        removal shows at once; should the tombstones' append fail, it is undone."""
        seq = self.next_seq
        self.next_seq += 1
        undo: dict[TP, CommittedOffset | None] = {}
        for tp in tps:
            removed = group.offsets.pop(tp, None)
            if removed is None and tp not in group.pending_offsets:
                continue
            fx.record(offset_commit_record(group.group_id, tp[0], tp[1], None))
            undo[tp] = removed
            group.clears.setdefault(tp, set()).add(seq)
        if not undo:
            return 0

        def durable(error: int, fx2: Effects) -> None:
            for tp, removed in undo.items():
                clears = group.clears.get(tp, set())
                suppressed = group.suppressed.get(tp)
                if error == E.NONE:
                    # our tombstone is in the log: older deletions and values are moot
                    group.clears[tp] = {x for x in clears if x >= seq}
                    if suppressed is not None and suppressed.record_seq < seq:
                        del group.suppressed[tp]
                    continue
                clears.discard(seq)
                if not clears:
                    group.clears.pop(tp, None)
                candidates = [c for c in (removed, suppressed, group.offsets.get(tp)) if c]
                if not candidates:
                    continue
                best = max(candidates, key=lambda c: c.record_seq)
                if best.record_seq > group.cleared(tp):
                    group.offsets[tp] = best
                    group.suppressed.pop(tp, None)
                else:  # another deletion still in flight covers it
                    group.suppressed[tp] = best

        fx.after_durable(durable)
        return len(undo)

    def remove_group_if_dead(self, group: ClassicGroup, fx: Effects, cause: str) -> bool:
        """An Empty group without offsets becomes Dead and is tombstoned."""
        if group.is_(S.EMPTY) and not group.has_offsets():
            group.transition_to(S.DEAD, cause, fx)
        if not group.is_(S.DEAD):
            return False
        fx.record(group_metadata_record(group.group_id, None))
        self.store.remove(group.group_id)

        def durable(error: int, fx2: Effects) -> None:
            if error == E.NONE:
                return
            # the tombstone is not in the log: the group lives on there, so here too
            group.state = S.EMPTY  # an undo, not a transition
            current = self.store.get(group.group_id)
            if current is None:
                self.store.groups[group.group_id] = group
                return
            for tp, c in group.offsets.items():
                if c.record_seq < current.cleared(tp):
                    held = current.suppressed.get(tp)
                    if held is None or held.record_seq < c.record_seq:
                        current.suppressed[tp] = c
                    continue
                mine = current.offsets.get(tp)
                if mine is None or mine.record_seq < c.record_seq:
                    current.offsets[tp] = c
            if current.persisted is None and group.persisted is not None:
                # a new incarnation without a record of its own continues the old one
                old = group.persisted
                current.persisted = old
                # if the old group's own last store failed, the log still holds an
                # older state than anything live: a store is owed (not at rest)
                owed = group.persisted_seq != group.store_seq
                current.persisted_seq = current.store_seq - (1 if owed else 0)
                current.generation = max(current.generation, old.generation)
                if not current.members and current.is_(S.EMPTY):
                    current.protocol_type = current.protocol_type or old.protocol_type or None
                    cst = old.current_state_timestamp
                    current.state_timestamp = cst if cst >= 0 else None

        fx.after_durable(durable)
        return True

    def delete_all(self, group: ClassicGroup, fx: Effects) -> None:
        """DeleteGroups on an Empty group."""
        self.remove_offsets(group, set(group.offsets) | set(group.pending_offsets), fx)
        group.transition_to(S.DEAD, ev.GROUP_DELETED, fx)
        self.remove_group_if_dead(group, fx, ev.GROUP_DELETED)

    # ---- OffsetDelete ------------------------------------------------------

    def offset_delete(self, fx: Effects, req: OffsetDelete) -> OffsetDeleteResponse:
        group = self.store.get(req.group_id)
        if group is None or group.is_(S.DEAD):
            return OffsetDeleteResponse(E.GROUP_ID_NOT_FOUND)
        requested = [(t.name, p) for t in req.topics for p in t.partitions]
        errors: dict[TP, int] = {}
        if group.is_(S.EMPTY):
            eligible = requested
        elif group.protocol_type == CONSUMER_PROTOCOL_TYPE:
            eligible = [tp for tp in requested if not group.is_subscribed_to(tp[0])]
            for tp in requested:
                if group.is_subscribed_to(tp[0]):
                    errors[tp] = E.GROUP_SUBSCRIBED_TO_TOPIC
        else:
            return OffsetDeleteResponse(E.NON_EMPTY_GROUP)
        if eligible:
            self.remove_offsets(group, eligible, fx)
            for tp in eligible:
                errors[tp] = E.NONE
            self.remove_group_if_dead(group, fx, ev.GROUP_DELETED)
        return OffsetDeleteResponse(
            E.NONE,
            tuple(
                TopicErrors(
                    t.name, tuple(PartitionError(p, errors[(t.name, p)]) for p in t.partitions)
                )
                for t in req.topics
            ),
        )

    # ---- expiry ------------------------------------------------------------

    def expire(self, fx: Effects) -> None:
        retention = self.store.cfg.offsets_retention_ms
        now = fx.now
        for group in self.store:
            expired = [
                tp for tp, c in group.offsets.items() if self._expired(group, tp, c, now, retention)
            ]
            self.remove_offsets(group, expired, fx)
            self.remove_group_if_dead(group, fx, ev.OFFSETS_EXPIRED)

    @staticmethod
    def _expired(group: ClassicGroup, tp: TP, c: CommittedOffset, now: int, retention: int) -> bool:
        if tp in group.pending_offsets:
            return False
        if group.protocol_type is not None and group.is_(S.EMPTY):
            base = (
                group.state_timestamp if group.state_timestamp is not None else (c.commit_timestamp)
            )
        elif (
            group.protocol_type == CONSUMER_PROTOCOL_TYPE
            and group.is_(S.STABLE)
            and group.subscribed_topics is not None
        ):
            if tp[0] in group.subscribed_topics:
                return False
            base = c.commit_timestamp
        elif group.protocol_type is None:
            base = c.commit_timestamp
        else:
            return False
        if c.expire_timestamp >= 0:
            return now >= c.expire_timestamp
        return now - base >= retention
