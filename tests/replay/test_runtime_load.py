"""The broker's loader (last record per key, in log order) rebuilds the same
state as replaying every record of `__consumer_offsets`."""

from __future__ import annotations

from muster.coordinator import requests as rq
from muster.coordinator.shard import CoordinatorShard, durable_state
from muster.log.memory_log import MemoryLog
from muster.records.batch import build_batch
from muster.server.coordinator.runtime import ShardRuntime
from tests.core.harness import Harness


def _scenario() -> Harness:
    h = Harness()
    a, b = h.form(2)
    for i in range(5):
        h.reply(h.commit({("t", 0): 10 * i, ("t", 1): 10 * i + 1}, generation=2, member_id=a))
    h.reply(h.commit({("u", 0): 3}, group="simple"))
    h.reply(h.commit({("u", 0): 4}, group="doomed"))
    h.reply(h.send(rq.DeleteGroups(("doomed",))))
    h.reply(h.leave(b))
    return h


def test_loader_equals_full_replay() -> None:
    h = _scenario()
    plog = MemoryLog("__consumer_offsets", 0)
    # the harness numbers records from 0 like the log does; write them in small batches
    records = [(k, v) for k, v, _o in h.log]
    for start in range(0, len(records), 3):
        plog.append(build_batch(records[start : start + 3], timestamp_ms=h.now), h.now)
    runtime = ShardRuntime(CoordinatorShard(0, h.cfg), plog, None, lambda _e: None)  # type: ignore[arg-type]
    runtime.load()
    assert durable_state(runtime.shard) == durable_state(h.replayed())
    assert runtime.shard.group("doomed") is None
    assert runtime.shard.group("simple") is not None
