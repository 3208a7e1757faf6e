"""A request whose step completes it (`muster.fsync=never`: the append is
all the durability there is) is answered by `ShardRuntime.submit` at once,
without a future; with `fsync=always` the caller waits for the fsync. Both
give the same answers, errors included, and the same state, which is what
a fresh shard replaying the log gets."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from muster.coordinator import requests as rq
from muster.coordinator.durable import durable_state
from muster.coordinator.partitioning import partition_for
from muster.coordinator.shard import CoordinatorShard
from muster.log.memory_log import MemoryLog
from muster.server.durability import Durability
from muster.server.group_runtime.runtime import Pending, ShardRuntime

GROUP = next(g for g in (f"g{i}" for i in range(1000)) if partition_for(g, 50) == 0)
NOW = 1_700_000_000_000  # both runs on one clock: their commit timestamps match
OTHER = next(g for g in (f"h{i}" for i in range(1000)) if partition_for(g, 50) == 0)


class FailingLog(MemoryLog):
    """Refuses appends while `refuse` is set (a full disk)."""

    refuse = False

    def append(self, records: bytes, now_ms: int, coordinator: bool = False) -> Any:
        if self.refuse:
            raise OSError(28, "no space left on device")
        return super().append(records, now_ms, coordinator)


def _commit(group: str, *parts: tuple[int, int, str], generation: int = -1) -> rq.OffsetCommit:
    partitions = tuple(rq.CommitPartition(p, o, metadata=m) for p, o, m in parts)
    return rq.OffsetCommit(group, (rq.CommitTopic("t", partitions),), generation_id=generation)


STEPS: list[tuple[str, Any]] = [
    ("commit", _commit(GROUP, (0, 5, ""))),
    ("commit", _commit(GROUP, (0, 6, "meta"), (1, 9, "x" * 5000))),  # one too large
    ("commit", _commit(OTHER, (0, 1, ""), generation=3)),  # no such generation
    ("commit", _commit(GROUP, (2, 11, ""), generation=-1)),
    ("refuse", None),
    ("commit", _commit(GROUP, (0, 99, ""))),  # the append fails
    ("accept", None),
    ("commit", _commit(GROUP, (0, 7, ""))),
    ("fetch", rq.OffsetFetch((rq.FetchGroup(GROUP, None),))),
]


async def _run(policy: str) -> tuple[list[Any], list[bool], FailingLog, ShardRuntime]:
    plog = FailingLog("__consumer_offsets", 0)
    durability = Durability(policy, 0, lambda _p: None)
    durability.start()
    runtime = ShardRuntime(
        CoordinatorShard(0), plog, durability, lambda _e: None, clock=lambda: NOW
    )
    runtime.start()
    for _ in range(100):
        if runtime.loaded:
            break
        await asyncio.sleep(0.001)
    answers: list[Any] = []
    waited: list[bool] = []
    for kind, request in STEPS:
        if kind in ("refuse", "accept"):
            plog.refuse = kind == "refuse"
            continue
        answer = runtime.submit(request)
        waited.append(type(answer) is Pending)
        answers.append(await answer.wait() if type(answer) is Pending else answer)
    await runtime.stop()
    await durability.stop()
    return answers, waited, plog, runtime


def test_the_answer_at_once_equals_the_answer_after_the_fsync() -> None:
    at_once, waited_never, log_never, never = asyncio.run(_run("never"))
    after_fsync, waited_always, _log, always = asyncio.run(_run("always"))
    assert not any(waited_never)  # every answer was ready when its step ended
    assert waited_always[0]  # a commit waits for its fsync
    assert at_once == after_fsync
    codes = [[p.error_code for t in a.topics for p in t.partitions] for a in at_once[:-1]]
    # a failed append reaches the client as NOT_COORDINATOR (Kafka: retry elsewhere)
    assert codes == [[0], [0, 12], [22], [0], [16], [0]]
    fetched = {
        p.partition_index: p.committed_offset for p in at_once[-1].groups[0].topics[0].partitions
    }
    assert fetched == {0: 7, 2: 11}
    assert durable_state(never.shard) == durable_state(always.shard)
    # what was applied on completion is what a replay of the log gives
    fresh = ShardRuntime(CoordinatorShard(0), log_never, None, lambda _e: None)  # type: ignore[arg-type]
    fresh.load()
    assert durable_state(fresh.shard) == durable_state(never.shard)


def test_a_request_behind_queued_work_waits_its_turn() -> None:
    async def main() -> None:
        plog = FailingLog("__consumer_offsets", 0)
        durability = Durability("never", 0, lambda _p: None)
        runtime = ShardRuntime(CoordinatorShard(0), plog, durability, lambda _e: None)
        runtime.start()  # "loaded" is queued, not yet processed
        runtime.loaded = True  # as if loaded: the request must still queue behind it
        answer = runtime.submit(_commit(GROUP, (0, 3, "")))
        assert type(answer) is Pending
        resp = await answer.wait()
        assert resp.topics[0].partitions[0].error_code == 0
        await runtime.stop()

    asyncio.run(main())


def test_a_caller_that_stops_waiting_does_not_stall_the_answers_behind_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # fsync=always: a commit waits for its fsync; its connection closes
    # meanwhile (the handler task is cancelled). The fsync's completion must
    # still answer the commits appended after it.
    async def main() -> None:
        plog = FailingLog("__consumer_offsets", 0)
        durability = Durability("always", 0, lambda _p: None)
        durability.start()
        runtime = ShardRuntime(CoordinatorShard(0), plog, durability, lambda _e: None)
        runtime.start()
        for _ in range(100):
            if runtime.loaded:
                break
            await asyncio.sleep(0.001)
        first = runtime.submit(_commit(GROUP, (0, 1, "")))
        second = runtime.submit(_commit(GROUP, (0, 2, "")))
        assert type(first) is Pending and type(second) is Pending
        # the first caller starts waiting, then gives up, before the fsync ran
        waiting = first.wait()
        waiting.send(None)  # suspended on its future
        waiting.close()
        assert first.future is not None
        first.future.cancel()
        resp = await asyncio.wait_for(second.wait(), 5)
        assert resp.topics[0].partitions[0].error_code == 0
        fetched = await runtime.call(rq.OffsetFetch((rq.FetchGroup(GROUP, None),)))
        assert fetched.groups[0].topics[0].partitions[0].committed_offset == 2
        await runtime.stop()
        await durability.stop()

    asyncio.run(main())
    # its own write is completed too (applied, not dropped by an error midway)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
