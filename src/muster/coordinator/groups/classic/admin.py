"""DescribeGroups, ListGroups and DeleteGroups for classic groups."""

from __future__ import annotations

from muster.coordinator import errors as E
from muster.coordinator.groups.classic.group import ClassicGroup
from muster.coordinator.groups.classic.state import GroupState as S
from muster.coordinator.responses import DescribedGroup, DescribedGroupMember, ListedGroup

CLASSIC = "classic"


def describe(group_id: str, group: ClassicGroup | None) -> DescribedGroup:
    if group is None or group.is_(S.DEAD):
        return DescribedGroup(E.NONE, group_id, S.DEAD.value, "", "")
    stable = group.is_(S.STABLE)
    members = tuple(
        DescribedGroupMember(
            m.member_id,
            m.group_instance_id,
            m.client_id,
            m.client_host,
            m.metadata(group.protocol_name) if stable else b"",
            m.assignment,  # Kafka 4.4 shows the last assignment in every state
        )
        for m in group.members.values()
    )
    return DescribedGroup(
        E.NONE,
        group_id,
        group.state.value,
        group.protocol_type or "",
        (group.protocol_name or "") if stable else "",
        members,
    )


def listed(group: ClassicGroup, states: tuple[str, ...], types: tuple[str, ...]) -> bool:
    if group.is_(S.DEAD):
        return False
    if states and group.state.value.lower() not in {s.lower() for s in states}:
        return False
    return not types or CLASSIC in {t.lower() for t in types}


def listing(group: ClassicGroup) -> ListedGroup:
    return ListedGroup(group.group_id, group.protocol_type or "", group.state.value, CLASSIC)
