"""The classic group's state table (spec §4): the one place that says which
transitions are legal."""

from __future__ import annotations

from enum import Enum, StrEnum


class GroupState(StrEnum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


S = GroupState

VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    S.EMPTY: frozenset({S.PREPARING_REBALANCE}),
    S.PREPARING_REBALANCE: frozenset({S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY}),
    S.COMPLETING_REBALANCE: frozenset({S.PREPARING_REBALANCE}),
    S.STABLE: frozenset({S.COMPLETING_REBALANCE}),
    S.DEAD: frozenset({S.STABLE, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.EMPTY, S.DEAD}),
}


class IllegalStateTransition(RuntimeError):
    """A bug in the coordinator, never a client error."""


def check_transition(current: GroupState, new: GroupState) -> None:
    if current not in VALID_PREVIOUS[new]:
        raise IllegalStateTransition(f"{current.value} -> {new.value} is not a valid transition")


class JoinPhase(Enum):
    """What ends a group's PreparingRebalance phase (the `join` timer)."""

    # Kafka's InitialDelayedJoin: an Empty group's first rebalance waits
    # group.initial.rebalance.delay.ms, again while new members keep arriving,
    # and never completes early
    INITIAL_DELAY = "initial_delay"
    # Kafka's DelayedJoin: completes once every member has rejoined, or when
    # the rebalance timeout expires
    REBALANCE_TIMEOUT = "rebalance_timeout"
