"""Request builders the scenario families share (classic groups, topics)."""

from __future__ import annotations

from typing import Any

from conformance.kafka_diff.session import Session
from muster.protocol.consumer_protocol import (
    Assignment,
    Subscription,
    encode_assignment,
    encode_subscription,
)

JOIN, SYNC, HEARTBEAT, LEAVE = 11, 14, 12, 13
DESCRIBE_GROUPS, LIST_GROUPS, DELETE_GROUPS = 15, 16, 42
OFFSET_COMMIT, OFFSET_FETCH, OFFSET_DELETE, TXN_OFFSET_COMMIT = 8, 9, 47, 28
CREATE_TOPICS, DELETE_TOPICS, METADATA = 19, 20, 3
CG_HEARTBEAT, CG_DESCRIBE = 68, 69

MEMBER_ID_REQUIRED = 79


def subscription(*topics: str) -> bytes:
    return encode_subscription(Subscription(topics=topics), 1)


def assignment(parts: dict[str, list[int]]) -> bytes:
    return encode_assignment(Assignment(partitions=parts), 1)


def join_body(
    group: str,
    member_id: str = "",
    instance: str | None = None,
    protocols: list[tuple[str, bytes]] | None = None,
    protocol_type: str = "consumer",
    session_timeout: int = 30000,
    rebalance_timeout: int = 30000,
    reason: str | None = None,
) -> dict[str, Any]:
    return {
        "group_id": group,
        "session_timeout": session_timeout,
        "rebalance_timeout": rebalance_timeout,
        "member_id": member_id,
        "group_instance_id": instance,
        "protocol_type": protocol_type,
        "protocols": [
            {"name": n, "metadata": m} for n, m in (protocols or [("range", subscription("t"))])
        ],
        "reason": reason,
    }


def join(
    s: Session, v: int, group: str, label: str = "join", conn: int = 0, **kw: Any
) -> dict[str, Any]:
    """JoinGroup at version v; on MEMBER_ID_REQUIRED (v4+) the rejoin with the id."""
    body = join_body(group, **kw)
    answer = s.call(JOIN, v, body, label, conn)
    if isinstance(answer, dict) and answer.get("error_code") == MEMBER_ID_REQUIRED:
        body["member_id"] = answer["member_id"]
        answer = s.call(JOIN, v, body, f"{label}_again", conn)
    return answer


def sync(
    s: Session,
    v: int,
    group: str,
    member: str,
    generation: int,
    assignments: dict[str, bytes] | None = None,
    label: str = "sync",
    conn: int = 0,
    instance: str | None = None,
    protocol_name: str | None = "range",
) -> Any:
    body = {
        "group_id": group,
        "generation_id": generation,
        "member_id": member,
        "group_instance_id": instance,
        "protocol_type": "consumer",
        "protocol_name": protocol_name,
        "assignments": [{"member_id": m, "assignment": a} for m, a in (assignments or {}).items()],
    }
    return s.call(SYNC, v, body, label, conn)


def heartbeat(
    s: Session,
    v: int,
    group: str,
    member: str,
    generation: int,
    label: str = "heartbeat",
    conn: int = 0,
    instance: str | None = None,
) -> Any:
    body = {
        "group_id": group,
        "generation_id": generation,
        "member_id": member,
        "group_instance_id": instance,
    }
    return s.call(HEARTBEAT, v, body, label, conn)


def leave(
    s: Session,
    v: int,
    group: str,
    member: str,
    label: str = "leave",
    instance: str | None = None,
    conn: int = 0,
) -> Any:
    body = {
        "group_id": group,
        "member_id": member,
        "members": [{"member_id": member, "group_instance_id": instance, "reason": "kdiff"}],
    }
    return s.call(LEAVE, v, body, label, conn)


def describe(s: Session, group: str, v: int = 5, label: str = "describe") -> Any:
    return s.call(
        DESCRIBE_GROUPS, v, {"groups": [group], "include_authorized_operations": False}, label
    )


def stable_member(
    s: Session, group: str, join_v: int = 9, sync_v: int = 5, **kw: Any
) -> tuple[str, int]:
    """A single member joined and synced (its own assignment): (member id, generation)."""
    a = join(s, join_v, group, **kw)
    member, gen = a["member_id"], a["generation_id"]
    sync(
        s, sync_v, group, member, gen, {member: assignment({"t": [0]})}, instance=kw.get("instance")
    )
    return member, gen


def create_topic(
    s: Session,
    name: str,
    partitions: int = 1,
    label: str | None = None,
    configs: dict[str, str] | None = None,
) -> Any:
    body = {
        "topics": [
            {
                "name": name,
                "num_partitions": partitions,
                "replication_factor": 1,
                "assignments": [],
                "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
            }
        ],
        "timeout": 30000,
        "validate_only": False,
    }
    answer = s.call(CREATE_TOPICS, 7, body, label or "create_topic", record=label is not None)
    if label is None and isinstance(answer, dict):  # topic ids numbered in creation order
        s.record("topic", [{k: t[k] for k in ("name", "topic_id")} for t in answer["topics"]])
    # wait until the topic has a leader (Kafka's metadata catches up asynchronously)
    s.wait(lambda: _has_leader(s, name), 20)
    s.wait(lambda: _serves(s, name, partitions), 20)
    return answer


def _serves(s: Session, topic: str, partitions: int) -> bool:
    """The partitions answer ListOffsets (Kafka's replica may lag its metadata)."""
    body = {
        "replica_id": -1,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {"partition_index": p, "timestamp": -1} for p in range(max(partitions, 1))
                ],
            }
        ],
    }
    a = s.call(2, 7, body, record=False)
    return isinstance(a, dict) and all(
        p["error_code"] == 0 for t in a["topics"] for p in t["partitions"]
    )


def _has_leader(s: Session, topic: str) -> bool:
    a = s.call(
        METADATA,
        12,
        {
            "topics": [{"name": topic}],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        },
        record=False,
    )
    if not isinstance(a, dict):
        return False
    return all(
        t["error_code"] == 0
        and all(p["leader_id"] >= 0 for p in t["partitions"])
        and t["partitions"]
        for t in a["topics"]
    )


def init_producer_id(s: Session, txn: str | None) -> Any:
    """InitProducerId v4 for `txn` (None: an idempotent producer), not recorded:
    the raw answer (a dict, or the session's marker of a closed connection)."""
    return s.call(
        22,
        4,
        {
            "transactional_id": txn,
            "transaction_timeout": 60000,
            "producer_id": -1,
            "producer_epoch": -1,
        },
        record=False,
    )
