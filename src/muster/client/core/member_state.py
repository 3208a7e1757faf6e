"""The consumer's group-membership state machine as a table: which trigger
moves a member from which state to which (h11-style). `GroupMembership`
changes its state only through `next_state`, so the diagram below is the
whole story:

    UNJOINED --join_sent--> REBALANCING --joined--> COMPLETING_REBALANCE --synced--> STABLE
       ^  ^                  |  |                        |                             |
       |  +--member_id_given-+  +--restart_join--+       +--restart_join--+            |
       |                                          v                        v            |
       +------------------------------------ UNJOINED <-------------------+            |
    STABLE --join_sent--> REBALANCING (a rejoin: metadata changed, cooperative revocation)
    any --reset--> UNJOINED (left the group, fenced, generation lost)
"""

from __future__ import annotations

import enum


class MemberState(enum.Enum):
    UNJOINED = "UNJOINED"
    REBALANCING = "REBALANCING"  # JoinGroup sent / preparing to send it
    COMPLETING_REBALANCE = "COMPLETING_REBALANCE"  # SyncGroup sent
    STABLE = "STABLE"


class Trigger(enum.Enum):
    JOIN_SENT = "join_sent"  # a JoinGroup goes out
    JOINED = "joined"  # JoinGroup answered: member of the new generation
    MEMBER_ID_GIVEN = "member_id_given"  # JoinGroup answered MEMBER_ID_REQUIRED
    SYNCED = "synced"  # SyncGroup answered: the assignment is installed
    RESTART_JOIN = "restart_join"  # the rebalance starts over, same member id
    RESET = "reset"  # the generation is gone (left, fenced, lost)


S, T = MemberState, Trigger

TRANSITIONS: dict[MemberState, dict[Trigger, MemberState]] = {
    S.UNJOINED: {T.JOIN_SENT: S.REBALANCING, T.RESET: S.UNJOINED},
    S.REBALANCING: {
        T.JOINED: S.COMPLETING_REBALANCE,
        T.MEMBER_ID_GIVEN: S.UNJOINED,
        T.RESTART_JOIN: S.UNJOINED,
        T.RESET: S.UNJOINED,
    },
    S.COMPLETING_REBALANCE: {
        T.SYNCED: S.STABLE,
        T.RESTART_JOIN: S.UNJOINED,
        T.RESET: S.UNJOINED,
    },
    S.STABLE: {T.JOIN_SENT: S.REBALANCING, T.RESET: S.UNJOINED},
}


class IllegalTransition(RuntimeError):
    """A bug in the membership core, never a broker's or an application's fault."""


def next_state(state: MemberState, trigger: Trigger) -> MemberState:
    try:
        return TRANSITIONS[state][trigger]
    except KeyError:
        raise IllegalTransition(f"{trigger.value} in {state.value}") from None
