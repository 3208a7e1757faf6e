"""`__share_group_state` on this broker: the share coordinator's log.

The decisions are `muster.share.durable`'s (which record a change writes,
how a record applies); this module appends them to the share partition's
`__share_group_state` partition (Kafka's key `group:topicId:partition`
hashed over `share.coordinator.state.topic.num.partitions`), applies them
through the store's one `replay` as soon as they are appended, replays the
whole topic at start, and drops the records below the oldest snapshot still
needed after each snapshot (Kafka's share coordinator deletes records the
same way: the topic's cleanup policy is delete, not compact, since an update
depends on the snapshot before it). A caller awaits `wait` before it
answers: an acknowledgement is heard of only once written.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable

from muster.coordinator.partitioning import partition_for
from muster.log.port import PartitionLog
from muster.records.batch import build_batch
from muster.records.errors import CodedError
from muster.records.offsets_topic import RecordFormatError
from muster.records.share_state_records import (
    SNAPSHOT,
    ShareStateKey,
    decode_share_state_record,
    share_state_record,
)
from muster.records.v2 import read_batches
from muster.server.clock import now_ms
from muster.server.state import BrokerState
from muster.share.durable import Record, ShareStateStore

log = logging.getLogger(__name__)

STATE_TOPIC = "__share_group_state"
STATE_TOPIC_CONFIGS = {"cleanup.policy": "delete", "segment.bytes": str(100 << 20)}
LOAD_CHUNK = 8 << 20


class WriteFailed(Exception):
    """A share-state record could not be appended (the disk refused it)."""


def coordinator_key(key: ShareStateKey) -> str:
    """Kafka's share-coordinator key (FindCoordinator key type 2)."""
    return f"{key.group_id}:{key.topic_id}:{key.partition}"


class ShareStateLog:
    def __init__(self, state: BrokerState) -> None:
        self.state = state
        config = state.config
        self.store = ShareStateStore(
            int(config["share.coordinator.snapshot.update.records.per.snapshot"])
        )
        existing = state.logs.topic(STATE_TOPIC)
        self.num_partitions: int | None = existing.num_partitions if existing else None
        self._prunes: set[asyncio.Task[None]] = set()

    # ---- start ----------------------------------------------------------------

    def load(self) -> int:
        """Replays the whole topic; returns the records applied."""
        applied = 0
        for p in range(self.num_partitions or 0):
            plog = self.state.logs.get(STATE_TOPIC, p)
            if plog is None:
                continue
            offset, end = plog.log_start_offset, plog.log_end_offset
            while offset < end:
                rows: list[tuple] = []
                after = read_batches(rows, plog.read(offset, LOAD_CHUNK), offset)
                for row in rows:
                    key, value = row[3], row[4]
                    if key is None:
                        continue
                    try:
                        record = decode_share_state_record(
                            bytes(key), None if value is None else bytes(value)
                        )
                    except RecordFormatError as exc:
                        log.warning("skipping a %s record at %d: %s", STATE_TOPIC, row[2], exc)
                        continue
                    self.store.replay(record, row[2])
                    applied += 1
                if after <= offset:
                    break
                offset = after
        return applied

    # ---- writes ---------------------------------------------------------------

    def _partitions(self) -> int:
        if self.num_partitions is None:
            existing = self.state.logs.topic(STATE_TOPIC)
            if existing is not None:
                self.num_partitions = existing.num_partitions
                return self.num_partitions
            wanted = int(self.state.config["share.coordinator.state.topic.num.partitions"])
            self.state.logs.create_topic(STATE_TOPIC, wanted, STATE_TOPIC_CONFIGS)
            self.num_partitions = wanted
        return self.num_partitions

    def append(self, records: Iterable[Record]) -> list[PartitionLog]:
        """Appends the records (synchronously: no other request runs between
        a change and its record) and applies each once appended. Returns the
        logs to `wait` for. Raises WriteFailed."""
        touched: dict[int, PartitionLog] = {}
        snapshot_in: set[int] = set()
        now = now_ms()
        for record in records:
            kind, key, value = record
            partition = partition_for(coordinator_key(key), self._partitions())
            plog = self.state.logs.get(STATE_TOPIC, partition)
            if plog is None:
                raise WriteFailed(f"{STATE_TOPIC}-{partition} is missing")
            try:
                batch = build_batch([share_state_record(key, value, kind)], timestamp_ms=now)
                info = plog.append(batch, now)
            except (OSError, ValueError, CodedError, RecordFormatError) as exc:
                # ValueError: the log was closed under us (the broker is stopping)
                raise WriteFailed(f"{STATE_TOPIC}-{partition}: {exc}") from exc
            self.store.replay(record, info.base_offset)
            self.state.durability.appended(plog, latency_bound=True)
            touched[partition] = plog
            if kind == SNAPSHOT and value is not None:
                snapshot_in.add(partition)
        for partition in snapshot_in:
            self._prune_later(partition, touched[partition])
        return list(touched.values())

    async def wait(self, logs: Iterable[PartitionLog]) -> None:
        await asyncio.gather(*(self.state.durability.wait(plog) for plog in logs))

    # ---- pruning --------------------------------------------------------------

    def _prune_later(self, partition: int, plog: PartitionLog) -> None:
        n = self._partitions()
        keys = [k for k in self.store.states if partition_for(coordinator_key(k), n) == partition]
        below = self.store.prunable(keys, plog.log_end_offset)
        if below <= plog.log_start_offset:
            return
        task = asyncio.get_running_loop().create_task(self._prune(plog, below))
        self._prunes.add(task)
        task.add_done_callback(self._prunes.discard)

    async def _prune(self, plog: PartitionLog, below: int) -> None:
        # only once what replaces the dropped records is durable
        await self.state.durability.wait(plog)
        try:
            await asyncio.to_thread(plog.delete_records, below)
        except OSError as exc:
            log.warning("pruning %s below %d failed: %s", STATE_TOPIC, below, exc)
