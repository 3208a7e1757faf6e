"""During a classic group's rebalance: who the join phase waits for, and
until when; in a consumer (KIP-848) group, who is not at its target
assignment yet, and until when (`reconciling`).

On muster, `join_round`: the coordinator writes a JoinWaiting event for each
JoinGroup it holds in the join phase (with the phase's deadline), so the
members DescribeGroups lists without one are the ones still awaited. Kafka's
DescribeGroups cannot tell a rejoined member from an awaited one, so on any
other broker `awaited` falls back to the last stable generation (from
`__consumer_offsets`): its members are the ones expected back, the join phase
ends at the latest when the largest rebalance timeout has run since the
rebalance started."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from muster.coordinator.derived import DerivedMember, Generation
from muster.coordinator.events import (
    GroupEvent,
    JoinCompleted,
    JoinWaiting,
    RebalanceCompleted,
    RebalanceStarted,
)
from muster.coordinator.events_modern import ConsumerMemberReconciled, ConsumerTargetAssigned


class MemberLike(Protocol):
    @property
    def member_id(self) -> str: ...

    @property
    def client_id(self) -> str: ...

    @property
    def client_host(self) -> str: ...


@dataclass(frozen=True)
class Expected:
    member: DerivedMember
    present: bool  # still held by the coordinator (rejoined, or not yet dropped)


@dataclass(frozen=True)
class Awaited:
    generation: int
    expected: tuple[Expected, ...]
    newcomers: tuple[str, ...]  # members the coordinator holds that the last generation lacked
    deadline_ms: int | None  # start + largest rebalance timeout

    @property
    def missing(self) -> tuple[Expected, ...]:
        return tuple(e for e in self.expected if not e.present)


def awaited(
    history: list[Generation], described: Iterable[str], started_ms: int | None
) -> Awaited | None:
    """None without a stable generation to compare with."""
    last = next((g for g in reversed(history) if g.kind == "generation" and g.members), None)
    if last is None:
        return None
    now = set(described)
    expected = tuple(Expected(m, m.member_id in now) for m in last.members)
    before = {m.member_id for m in last.members}
    timeout = max((m.rebalance_timeout_ms for m in last.members), default=-1)
    deadline = started_ms + timeout if started_ms is not None and timeout > 0 else None
    return Awaited(last.number, expected, tuple(sorted(now - before)), deadline)


# ---- on muster: the join phase as the coordinator tells it ----------------------


@dataclass(frozen=True)
class Held:
    """A member the coordinator holds in the join phase now (DescribeGroups)."""

    member_id: str
    client_id: str
    client_host: str
    rejoined_ms: int | None  # its JoinGroup's arrival this round; None: still awaited


@dataclass(frozen=True)
class JoinRound:
    generation: int  # the one being left
    started_ms: int
    deadline_ms: int | None  # None until a JoinWaiting has told it
    members: tuple[Held, ...]

    @property
    def rejoined(self) -> tuple[Held, ...]:
        return tuple(m for m in self.members if m.rejoined_ms is not None)

    @property
    def awaiting(self) -> tuple[Held, ...]:
        return tuple(m for m in self.members if m.rejoined_ms is None)


def join_round(events: list[GroupEvent], described: Iterable[MemberLike]) -> JoinRound | None:
    """The join phase in progress from muster's events: its last
    RebalanceStarted, the JoinWaiting events since (who rejoined, the deadline).
    None when no join phase is open (JoinCompleted since, or none started).
    Members DescribeGroups no longer lists were dropped, and are not shown."""
    start = next(
        (i for i in range(len(events) - 1, -1, -1) if isinstance(events[i], RebalanceStarted)),
        None,
    )
    if start is None:
        return None
    began = events[start]
    assert isinstance(began, RebalanceStarted)
    rejoined: dict[str, int] = {}
    deadline = None
    for e in events[start + 1 :]:
        if isinstance(e, JoinCompleted | RebalanceCompleted):
            return None
        if isinstance(e, JoinWaiting):
            rejoined.setdefault(e.member_id, e.at_ms)
            deadline = e.deadline_ms or deadline  # the initial delay can move it on
    members = tuple(
        Held(m.member_id, m.client_id, m.client_host, rejoined.get(m.member_id)) for m in described
    )
    return JoinRound(began.generation, began.at_ms, deadline, members)


# ---- consumer (KIP-848) groups: who is not at its target yet, and until when ----


@dataclass(frozen=True)
class Reconciling:
    """A consumer-group member not yet at the target assignment, and the time
    by which the coordinator removes it unless it has moved (None: it waits on
    others, no deadline of its own)."""

    member_id: str
    why: str  # "revoking": must give up partitions; "releasing": waits on others;
    # "heartbeat": has not heartbeated since the target was set
    deadline_ms: int | None
    revoking: tuple[str, ...] = ()


def reconciling(
    events: list[GroupEvent], member_ids: Iterable[str], session_timeout_ms: int | None
) -> dict[str, Reconciling]:
    """From muster's events: for each member id (members behind the target,
    from ConsumerGroupDescribe) its revocation deadline (the coordinator's
    ConsumerMemberReconciled: at_ms + rebalance timeout), or, if it has not
    heartbeated since the target was computed (no ConsumerMemberReconciled since
    the last ConsumerTargetAssigned), the latest its session can expire: its
    last heartbeat was before the target, so target time + session timeout."""
    target_at = next(
        (e.at_ms for e in reversed(events) if isinstance(e, ConsumerTargetAssigned)), None
    )
    latest: dict[str, ConsumerMemberReconciled] = {}
    for e in events:
        if isinstance(e, ConsumerMemberReconciled):
            latest[e.member_id] = e
    out = {}
    for member_id in member_ids:
        last = latest.get(member_id)
        if last is not None and target_at is not None and last.at_ms >= target_at:
            if last.state == "UNREVOKED_PARTITIONS":
                deadline = last.deadline_ms or None
                out[member_id] = Reconciling(member_id, "revoking", deadline, last.revoking)
            else:
                out[member_id] = Reconciling(member_id, "releasing", None)
        elif target_at is not None and session_timeout_ms:
            out[member_id] = Reconciling(member_id, "heartbeat", target_at + session_timeout_ms)
    return out
