"""The pure, synchronous group coordinator core (classic groups + offsets).

The runtime's entry points: `CoordinatorShard` (one per `__consumer_offsets`
partition, `muster.coordinator.shard`), `partition_for`
(`.partitioning`), the request/response dataclasses in `.requests` /
`.responses`, `Result`/`Schedule`/`Cancel` in `.result`, and the events in
`.events`.

The names are also reachable from the package itself, resolved on first use
so that importing any submodule does not import the whole core (which would
make every core module part of one import cycle through this file).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "Cancel": "muster.coordinator.result",
    "CoordinatorConfig": "muster.coordinator.context",
    "CoordinatorShard": "muster.coordinator.shard",
    "Result": "muster.coordinator.result",
    "Schedule": "muster.coordinator.result",
    "partition_for": "muster.coordinator.partitioning",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(module), name)
