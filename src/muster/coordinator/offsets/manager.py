"""Committed offsets (spec §9): commit with pending-until-durable, fetch,
OffsetDelete, DeleteGroups' offset cleanup and Kafka's expiry rules."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from functools import partial

from muster.coordinator import errors as E
from muster.coordinator import events as ev
from muster.coordinator.context import Effects, heartbeat_key, pending_key
from muster.coordinator.groups.classic.group import CONSUMER_PROTOCOL_TYPE, ClassicGroup
from muster.coordinator.groups.classic.members import reset_and_propagate_assignment_error
from muster.coordinator.groups.classic.state import GroupState as S
from muster.coordinator.groups.modern.group import ConsumerGroup
from muster.coordinator.groups.store import GroupStore
from muster.coordinator.offsets.state import (
    TP,
    CommittedOffset,
    GroupOffsets,
    drop_committed,
    put_committed,
)
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


def commit_response(
    topics: tuple[CommitTopic, ...], errors: dict[TP, int] | int
) -> OffsetCommitResponse:
    """The answer to an (Txn)OffsetCommit: per-partition errors, or one for all."""
    one = errors if isinstance(errors, int) else None
    out = []
    for t in topics:
        name = t.name
        parts = []
        for p in t.partitions:
            error = one if one is not None else errors[(name, p.partition)]  # type: ignore[index]
            parts.append(PartitionError(p.partition, error))
        out.append(TopicErrors(name, tuple(parts)))
    return OffsetCommitResponse(tuple(out))


# offsets one expiry step may drop: its tombstones are built, appended, fsynced
# and replayed as one piece of the loop's work, and a live commit waits behind
# at most one step (2,000: longest request during a 1M-offset expiry 0.37-0.6 s
# at load 7-9; 500: 0.23-0.29 s, the pass no longer)
EXPIRY_STEP_OFFSETS = 500


class OffsetManager:
    """Committed offsets of every group of one shard (Kafka's OffsetMetadataManager).
    Handlers decide and write records; `replay_offset` / `replay_marker` apply them."""

    def __init__(self, store: GroupStore) -> None:
        self.store = store
        self.groups: dict[str, GroupOffsets] = {}
        self.next_token = 0
        # transient: the groups an expiry pass has still to look at (a pass
        # runs in steps so that 100,000 groups never hold the shard at once)
        self._expiry_pass: deque[str] = deque()

    def of(self, group_id: str) -> GroupOffsets | None:
        return self.groups.get(group_id)

    def _of(self, group_id: str) -> GroupOffsets:
        offsets = self.groups.get(group_id)
        if offsets is None:
            offsets = self.groups[group_id] = GroupOffsets()
        return offsets

    def committed_map(self, group_id: str) -> dict[TP, CommittedOffset]:
        """The group's durable committed offsets, for replay to fill."""
        return self._of(group_id).committed

    def committed(self, group_id: str) -> dict[TP, CommittedOffset]:
        """The committed offsets a client sees (in-flight deletions hidden)."""
        offsets = self.groups.get(group_id)
        return {} if offsets is None else dict(offsets.visible_items())

    def has_offsets(self, group_id: str) -> bool:
        offsets = self.groups.get(group_id)
        return offsets is not None and offsets.has_any()

    # ---- replay: the only code that changes committed offsets -----------------

    def replay_offset(
        self,
        group_id: str,
        tp: TP,
        committed: CommittedOffset | None,
        seq: int,
        producer_id: int | None = None,
    ) -> None:
        """One OffsetCommit record at log position `seq` (`committed` None: a
        tombstone). With `producer_id` the record is part of that producer's
        transaction and waits for its marker."""
        if producer_id is not None:
            if committed is not None:
                self._of(group_id).txn.setdefault(producer_id, {})[tp] = committed
            return
        if committed is None:
            offsets = self.groups.get(group_id)
            if offsets is not None:
                drop_committed(offsets.committed, tp, seq)
                # and whatever open transactions hold for the partition (Kafka's
                # replay; the loader's TxnReplay gets the same by log position)
                for held in offsets.txn.values():
                    held.pop(tp, None)
            return
        # `_of` and `put_committed`, inline where they cannot differ: this
        # runs for every record of a load
        offsets = self.groups.get(group_id)
        if offsets is None:
            offsets = self.groups[group_id] = GroupOffsets()
        held = offsets.committed
        if tp in held:  # the apply rule decides
            put_committed(held, tp, committed)
        else:
            held[tp] = committed

    def replay_marker(self, producer_id: int, commit: bool) -> None:
        """A transaction marker: a commit moves the producer's offsets into the
        committed ones (unless a newer plain commit is already there, Kafka's
        rule by log position), an abort drops them."""
        for offsets in self.groups.values():
            pending = offsets.txn.pop(producer_id, None)
            if pending and commit:
                for tp, c in pending.items():
                    put_committed(offsets.committed, tp, c)

    def forget_if_idle(self, group_id: str) -> None:
        offsets = self.groups.get(group_id)
        if offsets is not None and offsets.idle():
            del self.groups[group_id]

    # ---- OffsetCommit ------------------------------------------------------

    def commit(self, fx: Effects, rid: int, req: OffsetCommit) -> None:
        group = self.store.get(req.group_id)
        if group is None:
            if req.generation_id >= 0:
                fx.reply(rid, commit_response(req.topics, E.ILLEGAL_GENERATION))
                return
            group = self.store.get_or_create(req.group_id)  # a simple (assign-mode) group
            group.state_timestamp = fx.now
        error = self._validate(group, req)
        if error is None and group.is_(S.COMPLETING_REBALANCE):
            error = E.REBALANCE_IN_PROGRESS
        if error is not None:
            fx.reply(rid, commit_response(req.topics, error))
            return
        member = group.members.get(req.member_id)
        if member is not None:  # a commit is as good as a heartbeat
            fx.schedule(
                heartbeat_key(group.group_id, member.member_id), fx.now + member.session_timeout_ms
            )
        self.store_offsets(group.group_id, fx, rid, req)

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
        group_id: str,
        fx: Effects,
        topics: tuple[CommitTopic, ...],
        retention_time_ms: int = -1,
    ) -> tuple[dict[TP, int], list[TP]]:
        """Writes the commit records of an (Txn)OffsetCommit; returns the
        per-partition results and the partitions written, in record order."""
        limit = self.store.cfg.offset_metadata_max_bytes
        results: dict[TP, int] = {}
        written: list[TP] = []
        expire_ts = fx.now + retention_time_ms if retention_time_ms >= 0 else -1
        for topic in topics:
            for p in topic.partitions:
                tp = (topic.name, p.partition)
                metadata = p.metadata or ""
                if len(metadata) > limit:
                    results[tp] = E.OFFSET_METADATA_TOO_LARGE
                    continue
                commit_ts = p.commit_timestamp if p.commit_timestamp >= 0 else fx.now
                # a commit with a retention time (v1-4) keeps no leader epoch
                epoch = p.leader_epoch if expire_ts < 0 else -1
                value = OffsetCommitValue(p.offset, epoch, metadata, commit_ts, expire_ts)
                fx.record(offset_commit_record(group_id, topic.name, p.partition, value))
                written.append(tp)
                results[tp] = E.NONE
        return results, written

    def store_offsets(self, group_id: str, fx: Effects, rid: int, req: OffsetCommit) -> None:
        """Writes a validated commit (any group type) and answers once durable."""
        results, written = self._offset_records(group_id, fx, req.topics, req.retention_time_ms)
        if not written:
            fx.reply(rid, commit_response(req.topics, results))
            return
        token = self._in_flight(group_id, written)
        fx.after_durable(partial(self._commit_written, group_id, rid, req, results, written, token))

    def _in_flight(self, group_id: str, written: list[TP]) -> int:
        """Marks the partitions of a commit being written (unstable, never
        expired, tombstoned by a deletion) until `_commit_written`."""
        token = self.next_token
        self.next_token += 1
        pending = self._of(group_id).pending
        for tp in written:
            pending.setdefault(tp, set()).add(token)
        return token

    def _commit_written(
        self,
        group_id: str,
        rid: int,
        req: OffsetCommit,
        results: dict[TP, int],
        written: list[TP],
        token: int,
        error: int,
        fx: Effects,
    ) -> None:
        """The commit's records are durable (the shard has replayed them) or failed."""
        offsets = self.groups.get(group_id)
        for tp in written:
            tokens = None if offsets is None else offsets.pending.get(tp)
            if tokens is not None:
                tokens.discard(token)
                if not tokens:
                    del offsets.pending[tp]  # type: ignore[union-attr]
            if error != E.NONE:
                results[tp] = E.append_error_to_client(error)
        fx.reply(rid, commit_response(req.topics, results))

    # ---- TxnOffsetCommit and transaction completion ---------------------------

    def txn_commit(
        self, fx: Effects, rid: int, req: TxnOffsetCommit, validated: bool = False
    ) -> None:
        """Kafka's handleTxnCommitOffsets: the records go to the log as one
        transactional batch of the producer; once durable they are pending
        for that producer until its marker commits or aborts them.
        `validated`: a consumer group's member checks were done already."""
        if validated:
            self._txn_records(fx, rid, req)
            return
        group = self.store.get(req.group_id)
        as_commit = OffsetCommit(
            req.group_id, req.topics, req.generation_id, req.member_id, req.group_instance_id
        )
        if group is None:
            if req.generation_id >= 0:
                fx.reply(rid, commit_response(as_commit.topics, E.ILLEGAL_GENERATION))
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
            fx.reply(rid, commit_response(as_commit.topics, error))
            return
        self._txn_records(fx, rid, req)

    def _txn_records(self, fx: Effects, rid: int, req: TxnOffsetCommit) -> None:
        results, written = self._offset_records(req.group_id, fx, req.topics)
        if not written:
            fx.reply(rid, commit_response(req.topics, results))
            return
        fx.producer = (req.producer_id, req.producer_epoch)
        # in flight like a plain commit: an expiry pass deciding meanwhile must
        # not tombstone the partition (Kafka applies the transactional offset
        # at write time, and expiry skips it; found by reliability/simulate.py)
        token = self._in_flight(req.group_id, written)
        as_commit = OffsetCommit(
            req.group_id, req.topics, req.generation_id, req.member_id, req.group_instance_id
        )
        fx.after_durable(
            partial(self._commit_written, req.group_id, rid, as_commit, results, written, token)
        )

    def complete_txn(self, fx: Effects, rid: int, req: CompleteTxn) -> None:
        """Writes the marker; once it is durable the shard replays it
        (`replay_marker`) and the transaction coordinator gets the outcome."""
        fx.marker = (req.producer_id, req.producer_epoch, req.commit)
        fx.after_durable(partial(_marker_written, rid))

    # ---- OffsetFetch -------------------------------------------------------

    def fetch(self, fg: FetchGroup, require_stable: bool) -> FetchedGroup:
        group = self.store.get(fg.group_id)
        if (group is None or group.is_(S.DEAD)) and fg.group_id not in self.store.modern:
            if fg.topics is None:
                return FetchedGroup(fg.group_id, ())
            return FetchedGroup(
                fg.group_id,
                tuple(
                    FetchedTopic(t.name, tuple(FetchedPartition(p, -1) for p in t.partitions))
                    for t in fg.topics
                ),
            )
        offsets = self.groups.get(fg.group_id) or GroupOffsets()

        def one(tp: TP) -> FetchedPartition:
            if require_stable and (
                tp in offsets.pending or any(tp in pending for pending in offsets.txn.values())
            ):
                return FetchedPartition(tp[1], -1, -1, "", E.UNSTABLE_OFFSET_COMMIT)
            committed = offsets.visible(tp)
            if committed is None:
                return FetchedPartition(tp[1], -1)
            return FetchedPartition(
                tp[1], committed.offset, committed.leader_epoch, committed.metadata
            )

        if fg.topics is None:
            by_topic: dict[str, list[int]] = {}
            for topic, partition in sorted(tp for tp, _ in offsets.visible_items()):
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

    def removable(self, group_id: str) -> set[TP]:
        """Partitions with an offset committed, in flight or held by an open
        transaction (Kafka tombstones those too). An offset hidden by
        a tombstone in flight counts: a deletion answered after its own
        tombstone is durable must not lean on an earlier one that may fail."""
        offsets = self.groups.get(group_id)
        if offsets is None:
            return set()
        in_txn = {tp for held in offsets.txn.values() for tp in held}
        return set(offsets.committed) | set(offsets.pending) | in_txn

    def remove_offsets(self, group: ClassicGroup, tps: Iterable[TP], fx: Effects) -> int:
        """Tombstones for these partitions (committed or still pending). Until
        they are durable the offsets are hidden; replaying the tombstones
        removes them, a failed append shows them again."""
        offsets = self.groups.get(group.group_id)
        if offsets is None:
            return 0
        removing: list[tuple[TP, int]] = []
        in_txn = {tp for held in offsets.txn.values() for tp in held}
        for tp in tps:
            if tp not in offsets.committed and tp not in offsets.pending and tp not in in_txn:
                continue
            seq = fx.record(offset_commit_record(group.group_id, tp[0], tp[1], None))
            offsets.deleting.setdefault(tp, set()).add(seq)
            removing.append((tp, seq))
        if removing:
            fx.after_durable(partial(self._tombstones_written, group.group_id, removing))
        return len(removing)

    def _tombstones_written(
        self, group_id: str, removing: list[tuple[TP, int]], error: int, fx: Effects
    ) -> None:
        """Durable: replay already removed the offsets. Failed: nothing was
        removed. Either way the tombstones are no longer in flight."""
        offsets = self.groups.get(group_id)
        if offsets is None:
            return
        for tp, seq in removing:
            seqs = offsets.deleting.get(tp)
            if seqs is not None:
                seqs.discard(seq)
                if not seqs:
                    del offsets.deleting[tp]
        self.forget_if_idle(group_id)

    def remove_group_if_dead(self, group: ClassicGroup, fx: Effects, cause: str) -> bool:
        """An Empty group without offsets becomes Dead and is tombstoned."""
        if group.is_(S.EMPTY) and not self.has_offsets(group.group_id):
            group.transition_to(S.DEAD, cause, fx)
        if not group.is_(S.DEAD):
            return False
        # members admitted but not yet joined go with the group, and so do their
        # timers (the simulation found them left behind for a deleted group)
        for member_id in group.pending_members:
            fx.cancel(pending_key(group.group_id, member_id))
        group.pending_members.clear()
        fx.record(group_metadata_record(group.group_id, None))
        self.store.remove(group.group_id)
        fx.after_durable(partial(self._group_tombstone_written, group))
        return True

    def _group_tombstone_written(self, group: ClassicGroup, error: int, fx: Effects) -> None:
        if error == E.NONE:
            self.forget_if_idle(group.group_id)
            return
        # the tombstone is not in the log: the group lives on there, so here too
        group.state = S.EMPTY  # an undo, not a transition
        current = self.store.get(group.group_id)
        if current is None:
            self.store.groups[group.group_id] = group
            return
        old = self.store.persisted(group.group_id)
        if not current.has_record and old is not None:
            # a new incarnation without a record of its own continues the old one;
            # if the old group's own last store failed, the log still holds an
            # older state than anything live: a store is owed (not at rest)
            owed = group.persisted_seq != group.store_seq
            if current.persisted_seq == current.store_seq:
                # (a store of its own still in flight settles this itself: durable,
                # it is at rest; failed, a store is owed - found by the simulation)
                current.persisted_seq = current.store_seq - (1 if owed else 0)
            current.has_record = True
            if current.generation < old.generation:
                # its own stores in flight describe an older generation than
                # it has now: one more store is owed (found by the simulation)
                if current.is_(S.COMPLETING_REBALANCE):
                    # the leader's store of the old generation will not finish
                    # this rebalance (its generation is gone): members waiting
                    # for their assignment are told to rejoin, never left
                    # waiting (found by the simulation)
                    reset_and_propagate_assignment_error(current, fx, E.REBALANCE_IN_PROGRESS)
                current.generation = old.generation
                current.store_seq += 1
            if not current.members and current.is_(S.EMPTY):
                current.protocol_type = current.protocol_type or old.protocol_type or None
                cst = old.current_state_timestamp
                current.state_timestamp = cst if cst >= 0 else None

    def delete_all(self, group: ClassicGroup, fx: Effects) -> None:
        """DeleteGroups on an Empty group."""
        self.remove_offsets(group, self.removable(group.group_id), fx)
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

    def expire(self, fx: Effects, budget: int = EXPIRY_STEP_OFFSETS) -> bool:
        """One step of an expiry pass: groups are examined until about `budget`
        offsets were expired. True when the pass is over; False when the shard
        should run the next step once the requests queued meanwhile are served."""
        retention = self.store.cfg.offsets_retention_ms
        now = fx.now
        if not self._expiry_pass:
            self._expiry_pass.extend(group.group_id for group in self.store)
            self._expiry_pass.extend(self.store.modern)
        removed = 0
        while self._expiry_pass and removed < budget:
            group_id = self._expiry_pass.popleft()
            cgroup = self.store.modern.get(group_id)
            if cgroup is not None:
                removed += self._expire_consumer_group(cgroup, fx, now, retention)
                continue
            group = self.store.get(group_id)
            if group is None:
                continue
            offsets = self.groups.get(group.group_id)
            if offsets is not None:
                # nor a partition a transaction holds an offset for (Kafka's
                # rule): its marker may be in flight, and a tombstone written
                # after it would delete the transaction's fresh offset
                in_txn = {tp for held in offsets.txn.values() for tp in held}
                expired = [
                    tp
                    for tp, c in offsets.visible_items()
                    if tp not in offsets.pending
                    and tp not in in_txn
                    and _expired(group, tp, c, now, retention)
                ]
                self.remove_offsets(group, expired, fx)
                removed += len(expired)
            self.remove_group_if_dead(group, fx, ev.OFFSETS_EXPIRED)
        return not self._expiry_pass

    def _expire_consumer_group(
        self, group: ConsumerGroup, fx: Effects, now: int, retention: int
    ) -> int:
        """Kafka's rule for consumer groups: offsets of a topic some member
        subscribes to never expire; others once the retention has passed
        since their commit (or at their explicit expiry)."""
        offsets = self.groups.get(group.group_id)
        if offsets is None:
            return 0
        subscribed = group.subscribed_topics()
        expired = [
            tp
            for tp, c in offsets.visible_items()
            if tp not in offsets.pending
            and tp[0] not in subscribed
            and (
                now >= c.expire_timestamp
                if c.expire_timestamp >= 0
                else now - c.commit_timestamp >= retention
            )
        ]
        self.remove_offsets(group, expired, fx)
        return len(expired)


def _expired(group: ClassicGroup, tp: TP, c: CommittedOffset, now: int, retention: int) -> bool:
    if group.protocol_type is not None and group.is_(S.EMPTY):
        base = group.state_timestamp if group.state_timestamp is not None else c.commit_timestamp
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


def _marker_written(rid: int, error: int, fx: Effects) -> None:
    fx.reply(rid, error)
