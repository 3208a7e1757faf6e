"""The consumer-protocol (KIP-848) member's state machine is its transition
table: every (state, trigger) pair is either the move the protocol defines or
a bug (IllegalTransition)."""

from __future__ import annotations

import itertools

import pytest

from muster.client.core.consumer_state import (
    TRANSITIONS,
    ConsumerState,
    ConsumerTrigger,
    next_state,
)
from muster.client.core.member_state import IllegalTransition

S, T = ConsumerState, ConsumerTrigger
JOINED = (S.JOINING, S.RECONCILING, S.ACKNOWLEDGING, S.STABLE)

# Java's MemberState transitions (the new consumer), restated as the moves
# each trigger makes. Anything not listed is illegal.
EXPECTED: dict[tuple[ConsumerState, ConsumerTrigger], ConsumerState] = {
    (S.UNSUBSCRIBED, T.SUBSCRIBED): S.JOINING,
    (S.UNSUBSCRIBED, T.LEAVE): S.UNSUBSCRIBED,
    (S.UNSUBSCRIBED, T.LEFT): S.UNSUBSCRIBED,
    (S.UNSUBSCRIBED, T.FATAL): S.FATAL,
    (S.JOINING, T.ASSIGNED): S.RECONCILING,
    (S.RECONCILING, T.ASSIGNED): S.RECONCILING,
    (S.RECONCILING, T.RECONCILED): S.ACKNOWLEDGING,
    (S.ACKNOWLEDGING, T.ASSIGNED): S.RECONCILING,
    (S.ACKNOWLEDGING, T.ACK_SENT): S.STABLE,
    (S.STABLE, T.ASSIGNED): S.RECONCILING,
    (S.FENCED, T.REJOIN): S.JOINING,
    (S.FENCED, T.LEAVE): S.PREPARE_LEAVING,
    (S.FENCED, T.FATAL): S.FATAL,
    (S.PREPARE_LEAVING, T.LEAVE_SENT): S.LEAVING,
    (S.PREPARE_LEAVING, T.LEFT): S.UNSUBSCRIBED,
    (S.PREPARE_LEAVING, T.FATAL): S.FATAL,
    (S.LEAVING, T.LEFT): S.UNSUBSCRIBED,
    (S.LEAVING, T.FATAL): S.FATAL,
    (S.STALE, T.REJOIN): S.JOINING,
    (S.STALE, T.LEAVE): S.PREPARE_LEAVING,
    (S.STALE, T.LEFT): S.STALE,
    (S.STALE, T.FATAL): S.FATAL,
}
for _joined in JOINED:
    EXPECTED[(_joined, T.FENCED)] = S.FENCED
    EXPECTED[(_joined, T.LEAVE)] = S.PREPARE_LEAVING
    EXPECTED[(_joined, T.POLL_TIMEOUT)] = S.STALE
    EXPECTED[(_joined, T.FATAL)] = S.FATAL


@pytest.mark.parametrize(("state", "trigger"), list(itertools.product(S, T)))
def test_every_state_and_trigger(state: ConsumerState, trigger: ConsumerTrigger) -> None:
    expected = EXPECTED.get((state, trigger))
    if expected is None:
        with pytest.raises(IllegalTransition):
            next_state(state, trigger)
    else:
        assert next_state(state, trigger) is expected


def test_every_state_is_reachable_and_fatal_is_final() -> None:
    assert set(TRANSITIONS) == set(S)
    seen, frontier = {S.UNSUBSCRIBED}, [S.UNSUBSCRIBED]
    while frontier:
        for target in TRANSITIONS[frontier.pop()].values():
            if target not in seen:
                seen.add(target)
                frontier.append(target)
    assert seen == set(S)
    assert TRANSITIONS[S.FATAL] == {}
