"""The pure, synchronous group coordinator core (classic groups + offsets).

The runtime's entry points: `CoordinatorShard` (one per `__consumer_offsets`
partition), `partition_for`, the request/response dataclasses in
`muster.coordinator.requests` / `.responses`, `Result`/`Schedule`/`Cancel`
in `muster.coordinator.runtime`, and the events in `muster.coordinator.events`.
"""

from muster.coordinator.context import CoordinatorConfig
from muster.coordinator.runtime import Cancel, Result, Schedule, partition_for
from muster.coordinator.shard import CoordinatorShard

__all__ = ["Cancel", "CoordinatorConfig", "CoordinatorShard", "Result", "Schedule", "partition_for"]
