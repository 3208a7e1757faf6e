"""ShareGroupDescribe (77) and the share groups' rows of ListGroups."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from muster.coordinator import errors as E
from muster.coordinator.groups.share import assignor
from muster.coordinator.groups.share.group import Partitions, ShareGroup

PROTOCOL_TYPE = "share"
# Kafka's default authorized_operations when not asked for
_NO_OPERATIONS = -(2**31)


def not_found(group_id: str, message: str) -> dict[str, Any]:
    return {
        "error_code": E.GROUP_ID_NOT_FOUND,
        "error_message": message,
        "group_id": group_id,
        "group_state": "",  # Kafka 4.4 names no state for a group it does not hold
        "group_epoch": 0,
        "assignment_epoch": 0,
        "assignor_name": "",
        "members": [],
        "authorized_operations": _NO_OPERATIONS,
    }


def _assignment(parts: Partitions, names: Mapping[uuid.UUID, str]) -> dict[str, Any]:
    return {
        "topic_partitions": [
            {"topic_id": t, "topic_name": names.get(t, ""), "partitions": list(ps)}
            for t, ps in sorted(parts.items())
        ]
    }


def described(group: ShareGroup, names: Mapping[uuid.UUID, str]) -> dict[str, Any]:
    return {
        "error_code": E.NONE,
        "error_message": None,
        "group_id": group.group_id,
        "group_state": group.state,
        "group_epoch": group.epoch,
        "assignment_epoch": group.assignment_epoch,
        "assignor_name": assignor.NAME,
        "members": [
            {
                "member_id": m.member_id,
                "rack_id": m.rack_id,
                "member_epoch": m.member_epoch,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "subscribed_topic_names": list(m.subscribed),
                "assignment": _assignment(m.assigned, names),
            }
            for m in sorted(group.members.values(), key=lambda m: m.member_id)
        ],
        "authorized_operations": _NO_OPERATIONS,
    }


def listed(group: ShareGroup, states: tuple[str, ...], types: tuple[str, ...]) -> bool:
    """ListGroups filters, case-insensitive as Kafka's."""
    if states and group.state.lower() not in {s.lower() for s in states}:
        return False
    return not types or PROTOCOL_TYPE in {t.lower() for t in types}
