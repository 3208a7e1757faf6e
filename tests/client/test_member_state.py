"""The consumer member's state machine is its transition table."""

from __future__ import annotations

import pytest

from muster.client.core.member_state import (
    TRANSITIONS,
    IllegalTransition,
    MemberState,
    Trigger,
    next_state,
)


def test_every_state_has_a_way_out_and_reset_always_works() -> None:
    assert set(TRANSITIONS) == set(MemberState)
    for state, moves in TRANSITIONS.items():
        assert moves, state
        assert next_state(state, Trigger.RESET) is MemberState.UNJOINED


def test_the_happy_path_and_the_rejoin() -> None:
    state = MemberState.UNJOINED
    for trigger, expected in (
        (Trigger.JOIN_SENT, MemberState.REBALANCING),
        (Trigger.JOINED, MemberState.COMPLETING_REBALANCE),
        (Trigger.SYNCED, MemberState.STABLE),
        (Trigger.JOIN_SENT, MemberState.REBALANCING),  # a rejoin from Stable
        (Trigger.RESTART_JOIN, MemberState.UNJOINED),
    ):
        state = next_state(state, trigger)
        assert state is expected


@pytest.mark.parametrize(
    ("state", "trigger"),
    [
        (MemberState.UNJOINED, Trigger.SYNCED),
        (MemberState.STABLE, Trigger.JOINED),
        (MemberState.REBALANCING, Trigger.SYNCED),
        (MemberState.COMPLETING_REBALANCE, Trigger.JOIN_SENT),
    ],
)
def test_moves_not_in_the_table_are_bugs(state: MemberState, trigger: Trigger) -> None:
    with pytest.raises(IllegalTransition):
        next_state(state, trigger)
