"""The coordinator runtime and group commit: an answer leaves only once its
records are durable, write completions keep append order, and a lone write
is fsynced on the loop thread while several go to the flusher thread."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from muster.coordinator import requests as rq
from muster.coordinator.partitioning import partition_for
from muster.coordinator.shard import CoordinatorShard
from muster.log.memory_log import MemoryLog
from muster.server.durability import Durability
from muster.server.group_runtime.runtime import ShardRuntime


class WatchedLog(MemoryLog):
    """A memory log that records which thread flushed it, and can fail."""

    def __init__(self, topic: str, partition: int) -> None:
        super().__init__(topic, partition)
        self.flush_threads: list[int] = []
        self.fail: OSError | None = None

    def flush(self) -> None:
        self.flush_threads.append(threading.get_ident())
        if self.fail is not None:
            raise self.fail
        super().flush()


def _append(plog: MemoryLog) -> None:
    from muster.records.batch import build_batch

    plog.append(build_batch([(b"k", b"v")], timestamp_ms=1), 1)


async def _settle(until: Any, rounds: int = 200) -> None:
    for _ in range(rounds):
        if until():
            return
        await asyncio.sleep(0.001)
    raise AssertionError("condition not reached")


def test_lone_latency_bound_write_is_flushed_on_the_loop_before_its_callback() -> None:
    async def main() -> None:
        d = Durability("always", 0, lambda _p: None)
        d.start()
        plog = WatchedLog("t", 0)
        _append(plog)
        d.appended(plog, latency_bound=True)
        seen: list[tuple[OSError | None, int]] = []
        d.on_durable(plog, lambda err: seen.append((err, plog.flushed_offset)))
        assert seen == []  # nothing is answered before the flush
        await _settle(lambda: seen)
        assert seen == [(None, 1)]
        assert plog.flush_threads == [threading.get_ident()]
        await d.stop()

    asyncio.run(main())


@pytest.mark.parametrize("latency_bound", [(True, True, True), (False,)])
def test_several_logs_or_throughput_writes_go_to_the_flusher_thread(
    latency_bound: tuple[bool, ...],
) -> None:
    # a produce request's write, even alone, must not stop the loop reading the
    # next one; several logs are fsynced while the loop goes on
    async def main() -> None:
        d = Durability("always", 0, lambda _p: None)
        d.start()
        logs = [WatchedLog("t", p) for p in range(len(latency_bound))]
        done: list[int] = []
        for plog, bound in zip(logs, latency_bound, strict=True):
            _append(plog)
            d.appended(plog, latency_bound=bound)
            d.on_durable(plog, lambda err, p=plog: done.append(p.partition))
        await _settle(lambda: len(done) == len(logs))
        assert sorted(done) == list(range(len(logs)))
        loop_thread = threading.get_ident()
        for plog in logs:
            assert plog.flushed_offset == 1
            assert plog.flush_threads and loop_thread not in plog.flush_threads
        await d.stop()

    asyncio.run(main())


def test_callbacks_of_one_log_run_in_registration_order() -> None:
    async def main() -> None:
        d = Durability("always", 0, lambda _p: None)
        d.start()
        plog = WatchedLog("t", 0)
        order: list[int] = []
        for i in range(5):
            _append(plog)
            d.appended(plog)
            d.on_durable(plog, lambda _err, i=i: order.append(i))
        await _settle(lambda: len(order) == 5)
        assert order == [0, 1, 2, 3, 4]
        await d.stop()

    asyncio.run(main())


def test_failed_flush_fails_the_waiter_and_every_later_one() -> None:
    async def main() -> None:
        d = Durability("always", 0, lambda _p: None)
        d.start()
        plog = WatchedLog("t", 0)
        plog.fail = OSError(5, "disk gone")
        _append(plog)
        d.appended(plog)
        errors: list[OSError | None] = []
        d.on_durable(plog, errors.append)
        await _settle(lambda: errors)
        assert isinstance(errors[0], OSError)
        assert plog.flushed_offset == 0
        with pytest.raises(OSError):
            await d.wait(plog)  # never acknowledged once the disk failed
        await d.stop()

    asyncio.run(main())


# a group owned by shard 0 of the default 50 partitions
GROUP = next(g for g in (f"g{i}" for i in range(1000)) if partition_for(g, 50) == 0)


def _commit(group: str, offset: int) -> rq.OffsetCommit:
    return rq.OffsetCommit(group, (rq.CommitTopic("t", (rq.CommitPartition(0, offset),)),))


async def _started(plog: MemoryLog) -> tuple[Durability, ShardRuntime]:
    """Group commit and a loaded shard runtime on `plog`."""
    d = Durability("always", 0, lambda _p: None)
    d.start()
    runtime = ShardRuntime(CoordinatorShard(0), plog, d, lambda _e: None)
    runtime.start()
    await _settle(lambda: runtime.loaded)
    return d, runtime


def test_commit_is_answered_only_once_durable_and_in_order() -> None:
    async def main() -> None:
        plog = WatchedLog("__consumer_offsets", 0)
        d, runtime = await _started(plog)
        answered: list[tuple[int, int, int]] = []  # (offset, flushed at answer, log end)

        async def commit(offset: int) -> None:
            resp = await runtime.call(_commit(GROUP, offset))
            assert resp.topics[0].partitions[0].error_code == 0
            answered.append((offset, plog.flushed_offset, plog.log_end_offset))

        # the first runs inline in its caller's task, the others queue behind it
        await asyncio.gather(*(commit(n) for n in range(1, 6)))
        assert [a[0] for a in answered] == [1, 2, 3, 4, 5]
        for i, (_offset, flushed, _end) in enumerate(answered):
            assert flushed >= i + 1  # this commit's record was on disk
        fetched = await runtime.call(rq.OffsetFetch((rq.FetchGroup(GROUP, None),)))
        assert fetched.groups[0].topics[0].partitions[0].committed_offset == 5
        await runtime.stop()
        await d.stop()

    asyncio.run(main())


def test_failed_fsync_answers_the_commit_with_a_storage_error() -> None:
    async def main() -> None:
        plog = WatchedLog("__consumer_offsets", 0)
        d, runtime = await _started(plog)
        plog.fail = OSError(5, "disk gone")
        resp = await runtime.call(_commit(GROUP, 7))
        assert resp.topics[0].partitions[0].error_code != 0
        fetched = await runtime.call(rq.OffsetFetch((rq.FetchGroup(GROUP, None),)))
        assert all(p.committed_offset != 7 for t in fetched.groups[0].topics for p in t.partitions)
        await runtime.stop()
        await d.stop()

    asyncio.run(main())


def test_failed_flush_is_not_sticky_once_the_disk_recovers() -> None:
    async def main() -> None:
        d = Durability("always", 0, lambda _p: None)
        d.start()
        plog, other = WatchedLog("t", 0), WatchedLog("t", 1)
        plog.fail = OSError(28, "no space")
        for log in (plog, other):
            _append(log)
            d.appended(log)  # two logs: one flush by the flusher thread
        results: dict[int, OSError | None] = {}
        d.on_durable(plog, lambda err: results.__setitem__(0, err))
        d.on_durable(other, lambda err: results.__setitem__(1, err))
        await _settle(lambda: len(results) == 2)
        assert isinstance(results[0], OSError)
        assert results[1] is None  # one log's disk trouble is not the other's
        plog.fail = None
        _append(plog)
        d.appended(plog)
        await asyncio.wait_for(d.wait(plog), 5)  # acknowledged again: no restart
        assert plog.flushed_offset == plog.log_end_offset == 2
        await d.stop()

    asyncio.run(main())


class FullDiskLog(WatchedLog):
    """Appends raise a bare OSError (as a log without the port's mapping would)."""

    def append(self, records: bytes, now_ms: int, coordinator: bool = False) -> Any:
        if self.fail is not None:
            raise self.fail
        return super().append(records, now_ms, coordinator)


def test_append_oserror_answers_not_coordinator_and_the_shard_keeps_serving() -> None:
    async def main() -> None:
        plog = FullDiskLog("__consumer_offsets", 0)
        d, runtime = await _started(plog)
        assert (await runtime.call(_commit(GROUP, 3))).topics[0].partitions[0].error_code == 0
        plog.fail = OSError(28, "No space left on device")
        resp = await asyncio.wait_for(runtime.call(_commit(GROUP, 7)), 5)
        # what Kafka's coordinator answers for KAFKA_STORAGE_ERROR on its log
        assert resp.topics[0].partitions[0].error_code == 16  # NOT_COORDINATOR
        fetch = rq.OffsetFetch((rq.FetchGroup(GROUP, None),))
        fetched = await asyncio.wait_for(runtime.call(fetch), 5)
        assert fetched.groups[0].topics[0].partitions[0].committed_offset == 3
        plog.fail = None  # space is back: commits work with no restart
        resp = await asyncio.wait_for(runtime.call(_commit(GROUP, 9)), 5)
        assert resp.topics[0].partitions[0].error_code == 0
        fetched = await asyncio.wait_for(runtime.call(fetch), 5)
        assert fetched.groups[0].topics[0].partitions[0].committed_offset == 9
        await runtime.stop()
        await d.stop()

    asyncio.run(main())
