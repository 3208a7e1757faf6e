"""The load fast path: the last record of each key of a `__consumer_offsets`
partition, replayed in log order. Offset commits — nearly all of a large log —
are read by the records' own readers (`muster.records.offsets_topic`, fast
paths included) into plain fields, without key or value objects, and end in
the same apply functions as `CoordinatorShard.replay` (`put_committed` /
`drop_committed`); every other record goes through `replay` itself."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from muster.coordinator.offsets.state import CommittedOffset, drop_committed, put_committed
from muster.records.offsets_topic import (
    offset_commit_key_fields,
    offset_commit_key_split,
    offset_commit_value_fields,
)

if TYPE_CHECKING:  # the shard calls this module
    from muster.coordinator.shard import CoordinatorShard


def replay_latest(
    shard: CoordinatorShard, latest: Mapping[bytes, tuple[int, bytes | None]]
) -> None:
    """Replay the last record of each key, given in log order of those
    records: what compaction would leave, so the same state as replaying
    every record. Offset commits, nearly all of a large log, take a fast
    path that ends in the same apply functions as `replay`
    (`put_committed` / `drop_committed`) without key or value objects;
    every key arrives once, so a decode cache would only cost here.

    Consecutive commits of one (group, topic) share every key byte but
    the partition (the last four), so the topic and group found for one
    such prefix serve the next keys; the prefix is only remembered once
    it parsed as an OffsetCommitKey, whose partition is exactly its last
    four bytes. Any other record may replace or drop the group, so it
    forgets the remembered one."""
    offsets_of = shard.offsets.groups
    committed_of = shard.offsets.committed_map
    get_or_create = shard.store.get_or_create
    loading = shard.loading
    put, drop = put_committed, drop_committed
    key_fields = offset_commit_key_fields
    value_fields = offset_commit_value_fields
    split = offset_commit_key_split
    top = shard.next_seq - 1
    names: dict[bytes, tuple[str, str]] = {}
    last_prefix: bytes | None = None
    group_id = topic = ""
    committed: dict[tuple[str, int], CommittedOffset] | None = None
    for key, (offset, value) in latest.items():
        if offset > top:
            top = offset
        prefix, partition = split(key)
        if prefix != last_prefix:
            known = names.get(prefix)
            if known is None:
                fields = key_fields(key)
                if fields is None:
                    shard.next_seq = top + 1
                    shard.replay(key, value, offset)
                    top = shard.next_seq - 1
                    last_prefix = None
                    continue
                known = names[prefix] = (fields[0], fields[1])
            group_id, topic = known
            committed = None
            last_prefix = prefix
        if value is None:
            existing = offsets_of.get(group_id)
            if existing is not None:
                drop(existing.committed, (topic, partition), offset)
            continue
        if committed is None:
            committed = committed_of(group_id)
            if loading:
                get_or_create(group_id)
        c = CommittedOffset(*value_fields(value), offset)
        tp = (topic, partition)
        if tp in committed:  # held before (another key version): the apply rule decides
            put(committed, tp, c)
        else:  # nothing held: what put_committed does, without the call
            committed[tp] = c
    shard.next_seq = top + 1
