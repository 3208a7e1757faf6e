"""Starting the group coordinator: internal topics, shards, background loading."""

from __future__ import annotations

import asyncio
import gc
import logging
from functools import partial
from typing import Any

from muster.coordinator.topics import EVENTS_TOPIC
from muster.records.batch import build_batch
from muster.server.clock import now_ms
from muster.server.group_runtime.runtime import (
    OFFSETS_TOPIC,
    BackgroundLane,
    GroupCoordinator,
    ShardRuntime,
)
from muster.server.state import BrokerState

log = logging.getLogger(__name__)

OFFSETS_TOPIC_CONFIGS = {"cleanup.policy": "compact", "segment.bytes": str(100 << 20)}
EVENTS_TOPIC_CONFIGS = {"cleanup.policy": "delete", "retention.ms": str(7 * 24 * 3600 * 1000)}


def ensure_internal_topics(state: BrokerState) -> None:
    topics = state.logs.topics()
    wanted = int(state.config["offsets.topic.num.partitions"])
    # created together at a first start: one topic-table write, one fsync
    missing: list[tuple[str, int, dict[str, str]]] = []
    if OFFSETS_TOPIC not in topics:
        missing.append((OFFSETS_TOPIC, wanted, OFFSETS_TOPIC_CONFIGS))
    elif topics[OFFSETS_TOPIC].num_partitions != wanted:
        # Kafka never changes it either: the group -> partition mapping must hold.
        log.warning(
            "%s has %d partitions; offsets.topic.num.partitions=%d is ignored",
            OFFSETS_TOPIC,
            topics[OFFSETS_TOPIC].num_partitions,
            wanted,
        )
    if EVENTS_TOPIC not in topics:
        missing.append((EVENTS_TOPIC, 1, EVENTS_TOPIC_CONFIGS))
    if missing:
        state.logs.create_topics(missing)


def make_event_publisher(state: BrokerState) -> Any:
    plog = state.logs.get(EVENTS_TOPIC, 0)
    assert plog is not None

    metrics = state.services.metrics

    def publish(events: list[Any]) -> None:
        if metrics is not None:
            metrics.observe_events(events)
        records = [(e.group_id.encode(), e.to_json()) for e in events]
        now = now_ms()
        plog.append(build_batch(records, timestamp_ms=now), now)
        state.durability.appended(plog)

    return publish


def _new_shard(partition: int, config: Any) -> Any:
    # Imported here, by the loader's worker thread: the core (every group state
    # machine, the assignors, the KIP-848 records) is ~0.1 s of imports that a
    # broker need not pay before it listens; group requests answer
    # COORDINATOR_LOAD_IN_PROGRESS meanwhile, as Kafka's do while it loads.
    from muster.coordinator.shard import CoordinatorShard

    return CoordinatorShard(partition, config)


async def start_coordinator(state: BrokerState) -> GroupCoordinator:
    """Shards answer COORDINATOR_LOAD_IN_PROGRESS until their partition is replayed."""
    ensure_internal_topics(state)
    publish = make_event_publisher(state)
    count = state.logs.topics()[OFFSETS_TOPIC].num_partitions
    runtimes = []
    lane = BackgroundLane()
    for p in range(count):
        plog = state.logs.get(OFFSETS_TOPIC, p)
        assert plog is not None
        make = partial(_new_shard, p, state.config)
        runtimes.append(ShardRuntime(None, plog, state.durability, publish, lane, make_shard=make))
    coordinator = GroupCoordinator(runtimes)

    async def load_all() -> None:
        total = 0
        started = now_ms()
        # Replay builds millions of long-lived objects; the cyclic collector
        # would rescan them again and again, so it waits until loading is done.
        gc.disable()
        try:
            for runtime in runtimes:
                total += await asyncio.to_thread(runtime.load)
                runtime.start()
        finally:
            gc.enable()
            gc.freeze()  # the loaded state is old: keep it out of later collections
        # The replay alone is "loaded in": the core's import and the shards'
        # construction moved here from before listening (the imports cost
        # 0.1-0.3 s, more without bytecode), and counted in, they would read
        # as a slower replay against earlier figures (issue 15).
        setup_ms = round(sum(r.setup_seconds for r in runtimes) * 1000)
        replay_ms = max(0, now_ms() - started - setup_ms)
        log.info(
            "group coordinator loaded %d records in %d ms (after %d ms importing "
            "the coordinator core and making its shards)",
            total,
            replay_ms,
            setup_ms,
        )
        coordinator.load_ms = replay_ms

    coordinator.loader = asyncio.create_task(load_all(), name="coordinator-load")
    return coordinator
