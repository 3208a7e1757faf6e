"""The consumer-protocol (KIP-848, `group.protocol=consumer`) member's
states and transitions as a table, like `member_state.py` for the classic
protocol. `ConsumerGroupMember` changes its state only through
`next_state`, so this is the whole story (the states are Java's
`MemberState` of the new consumer):

    UNSUBSCRIBED --subscribed--> JOINING --assigned--> RECONCILING --reconciled--> ACKNOWLEDGING
                                    ^                    ^     |                         |
                                    |                    |     +--assigned (again)       | ack_sent
                                    |                    +--assigned-- STABLE <----------+
                                    |
       FENCED / UNKNOWN_MEMBER_ID: (joined state) --fenced--> FENCED --rejoin--> JOINING
                                    (lost callback first: the partitions are gone)
       close/unsubscribe:           (joined state) --leave--> PREPARE_LEAVING
                                    PREPARE_LEAVING --leave_sent--> LEAVING --left--> UNSUBSCRIBED
       max.poll.interval.ms:        (joined state) --poll_timeout--> STALE --rejoin--> JOINING
       a fatal error:               any --fatal--> FATAL (nothing more is sent)

"Joined state" is JOINING, RECONCILING, ACKNOWLEDGING or STABLE.
"""

from __future__ import annotations

import enum

from muster.client.core.member_state import IllegalTransition


class ConsumerState(enum.Enum):
    UNSUBSCRIBED = "UNSUBSCRIBED"  # no subscription: not in the group, no heartbeats
    JOINING = "JOINING"  # heartbeats with epoch 0 until an epoch comes back
    RECONCILING = "RECONCILING"  # moving toward the broker's assignment (callbacks)
    ACKNOWLEDGING = "ACKNOWLEDGING"  # reconciled: the next heartbeat (now) reports it
    STABLE = "STABLE"  # owns what the broker assigned; heartbeats at its interval
    FENCED = "FENCED"  # epoch fenced / member unknown: partitions lost, then rejoin
    PREPARE_LEAVING = "PREPARE_LEAVING"  # revoke callbacks before the leave heartbeat
    LEAVING = "LEAVING"  # the heartbeat with epoch -1 (static: -2) is going out
    STALE = "STALE"  # left for max.poll.interval.ms; rejoins on the next app poll
    FATAL = "FATAL"  # an unrecoverable answer: nothing more is sent


class ConsumerTrigger(enum.Enum):
    SUBSCRIBED = "subscribed"  # the application subscribed to something
    ASSIGNED = "assigned"  # a heartbeat answer brought an assignment to reconcile
    RECONCILED = "reconciled"  # callbacks of the reconciliation ran: owned == target
    ACK_SENT = "ack_sent"  # the heartbeat reporting the owned partitions went out
    FENCED = "fenced"  # FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID
    REJOIN = "rejoin"  # back to epoch 0 (after fencing's lost callback, after STALE)
    LEAVE = "leave"  # close() / unsubscribe: revoke, then the leave heartbeat
    LEAVE_SENT = "leave_sent"  # the leave heartbeat is built
    LEFT = "left"  # out of the group (leave answered or given up)
    POLL_TIMEOUT = "poll_timeout"  # the application stopped polling
    FATAL = "fatal"


S, T = ConsumerState, ConsumerTrigger

_JOINED = (S.JOINING, S.RECONCILING, S.ACKNOWLEDGING, S.STABLE)

TRANSITIONS: dict[ConsumerState, dict[ConsumerTrigger, ConsumerState]] = {
    S.UNSUBSCRIBED: {
        T.SUBSCRIBED: S.JOINING,
        T.LEAVE: S.UNSUBSCRIBED,  # close() before ever subscribing
        T.LEFT: S.UNSUBSCRIBED,
        T.FATAL: S.FATAL,
    },
    S.JOINING: {T.ASSIGNED: S.RECONCILING},
    S.RECONCILING: {T.ASSIGNED: S.RECONCILING, T.RECONCILED: S.ACKNOWLEDGING},
    S.ACKNOWLEDGING: {T.ASSIGNED: S.RECONCILING, T.ACK_SENT: S.STABLE},
    S.STABLE: {T.ASSIGNED: S.RECONCILING},
    S.FENCED: {
        T.REJOIN: S.JOINING,
        T.LEAVE: S.PREPARE_LEAVING,
        T.FATAL: S.FATAL,
    },
    S.PREPARE_LEAVING: {T.LEAVE_SENT: S.LEAVING, T.LEFT: S.UNSUBSCRIBED, T.FATAL: S.FATAL},
    S.LEAVING: {T.LEFT: S.UNSUBSCRIBED, T.FATAL: S.FATAL},
    S.STALE: {
        T.REJOIN: S.JOINING,
        T.LEAVE: S.PREPARE_LEAVING,
        T.LEFT: S.STALE,
        T.FATAL: S.FATAL,
    },
    S.FATAL: {},
}
for _state in _JOINED:  # what every joined state shares
    TRANSITIONS[_state] |= {
        T.FENCED: S.FENCED,
        T.LEAVE: S.PREPARE_LEAVING,
        T.POLL_TIMEOUT: S.STALE,
        T.FATAL: S.FATAL,
    }


def next_state(state: ConsumerState, trigger: ConsumerTrigger) -> ConsumerState:
    try:
        return TRANSITIONS[state][trigger]
    except KeyError:
        raise IllegalTransition(f"{trigger.value} in {state.value}") from None
