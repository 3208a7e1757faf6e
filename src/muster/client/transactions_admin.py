"""ListTransactions and DescribeTransactions, as kafka-transactions.sh asks
them: every broker lists the transactions it coordinates; a transaction is
described by its coordinator (FindCoordinator with the transaction key type)."""

from __future__ import annotations

from dataclasses import dataclass

from muster.client.admin import AIOAdmin
from muster.client.errors import error_for

FIND_COORDINATOR, DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS = 10, 65, 66
TRANSACTION_KEY = 1  # FindCoordinator's key type for a transactional id


@dataclass(frozen=True)
class TransactionListing:
    transactional_id: str
    coordinator: int
    producer_id: int
    state: str


@dataclass(frozen=True)
class TransactionDescription:
    coordinator: int
    transactional_id: str
    producer_id: int
    producer_epoch: int
    state: str
    timeout_ms: int
    start_ms: int  # -1: no transaction in progress
    partitions: tuple[tuple[str, int], ...]


async def list_transactions(admin: AIOAdmin) -> list[TransactionListing]:
    found = []
    for node in sorted(admin.cluster.brokers):
        conn = await admin.cluster.connection(node)
        body = {"state_filters": [], "producer_id_filters": [], "duration_filter": -1}
        answer = await conn.send(LIST_TRANSACTIONS, body)
        if int(answer.error_code) != 0:
            raise error_for(int(answer.error_code), f"ListTransactions on node {node}")
        found += [
            TransactionListing(t.transactional_id, node, int(t.producer_id), t.transaction_state)
            for t in answer.transaction_states
        ]
    return sorted(found, key=lambda t: t.transactional_id)


async def describe_transaction(admin: AIOAdmin, transactional_id: str) -> TransactionDescription:
    answer = await admin.cluster.send_any(
        FIND_COORDINATOR,
        {
            "key": transactional_id,
            "key_type": TRANSACTION_KEY,
            "coordinator_keys": [transactional_id],
        },
    )
    entry = answer.coordinators[0] if getattr(answer, "coordinators", None) else answer
    if int(entry.error_code) != 0:
        raise error_for(int(entry.error_code), f"FindCoordinator {transactional_id}")
    node = int(entry.node_id)
    conn = await admin.cluster.coordinator_connection(node, str(entry.host), int(entry.port))
    described = await conn.send(DESCRIBE_TRANSACTIONS, {"transactional_ids": [transactional_id]})
    [state] = described.transaction_states
    if int(state.error_code) != 0:
        raise error_for(int(state.error_code), f"DescribeTransactions {transactional_id}")
    return TransactionDescription(
        node,
        state.transactional_id,
        int(state.producer_id),
        int(state.producer_epoch),
        state.transaction_state,
        _ms(state.transaction_timeout),
        _ms(state.transaction_start_time),
        tuple(sorted((t.topic, int(p)) for t in state.topics for p in t.partitions)),
    )


def _ms(value: object) -> int:
    """kio reads durations and instants as timedelta/datetime (None for -1)."""
    if value is None:
        return -1
    total = getattr(value, "total_seconds", None)
    if total is not None:
        return round(total() * 1000)
    stamp = getattr(value, "timestamp", None)
    if stamp is not None:
        return round(stamp() * 1000)
    return int(value)  # type: ignore[call-overload]
