"""The coordinator's durable state as comparable data (the replay invariant)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from muster.coordinator.groups.modern.group import durable_view

if TYPE_CHECKING:
    from muster.coordinator.shard import CoordinatorShard


def durable_state(shard: CoordinatorShard) -> dict[str, tuple[Any, tuple[Any, ...]]]:
    """What the log says: each group's last stored metadata record and its
    committed offsets (without record positions). Equal for a live shard and
    for a fresh shard that replayed everything the live one wrote."""
    out: dict[str, tuple[Any, tuple[Any, ...]]] = {}
    for group_id in set(shard.store.records) | set(shard.offsets.groups):
        found = shard.offsets.of(group_id)
        committed = {} if found is None else found.committed
        offsets = tuple(
            (tp, c.offset, c.leader_epoch, c.metadata, c.commit_timestamp, c.expire_timestamp)
            for tp, c in sorted(committed.items())
        )
        persisted = shard.store.persisted(group_id)
        if persisted is not None or offsets:
            out[group_id] = (persisted, offsets)
    # consumer groups are durable state whole (keyed by a tuple: no clash
    # with the classic entries' group ids)
    for group_id, view in durable_view(shard.store.modern).items():
        out[("consumer", group_id)] = view  # type: ignore[index]
    for group_id, group in shard.store.share.items():
        out[("share", group_id)] = group  # type: ignore[index]  # dataclass equality
    return out
