"""The pure, synchronous group coordinator core (classic groups + offsets).

The runtime's entry points: `CoordinatorShard` (one per `__consumer_offsets`
partition, `muster.coordinator.shard`), `partition_for`
(`.partitioning`), the request/response dataclasses in `.requests` /
`.responses`, `Result`/`Schedule`/`Cancel` in `.result`, and the events in
`.events`. The names below are also reachable from the package itself,
resolved on first use (muster._lazy).
"""

from muster._lazy import lazy_exports

_EXPORTS = {
    "Cancel": "muster.coordinator.result",
    "CoordinatorConfig": "muster.coordinator.context",
    "CoordinatorShard": "muster.coordinator.shard",
    "Result": "muster.coordinator.result",
    "Schedule": "muster.coordinator.result",
    "partition_for": "muster.coordinator.partitioning",
}
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
