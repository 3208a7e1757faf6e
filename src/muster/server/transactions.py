"""The transaction coordinator's runtime: `__transaction_state`, markers, timeouts.

The decisions are `muster.transactions.core`'s; this module makes them
durable and acts on them. Every state change is appended to the
transactional id's `__transaction_state` partition (Kafka's record schemas)
and fsynced before the client hears of it. Ending a transaction writes
PrepareCommit/PrepareAbort, then one marker per partition in the
transaction (data partitions directly, `__consumer_offsets` partitions
through the group coordinator's shard, which also commits or drops the
transaction's offsets), waits for all of them to be durable, and writes
CompleteCommit/CompleteAbort. A restart finds any Prepare state in the log
and finishes it before serving. Requests for one transactional id run one
at a time (a lock per id).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from muster.coordinator.partitioning import partition_for
from muster.log.latest import collect_log
from muster.records.batch import build_batch
from muster.records.errors import CodedError
from muster.records.transaction_log import (
    decode_txn_key,
    decode_txn_value,
    encode_txn_key,
    encode_txn_value,
    value_partitions,
)
from muster.server.clock import now_ms
from muster.server.group_runtime.runtime import OFFSETS_TOPIC, GroupCoordinator
from muster.server.state import BrokerState
from muster.transactions import core
from muster.transactions.core import TxnMetadata, TxnStatus

if TYPE_CHECKING:
    from muster.coordinator import requests as rq

log = logging.getLogger(__name__)

TXN_TOPIC = "__transaction_state"
TXN_TOPIC_CONFIGS = {"cleanup.policy": "compact", "segment.bytes": str(100 << 20)}
COORDINATOR_NOT_AVAILABLE = 15


class TransactionCoordinator:
    def __init__(self, state: BrokerState, groups: GroupCoordinator) -> None:
        self.state = state
        self.groups = groups
        self.txns: dict[str, TxnMetadata] = {}
        self.loaded = False
        self.max_timeout_ms = int(state.config["transaction.max.timeout.ms"])
        self.cleanup_interval_ms = int(
            state.config["transaction.abort.timed.out.transaction.cleanup.interval.ms"]
        )
        self._locks: dict[str, asyncio.Lock] = {}
        self._tasks: list[asyncio.Task[None]] = []
        # Like Kafka, the topic is created on first use: brokers that never
        # see a transaction do not pay for its partitions.
        existing = state.logs.topic(TXN_TOPIC)
        self.num_partitions: int | None = existing.num_partitions if existing else None

    # ---- lifecycle -----------------------------------------------------

    def _partitions(self) -> int:
        if self.num_partitions is None:
            existing = self.state.logs.topic(TXN_TOPIC)
            if existing is not None:  # a client's CreateTopics got there first (kafka-diff)
                self.num_partitions = existing.num_partitions
                return self.num_partitions
            wanted = int(self.state.config["transaction.state.log.num.partitions"])
            self.state.logs.create_topic(TXN_TOPIC, wanted, TXN_TOPIC_CONFIGS)
            self.num_partitions = wanted
        return self.num_partitions

    def _load(self) -> None:
        """Replays `__transaction_state` (a worker thread): the last value of each id."""
        for p in range(self.num_partitions or 0):
            plog = self.state.logs.get(TXN_TOPIC, p)
            if plog is None:
                continue
            for key, (_, value) in collect_log(plog).items():
                txn_id = decode_txn_key(bytes(key))
                if txn_id is None:
                    continue
                if value is None:
                    self.txns.pop(txn_id, None)
                    continue
                v = decode_txn_value(bytes(value))
                self.txns[txn_id] = TxnMetadata(
                    txn_id,
                    v.producer_id,
                    v.producer_epoch,
                    v.transaction_timeout_ms,
                    TxnStatus(v.transaction_status),
                    frozenset(value_partitions(v)),
                    v.transaction_start_timestamp_ms,
                    v.transaction_last_update_timestamp_ms,
                )

    async def start(self) -> None:
        """Loads, waits for the group coordinator (markers for offsets go
        through it), finishes transactions a crash left half-ended, then serves."""
        await asyncio.to_thread(self._load)
        if self.groups.loader is not None:
            await asyncio.shield(self.groups.loader)
        for meta in list(self.txns.values()):
            if meta.status in core.PREPARING:
                async with self._lock(meta.transactional_id):
                    await self._finish(meta)
        self.loaded = True
        log.info("transaction coordinator loaded %d transactional ids", len(self.txns))
        self._tasks.append(asyncio.create_task(self._abort_timed_out(), name="txn-timeouts"))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass

    def _lock(self, txn_id: str) -> asyncio.Lock:
        lock = self._locks.get(txn_id)
        if lock is None:
            lock = self._locks[txn_id] = asyncio.Lock()
        return lock

    # ---- the APIs ----------------------------------------------------------

    async def init_producer_id(
        self, txn_id: str, timeout_ms: int, expected: tuple[int, int] | None
    ) -> tuple[int, int, int]:
        """(error, producer id, epoch)."""
        async with self._lock(txn_id):
            meta = self.txns.get(txn_id)
            fresh = -1
            if meta is None or meta.producer_epoch + 2 >= core.MAX_EPOCH:
                fresh = self.state.producer_ids.allocate()
            plan = core.init_producer_id(
                meta, txn_id, timeout_ms, self.max_timeout_ms, expected, now_ms(), fresh
            )
            if plan.error or plan.final is None:
                return plan.error, -1, -1
            try:
                if plan.abort_first is not None:
                    await self._persist(plan.abort_first)
                    await self._finish(plan.abort_first)
                if plan.final is not meta:
                    await self._persist(plan.final)
            except (OSError, CodedError) as exc:
                log.error("transaction state of %r not written: %s", txn_id, exc)
                return COORDINATOR_NOT_AVAILABLE, -1, -1
            return core.NONE, plan.final.producer_id, plan.final.producer_epoch

    async def add_partitions(
        self, txn_id: str, producer_id: int, epoch: int, partitions: list[tuple[str, int]]
    ) -> dict[tuple[str, int], int]:
        unknown = {tp for tp in partitions if self.state.logs.get(*tp) is None}
        if unknown:
            return {
                tp: core.UNKNOWN_TOPIC_OR_PARTITION
                if tp in unknown
                else core.OPERATION_NOT_ATTEMPTED
                for tp in partitions
            }
        error = await self._add(txn_id, producer_id, epoch, frozenset(partitions))
        return dict.fromkeys(partitions, error)

    async def add_offsets(self, txn_id: str, producer_id: int, epoch: int, group_id: str) -> int:
        partition = partition_for(group_id, len(self.groups.shards))
        return await self._add(txn_id, producer_id, epoch, frozenset({(OFFSETS_TOPIC, partition)}))

    async def _add(
        self, txn_id: str, producer_id: int, epoch: int, partitions: frozenset[tuple[str, int]]
    ) -> int:
        async with self._lock(txn_id):
            error, updated = core.add_partitions(
                self.txns.get(txn_id), producer_id, epoch, partitions, now_ms()
            )
            if error or updated is None:
                return error
            try:
                await self._persist(updated)
            except (OSError, CodedError) as exc:
                log.error("transaction state of %r not written: %s", txn_id, exc)
                return COORDINATOR_NOT_AVAILABLE
            return core.NONE

    async def end_txn(self, txn_id: str, producer_id: int, epoch: int, commit: bool) -> int:
        async with self._lock(txn_id):
            plan = core.end_txn(self.txns.get(txn_id), producer_id, epoch, commit, now_ms())
            if plan.error or plan.prepare is None:
                return plan.error
            try:
                await self._persist(plan.prepare)
                await self._finish(plan.prepare)
            except (OSError, CodedError) as exc:
                log.error("ending the transaction of %r failed: %s", txn_id, exc)
                return COORDINATOR_NOT_AVAILABLE
            return core.NONE

    # ---- internals -----------------------------------------------------------

    async def _persist(self, meta: TxnMetadata) -> None:
        partition = partition_for(meta.transactional_id, self._partitions())
        plog = self.state.logs.get(TXN_TOPIC, partition)
        assert plog is not None
        value = encode_txn_value(
            meta.producer_id,
            meta.producer_epoch,
            meta.timeout_ms,
            int(meta.status),
            meta.partitions,
            meta.last_update_ms,
            meta.start_ms,
        )
        now = now_ms()
        plog.append(
            build_batch([(encode_txn_key(meta.transactional_id), value)], timestamp_ms=now), now
        )
        self.state.durability.appended(plog, latency_bound=True)
        await self.state.durability.wait(plog)
        self.txns[meta.transactional_id] = meta

    async def _finish(self, prepared: TxnMetadata) -> None:
        """Markers for a PrepareCommit/PrepareAbort, then the Complete state."""
        # the core's requests (~15 ms of dataclasses) only once a transaction ends
        from muster.coordinator import requests as rq

        commit = prepared.status == TxnStatus.PREPARE_COMMIT
        waits: list[Awaitable[Any]] = []
        touched = []
        now = now_ms()
        for topic, partition in sorted(prepared.partitions):
            if topic == OFFSETS_TOPIC and partition < len(self.groups.shards):
                request = rq.CompleteTxn(prepared.producer_id, prepared.producer_epoch, commit)
                waits.append(self._offsets_marker(partition, request))
                continue
            plog = self.state.logs.get(topic, partition)
            if plog is None:
                continue  # deleted meanwhile: nothing to mark
            plog.append_marker(prepared.producer_id, prepared.producer_epoch, commit, 0, now)
            self.state.durability.appended(plog, latency_bound=True)
            touched.append(plog)
        waits.extend(self.state.durability.wait(plog) for plog in touched)
        await asyncio.gather(*waits)
        await self._persist(core.complete(prepared, now_ms()))

    async def _offsets_marker(self, partition: int, request: rq.CompleteTxn) -> None:
        error = await self.groups.shards[partition].call(request)
        if error:
            raise OSError(f"marker on {OFFSETS_TOPIC}-{partition} failed with error {error}")

    async def _abort_timed_out(self) -> None:
        while True:
            await asyncio.sleep(self.cleanup_interval_ms / 1000)
            for meta in core.timed_out(list(self.txns.values()), now_ms()):
                txn_id = meta.transactional_id
                async with self._lock(txn_id):
                    current = self.txns.get(txn_id)
                    if current is None or current not in core.timed_out([current], now_ms()):
                        continue
                    log.info(
                        "aborting the transaction of %r (producer %d): open longer than %d ms",
                        txn_id,
                        current.producer_id,
                        current.timeout_ms,
                    )
                    fenced = core.fence_and_abort(current, now_ms())
                    try:
                        await self._persist(fenced)
                        await self._finish(fenced)
                    except (OSError, CodedError) as exc:
                        log.error("aborting the transaction of %r failed: %s", txn_id, exc)


async def start_transaction_coordinator(
    state: BrokerState, groups: GroupCoordinator
) -> TransactionCoordinator:
    coordinator = TransactionCoordinator(state, groups)
    task = asyncio.create_task(coordinator.start(), name="txn-coordinator-load")
    coordinator._tasks.append(task)
    return coordinator
