"""The broker's share-group serving state (KIP-932): share partitions
(`muster.share.partition`, a cache of what `__share_group_state` holds),
share sessions (Kafka's ShareSessionCache, in memory as in Kafka) and the
groups' dynamic configs set through IncrementalAlterConfigs on the GROUP
resource.

Durable: every share partition's SPSO and the state and delivery count of
its records (`server/share_store.py`; a change is written before the client
hears of it: `persist`), and the group configs (`share_group_configs.json`
in the data folder, written whole like the topic table: Kafka keeps them in
its metadata log, muster has none). A share partition not in the cache is
rebuilt from its durable state on first use."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from muster.log.files import fsync_dir, read_json
from muster.records.share_state_records import ShareStateKey, StateBatch
from muster.server.share_store import ShareStateLog, WriteFailed
from muster.server.state import BrokerState
from muster.share.durable import Record
from muster.share.group_configs import default
from muster.share.partition import SharePartition
from muster.share.reset import since_ms

log = logging.getLogger(__name__)

CONFIGS_FILE = "share_group_configs.json"

# ShareFetch/ShareAcknowledge session epochs (Kafka's ShareRequestMetadata)
INITIAL_EPOCH, FINAL_EPOCH = 0, -1

TopicPartition = tuple[uuid.UUID, int]


@dataclass
class ShareSession:
    group_id: str
    member_id: str
    epoch: int = 1  # the epoch the next request must carry
    partitions: set[TopicPartition] = field(default_factory=set)
    # the connection that opened it (its security Session): when that
    # connection closes, the share session ends and its locks go back (Kafka)
    connection: object = None


def next_epoch(epoch: int) -> int:
    return 1 if epoch >= 2**31 - 1 else epoch + 1


class ShareState:
    def __init__(self, state: BrokerState) -> None:
        config = self.broker_config = state.config
        # the group.share.* lock duration, delivery-count limit and in-flight
        # cap are the defaults of the group configs (group_config)
        self.max_sessions = int(config.get("group.share.max.share.sessions", 2000))
        self._background: set[asyncio.Task[bool]] = set()
        self.partitions: dict[tuple[str, uuid.UUID, int], SharePartition] = {}
        self.sessions: dict[tuple[str, str], ShareSession] = {}
        self.durable = ShareStateLog(state)
        loaded = self.durable.load()
        data_dir = None if state.logs.memory else state.logs.data_dir
        self.configs_path = None if data_dir is None else Path(data_dir) / CONFIGS_FILE
        self.group_configs: dict[str, dict[str, str]] = self._read_configs()
        if loaded:
            log.info(
                "share state: %d records replayed, %d share partitions",
                loaded,
                len(self.durable.store.states),
            )

    # ---- group configs (durable) ----------------------------------------------

    def _read_configs(self) -> dict[str, dict[str, str]]:
        doc = read_json(self.configs_path) if self.configs_path is not None else None
        groups = (doc or {}).get("groups", {})
        return {str(g): {str(k): str(v) for k, v in c.items()} for g, c in groups.items()}

    def set_group_configs(self, group_id: str, configs: dict[str, str]) -> None:
        """Replaces a group's dynamic configs, durably (raises OSError)."""
        before = self.group_configs.get(group_id)
        if configs:
            self.group_configs[group_id] = dict(configs)
        else:
            self.group_configs.pop(group_id, None)
        try:
            self._save_configs()
        except OSError:
            if before is None:
                self.group_configs.pop(group_id, None)
            else:
                self.group_configs[group_id] = before
            raise

    def _save_configs(self) -> None:
        if self.configs_path is None:
            return
        tmp = self.configs_path.with_name(CONFIGS_FILE + ".tmp")
        with open(tmp, "w") as f:
            json.dump({"version": 1, "groups": self.group_configs}, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.configs_path)
        fsync_dir(self.configs_path.parent)

    def group_config(self, group_id: str, name: str) -> str:
        own = self.group_configs.get(group_id, {})
        return own[name] if name in own else default(name, self.broker_config)

    def lock_duration(self, group_id: str) -> int:
        return int(self.group_config(group_id, "share.record.lock.duration.ms"))

    def _tuned(self, group_id: str, sp: SharePartition) -> SharePartition:
        """`sp` under its group's configs as they are now: a lock duration,
        delivery-count limit or in-flight cap set on the group applies from
        the next acquisition on (Kafka reads them when it acquires)."""
        sp.lock_ms = self.lock_duration(group_id)
        sp.delivery_limit = int(self.group_config(group_id, "share.delivery.count.limit"))
        sp.max_locks = int(self.group_config(group_id, "share.partition.max.record.locks"))
        return sp

    # ---- share partitions -----------------------------------------------------

    def existing(self, group_id: str, tp: TopicPartition) -> SharePartition | None:
        """The group's share partition if it has one (cached or written)."""
        sp = self.partitions.get((group_id, *tp))
        if sp is not None:
            return self._tuned(group_id, sp)
        written = self.durable.store.get(ShareStateKey(group_id, *tp))
        if written is None:
            return None
        sp = self.partitions[(group_id, *tp)] = SharePartition.from_state(
            written.start_offset,
            (
                (b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
                for b in written.batches
            ),
        )
        return self._tuned(group_id, sp)

    def keys(self, group_id: str) -> list[TopicPartition]:
        """The share partitions the group has state for."""
        found = {(k[1], k[2]) for k in self.partitions if k[0] == group_id}
        found |= {
            (k.topic_id, k.partition) for k in self.durable.store.states if k.group_id == group_id
        }
        return sorted(found, key=lambda k: (str(k[0]), k[1]))

    def partition(
        self,
        group_id: str,
        tp: TopicPartition,
        log_start: int,
        high_watermark: int,
        first_since: Callable[[int], int | None] = lambda _: None,
    ) -> SharePartition:
        """The group's share partition, made on first use with its SPSO from
        `share.auto.offset.reset` (once, as Kafka initialises it).
        `first_since(ts)`: the offset of the log's first record with a
        timestamp >= ts (None: none), for `by_duration:`."""
        sp = self.existing(group_id, tp)
        if sp is None:
            reset = self.group_config(group_id, "share.auto.offset.reset")
            start = log_start if reset == "earliest" else high_watermark
            oldest = since_ms(reset, int(time.time() * 1000))
            if oldest is not None:
                found = first_since(oldest)
                if found is not None:
                    start = min(max(found, log_start), high_watermark)
            sp = self.reset(group_id, tp, start)
        if sp.speo < log_start:  # records deleted under the window: skip them
            sp.records.clear()
            sp.dirty.clear()
            sp.spso = sp.speo = log_start
        return sp

    def reset(self, group_id: str, tp: TopicPartition, start: int) -> SharePartition:
        """The group's share partition starts afresh at `start` (made on first
        use, or AlterShareGroupOffsets): nothing in flight; written whole
        (a snapshot with the next state epoch) at the next `persist`."""
        sp = self.partitions[(group_id, *tp)] = SharePartition(start, start)
        return self._tuned(group_id, sp)

    # ---- durability ---------------------------------------------------------------

    async def persist(self) -> bool:
        """Writes every cached share partition's changes and returns once they
        are durable. False: some could not be written; those partitions are
        dropped from the cache, so their next use starts from what was written."""
        now = int(time.time() * 1000)
        store = self.durable.store
        logs: set = set()
        ok = True
        for (group_id, topic_id, index), sp in list(self.partitions.items()):
            if not sp.needs_write():
                continue
            key = ShareStateKey(group_id, topic_id, index)
            # each record is appended (and so applied) before the next is
            # computed from the store: an update names the snapshot before it
            try:
                if sp.written_spso is None:
                    logs.update(self.durable.append([store.initialize(key, sp.spso, now)]))
                    sp.written_spso = sp.spso
                if sp.needs_write():
                    changes = tuple(StateBatch(*c) for c in sp.take_changes())
                    logs.update(self.durable.append([store.write(key, sp.spso, changes, now)]))
            except WriteFailed as exc:
                log.error("share state of %s not written: %s", key, exc)
                self.partitions.pop((group_id, topic_id, index), None)
                ok = False
        return await self._wait(logs) and ok

    async def _wait(self, logs: set) -> bool:
        try:
            await self.durable.wait(logs)
        except OSError as exc:
            log.error("share state not made durable: %s", exc)
            return False
        return True

    async def delete_state(self, group_id: str, topic_id: uuid.UUID | None = None) -> bool:
        """The group's share partitions (of one topic, or all) are forgotten,
        durably (tombstones), as DeleteShareGroupOffsets and DeleteGroups do."""
        gone = [(group_id, t, i) for t, i in self.keys(group_id) if topic_id in (None, t)]
        records: list[Record] = []
        for key in gone:
            self.partitions.pop(key, None)
            if ShareStateKey(*key) in self.durable.store.states:
                records.extend(self.durable.store.delete(ShareStateKey(*key)))
        try:
            logs = set(self.durable.append(records))
        except WriteFailed as exc:
            log.error("share state of group %r not deleted: %s", group_id, exc)
            return False
        return await self._wait(logs)

    def close_session(self, session: ShareSession) -> None:
        """The member's session ends: its locks go back."""
        self.sessions.pop((session.group_id, session.member_id), None)
        for topic_id, index in session.partitions:
            sp = self.partitions.get((session.group_id, topic_id, index))
            if sp is not None:
                sp.release_member(session.member_id)

    def connection_closed(self, connection: object) -> None:
        """A client connection closed: the share sessions it opened end and
        their locks go back, as Kafka's ShareSessionCache does on a
        disconnect; written in the background (nobody waits for an answer)."""
        gone = [s for s in self.sessions.values() if s.connection is connection]
        if not gone:
            return
        for session in gone:
            self.close_session(session)
        task = asyncio.get_running_loop().create_task(self._persist_quietly())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _persist_quietly(self) -> bool:
        try:
            return await self.persist()
        except Exception as exc:  # a background write: one line, never a traceback
            log.error("share state of closed sessions not written: %s", exc)
            return False

    async def delete_group(self, group_id: str) -> None:
        await self.delete_state(group_id)
        if group_id in self.group_configs:
            try:
                self.set_group_configs(group_id, {})
            except OSError as exc:
                log.error("configs of deleted share group %r not removed: %s", group_id, exc)
