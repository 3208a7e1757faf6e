"""The broker-wide background lane: offset-expiry steps of all shards run
one at a time, with the loop's other work between them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from muster.coordinator import requests as rq
from muster.coordinator.context import EXPIRE_OFFSETS_KEY
from muster.coordinator.partitioning import partition_for
from muster.coordinator.shard import CoordinatorShard
from muster.log.memory_log import MemoryLog
from muster.server.durability import Durability
from muster.server.group_runtime.runtime import BackgroundLane, ShardRuntime, _Work


def _loaded_runtime(partition: int, lane: BackgroundLane) -> ShardRuntime:
    shard = CoordinatorShard(partition, {"offsets.topic.num.partitions": 2})
    durability = Durability("never", 1000, lambda plog: None)
    plog = MemoryLog("__consumer_offsets", partition)
    rt = ShardRuntime(shard, plog, durability, lambda events: None, lane)
    rt._process(_Work("loaded", None))
    return rt


def test_expiry_timers_of_two_shards_take_the_lane_one_at_a_time() -> None:
    """Regression: the runtime looked up `kind` on the plain-text timer key,
    found none, and queued every expiry step as an ordinary timer, so the
    lane was never used."""

    async def scenario() -> None:
        lane = BackgroundLane()
        first, second = _loaded_runtime(0, lane), _loaded_runtime(1, lane)
        key = str(EXPIRE_OFFSETS_KEY)
        for rt in (first, second):  # their expiry deadline has come
            rt._due[key] = asyncio.get_running_loop().time()
            rt._fire(key)
        work = first._queue.get_nowait()
        assert work.kind == "background"
        assert second._queue.empty()  # it waits for the lane
        first._process(work)  # the step runs and hands the lane on, after ready work
        assert second._queue.empty()
        await asyncio.sleep(0)
        assert second._queue.get_nowait().kind == "background"
        for rt in (first, second):
            await rt.stop()

    asyncio.run(scenario())


class _Recording(Durability):
    def __init__(self) -> None:
        super().__init__("never", 1000, lambda plog: None)
        self.latency_bound: list[bool] = []

    def appended(self, plog, latency_bound: bool = False) -> None:  # type: ignore[no-untyped-def]
        self.latency_bound.append(latency_bound)
        super().appended(plog, latency_bound)


def test_only_small_coordinator_appends_are_fsynced_on_the_loop() -> None:
    """Measured with reliability/coordinator_scale.py --groups 10000: expiry
    steps' appends of 2,000 tombstones were marked latency-bound, so their
    fsync ran on the event loop thread and requests stalled for seconds
    (8.4 s longest); a commit's few records still are."""

    async def scenario() -> None:
        durability = _Recording()
        shard = CoordinatorShard(0, {"offsets.topic.num.partitions": 1})
        plog = MemoryLog("__consumer_offsets", 0)
        rt = ShardRuntime(shard, plog, durability, lambda events: None)
        rt._process(_Work("loaded", None))
        one = rq.CommitTopic("t", (rq.CommitPartition(0, 5),))
        many = rq.CommitTopic("t", tuple(rq.CommitPartition(p, 5) for p in range(1000)))
        for topics in ((one,), (many,)):
            await rt.call(rq.OffsetCommit("g", topics))
        assert durability.latency_bound == [True, False]
        await rt.stop()

    asyncio.run(scenario())


class _Held(Durability):
    """Writes become durable only when the test says so."""

    def __init__(self) -> None:
        super().__init__("never", 1000, lambda plog: None)
        self.held: list[Callable[[OSError | None], None]] = []

    def on_durable(self, plog, callback) -> None:  # type: ignore[no-untyped-def]
        self.held.append(callback)

    def release(self) -> None:
        held, self.held = self.held, []
        for callback in held:
            callback(None)


def test_an_expiry_step_holds_the_lane_until_its_tombstones_are_durable() -> None:
    """Regression (reliability/coordinator_scale.py --groups 10000, longest request
    during expiry 0.8-1.5 s): the lane was handed on as soon as a step was
    computed, so the next steps' appends piled up behind the flusher thread, a
    live commit's fsync waited behind all of them, and their completions then
    ran back to back on the loop. One step's write in flight at a time."""

    async def scenario() -> None:
        lane = BackgroundLane()
        durability = _Held()
        now = [1_000_000]
        shard = CoordinatorShard(0, {"offsets.topic.num.partitions": 2})
        first = ShardRuntime(
            shard,
            MemoryLog("__consumer_offsets", 0),
            durability,
            lambda e: None,
            lane,
            clock=lambda: now[0],
        )
        first._process(_Work("loaded", None))
        second = _loaded_runtime(1, lane)
        topics = (rq.CommitTopic("t", tuple(rq.CommitPartition(p, 5) for p in range(10))),)
        gid = next(f"g{i}" for i in range(100) if partition_for(f"g{i}", 2) == 0)
        commit = asyncio.ensure_future(first.call(rq.OffsetCommit(gid, topics)))
        await asyncio.sleep(0)
        durability.release()
        assert all(p.error_code == 0 for p in (await commit).topics[0].partitions)
        now[0] += 8 * 86_400_000  # past the default 7-day retention
        key = str(EXPIRE_OFFSETS_KEY)
        for rt in (first, second):
            rt._due[key] = asyncio.get_running_loop().time()
            rt._fire(key)
        first._process(first._queue.get_nowait())  # the step: 10 tombstones appended
        assert durability.held  # ... and not yet durable
        for _ in range(3):
            await asyncio.sleep(0)
        assert second._queue.empty()  # the lane is still held
        durability.release()
        await asyncio.sleep(0)
        assert second._queue.get_nowait().kind == "background"
        group = rq.FetchGroup(gid, (rq.FetchTopic("t", (0,)),))
        fetched = await first.call(rq.OffsetFetch((group,)))
        assert fetched.groups[0].topics[0].partitions[0].committed_offset == -1  # expired
        for rt in (first, second):
            await rt.stop()

    asyncio.run(scenario())
