"""What one step of a coordinator shard gives its runtime.

`records` are appended atomically to the shard's `__consumer_offsets`
partition, in the order the Results were produced. Once they are durable —
or once their append has failed — the runtime sends `replies` (each answers
the request with that id, possibly one parked by an earlier step) and, when
`on_durable` (the step's write) is set, calls its `WriteTracker`'s
`complete(on_durable, error_code, now_ms)` (0 when the append succeeded, else
the append's Kafka error code), then processes the Result that returns like
any other; it `track`s each `on_durable` as it appends the Result. Replies
whose content depends on the append's outcome (OffsetCommit, SyncGroup,
DeleteGroups, OffsetDelete, a static member's rejoin) only ever come from
`complete`, whose calls must follow append order (a log makes appends
durable in order). A Result without records has nothing to wait for.

`timers` are keyed: `Schedule(key, deadline_ms)` replaces any timer with that
key, `Cancel(key)` drops it (unknown keys are fine); apply them in list order.
When one comes due the runtime calls `shard.on_timer(key, now_ms)` on the same
serial queue (a stale or early call is harmless). `events` are rebalance
domain events (muster.coordinator.events) for `__muster_group_events`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the tracker builds Results
    from muster.coordinator.tracker import Write


@dataclass(frozen=True)
class Schedule:
    key: str
    deadline_ms: int


@dataclass(frozen=True)
class Cancel:
    key: str


TimerOp = Schedule | Cancel
Record = tuple[bytes, bytes | None]


@dataclass
class Result:
    records: list[Record] = field(default_factory=list)
    replies: list[tuple[int, Any]] = field(default_factory=list)
    timers: list[TimerOp] = field(default_factory=list)
    events: list[Any] = field(default_factory=list)
    on_durable: Write | None = None
    # the records are one transactional batch of this (producer id, epoch)
    producer: tuple[int, int] | None = None
    # instead of records: a transaction marker (producer id, epoch, commit)
    marker: tuple[int, int, bool] | None = None

    @property
    def empty(self) -> bool:
        return not (self.records or self.replies or self.timers or self.events or self.marker) and (
            self.on_durable is None
        )
