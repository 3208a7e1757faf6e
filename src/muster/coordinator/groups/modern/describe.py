"""ConsumerGroupDescribe, and what ListGroups / DescribeGroups show of a
consumer group (Kafka's ConsumerGroup.asDescribedGroup, asListedGroup)."""

from __future__ import annotations

from typing import Any

from muster.coordinator import errors as E
from muster.coordinator.groups.modern.api import (
    ConsumerGroupDescribe,
    ConsumerGroupDescribeResponse,
)
from muster.coordinator.groups.modern.group import ConsumerGroup, iter_members
from muster.coordinator.groups.modern.heartbeat import preferred_assignor
from muster.coordinator.groups.modern.member import Partitions
from muster.coordinator.groups.store import GroupStore

PROTOCOL_TYPE = "consumer"
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)
# ConsumerGroupDescribe v1 MemberType: 0 = classic protocol, 1 = consumer protocol
CLASSIC_MEMBER_TYPE, CONSUMER_MEMBER_TYPE = 0, 1


def _assignment(group: ConsumerGroup, parts: Partitions) -> dict[str, Any]:
    names = group.topic_names()
    return {
        "topic_partitions": [
            {"topic_id": t, "topic_name": names.get(t, ""), "partitions": sorted(ps)}
            for t, ps in sorted(parts.items())
        ]
    }


def described(group: ConsumerGroup) -> dict[str, Any]:
    return {
        "error_code": E.NONE,
        "error_message": None,
        "group_id": group.group_id,
        "group_state": group.state,
        "group_epoch": group.epoch,
        "assignment_epoch": group.assignment_epoch,
        "assignor_name": "",
        "members": [
            {
                "member_id": m.member_id,
                "instance_id": m.instance_id,
                "rack_id": m.rack_id,
                "member_epoch": m.member_epoch,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "subscribed_topic_names": sorted(m.subscribed_topic_names),
                "subscribed_topic_regex": m.subscribed_topic_regex or "",  # Kafka 4.4: ""
                "assignment": _assignment(group, m.assigned),
                "target_assignment": _assignment(group, group.targets.get(m.member_id, {})),
                "member_type": CLASSIC_MEMBER_TYPE if m.uses_classic else CONSUMER_MEMBER_TYPE,
            }
            for m in iter_members(group)
        ],
        "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
    }


def not_found(group_id: str, message: str) -> dict[str, Any]:
    return {
        "error_code": E.GROUP_ID_NOT_FOUND,
        "error_message": message,
        "group_id": group_id,
        "group_state": "",  # as Kafka 4.4 answers (kafka-diff)
        "group_epoch": 0,
        "assignment_epoch": 0,
        "assignor_name": "",
        "members": [],
        "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
    }


def describe(store: GroupStore, group_id: str) -> dict[str, Any]:
    group = store.modern.get(group_id)
    if group is None:
        if store.get(group_id) is not None:
            return not_found(group_id, f"Group {group_id} is not a consumer group.")
        return not_found(group_id, f"Group {group_id} not found.")
    out = described(group)
    out["assignor_name"] = preferred_assignor(store, group)
    return out


def handle_describe(store: GroupStore, req: ConsumerGroupDescribe) -> ConsumerGroupDescribeResponse:
    return ConsumerGroupDescribeResponse(tuple(describe(store, gid) for gid in req.group_ids))


def listed(group: ConsumerGroup, states: tuple[str, ...], types: tuple[str, ...]) -> bool:
    """ListGroups filters, case-insensitive as Kafka's."""
    if states and group.state.lower() not in {s.lower() for s in states}:
        return False
    return not types or PROTOCOL_TYPE in {t.lower() for t in types}
