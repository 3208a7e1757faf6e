"""The broker's loader (last record per key, in log order) rebuilds the same
state as replaying every record of `__consumer_offsets`."""

from __future__ import annotations

import pytest

from muster.coordinator import requests as rq
from muster.coordinator.context import CoordinatorConfig
from muster.coordinator.durable import durable_state
from muster.coordinator.shard import CoordinatorShard
from muster.log.memory_log import MemoryLog
from muster.records import compression
from muster.records.batch import build_batch, iter_records
from muster.records.offsets_topic import (
    GroupMetadataValue,
    MemberMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    encode,
    encode_offset_commit_value,
    group_metadata_record,
    offset_commit_record,
)
from muster.server.group_runtime.runtime import ShardRuntime
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


def _commit(group: str, topic: str, partition: int, offset: int, **kw: object) -> tuple:
    value = OffsetCommitValue(offset, kw.get("epoch", -1), kw.get("meta", ""), 100 + offset, -1)
    if "expire" in kw:
        value = OffsetCommitValue(offset, -1, "", 100 + offset, kw["expire"])  # type: ignore[arg-type]
    return offset_commit_record(group, topic, partition, value)


def _tombstone(group: str, topic: str, partition: int) -> tuple:
    return offset_commit_record(group, topic, partition, None)


def _members(group: str, generation: int) -> tuple:
    member = MemberMetadataValue("m-1", None, "cid", "/h", 30000, 10000, b"sub", b"asg")
    value = GroupMetadataValue("consumer", generation, "range", "m-1", 5, (member,))
    return group_metadata_record(group, value)


def _mixed_log() -> list[tuple[bytes, bytes | None]]:
    """Runs of commits sharing a (group, topic) key prefix, broken up by group
    metadata, group deletion and re-creation, offset tombstones, keys written
    again later, values the v3 fast path leaves to the generic codec."""
    recs = []
    for p in range(6):
        recs.append(_commit("g", "t", p, p))
    recs.append(_members("g", 1))
    recs += [_commit("g", "t", p, 10 + p) for p in range(3)]  # same prefix after metadata
    recs.append(_commit("g", "t", 7, 7, meta="with metadata", epoch=3))
    recs.append(_commit("g", "u", 0, 1, expire=999))  # v1 value
    recs.append(_tombstone("g", "t", 4))
    recs += [_commit("h", "t", p, 20 + p) for p in range(4)]
    recs += [_tombstone("h", "t", p) for p in range(4)]
    recs.append(group_metadata_record("h", None))  # h ends with no offsets: removed
    recs += [_commit("h", "t", p, 30 + p) for p in (1, 2)]  # then created again
    recs.append(_members("d", 2))
    recs.append(_commit("d", "t", 0, 1))
    recs.append(_tombstone("d", "t", 0))
    recs.append(group_metadata_record("d", None))
    recs.append(_tombstone("z", "t", 0))  # a tombstone for a group never seen
    recs += [_commit("g", "t", 5, 50), _members("g", 2), _commit("g", "t", 1, 51)]
    return recs


@pytest.mark.parametrize("codec", [compression.NONE, compression.GZIP, compression.ZSTD])
def test_loader_matches_record_by_record_replay_on_a_mixed_log(codec: int) -> None:
    records = _mixed_log()
    plog = MemoryLog("__consumer_offsets", 0)
    for start in range(0, len(records), 5):
        plog.append(build_batch(records[start : start + 5], compression_type=codec), 0)
        if start == 10:  # a transaction marker between batches holds no group state
            plog.append_marker(1, 0, False, 0, 0)
    runtime = ShardRuntime(CoordinatorShard(0, CoordinatorConfig()), plog, None, None)  # type: ignore[arg-type]
    runtime.load()

    full = CoordinatorShard(0, CoordinatorConfig())
    offset = 0
    for r in iter_records(plog.read(0, 1 << 20)):
        if r.key is not None and not r.key.startswith(b"\x00\x00\x00"):
            full.replay(r.key, r.value, r.offset)  # type: ignore[arg-type]
        offset = r.offset
    assert offset == plog.log_end_offset - 1

    loaded = runtime.shard
    assert durable_state(loaded) == durable_state(full)
    assert {g.group_id for g in loaded.groups()} == {"g", "h"}
    for group in full.groups():
        other = loaded.group(group.group_id)
        assert other is not None
        assert loaded.offsets.committed(group.group_id) == full.offsets.committed(
            group.group_id
        )  # record positions included
        assert other.generation == group.generation
    g = loaded.group("g")
    assert g is not None and g.generation == 2 and ("t", 4) not in loaded.offsets.committed("g")
    assert loaded.offsets.committed("g")[("t", 7)].metadata == "with metadata"
    assert loaded.offsets.committed("g")[("t", 7)].leader_epoch == 3
    assert loaded.offsets.committed("g")[("u", 0)].expire_timestamp == 999
    assert loaded.next_seq == full.next_seq


def test_group_removed_between_commits_of_one_key_prefix() -> None:
    """Key v0 and v1 of one partition are different keys for the same offset:
    here the v0 tombstone empties the group, its metadata tombstone removes it,
    and the next v0 commit (same key prefix as the tombstone) must create it
    again rather than write into the removed group."""

    def v0(partition: int) -> bytes:
        return encode("OffsetCommitKey", OffsetCommitKey("g", "t", partition), 0)

    v1_key, v1_value = _commit("g", "t", 0, 5)
    value = encode_offset_commit_value(OffsetCommitValue(9, -1, "", 100, -1))
    latest: dict[bytes, tuple[int, bytes | None]] = {
        v1_key: (0, v1_value),
        v0(0): (1, None),
        group_metadata_record("g", None)[0]: (2, None),
        v0(1): (3, value),
    }
    loaded = CoordinatorShard(0, CoordinatorConfig())
    loaded.replay_latest(latest)
    full = CoordinatorShard(0, CoordinatorConfig())
    for key, (offset, val) in latest.items():
        full.replay(key, val, offset)
    assert durable_state(loaded) == durable_state(full)
    g = loaded.group("g")
    assert g is not None and loaded.offsets.committed("g")[("t", 1)].offset == 9
    assert ("t", 0) not in loaded.offsets.committed("g")


def test_load_seconds_is_the_replay_not_making_the_shard() -> None:
    """The broker reports the replay as its load figure: the shard made in the
    loader thread (the first one imports the coordinator core) is timed apart,
    so moving that import after listening does not read as a slower replay."""
    import time

    plog = MemoryLog("__consumer_offsets", 0)
    plog.append(build_batch([_commit("g", "t", 0, 5)], timestamp_ms=1), 1)

    def slow_shard() -> CoordinatorShard:
        time.sleep(0.3)  # stands for the core's import
        return CoordinatorShard(0, CoordinatorConfig())

    runtime = ShardRuntime(None, plog, None, lambda _e: None, make_shard=slow_shard)  # type: ignore[arg-type]
    assert runtime.load() == 1
    assert runtime.setup_seconds >= 0.3
    assert runtime.load_seconds < 0.3
    assert runtime.shard.offsets.committed_map("g")[("t", 0)].offset == 5
