"""Consumer groups (KIP-848) as ConsumerGroupDescribe tells them: group and
assignment epochs, the assignor, and per member its epoch, subscription, and
its current assignment next to the target the coordinator computed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from muster.client.errors import KafkaError

if TYPE_CHECKING:
    from muster.client.admin import AIOAdmin

CONSUMER_GROUP_DESCRIBE = 69

Partition = tuple[str, int]


@dataclass(frozen=True)
class ConsumerMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed: tuple[str, ...]
    current: frozenset[Partition]
    target: frozenset[Partition]

    @property
    def reconciling(self) -> bool:
        return self.current != self.target


@dataclass(frozen=True)
class ConsumerGroupView:
    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor: str
    members: tuple[ConsumerMember, ...]


def _partitions(assignment: Any, names: dict[Any, str]) -> frozenset[Partition]:
    out = set()
    for t in getattr(assignment, "topic_partitions", None) or ():
        name = getattr(t, "topic_name", None) or names.get(t.topic_id, str(t.topic_id))
        out.update((name, int(p)) for p in t.partitions)
    return frozenset(out)


async def describe_consumer_group(admin: AIOAdmin, group_id: str) -> ConsumerGroupView | None:
    """None when the broker does not serve ConsumerGroupDescribe, or the group
    is not a consumer group."""
    try:
        conn = await admin._coordinator(group_id)
        if not conn.supports(CONSUMER_GROUP_DESCRIBE):
            return None
        response = await conn.send(
            CONSUMER_GROUP_DESCRIBE,
            {"group_ids": [group_id], "include_authorized_operations": False},
        )
    except KafkaError:
        return None
    names = admin.cluster.topic_ids()
    for g in response.groups:
        if int(g.error_code) != 0:  # not a consumer group, not authorized, ...
            return None
        members = tuple(
            ConsumerMember(
                m.member_id,
                m.instance_id,
                m.rack_id,
                int(m.member_epoch),
                m.client_id,
                m.client_host,
                tuple(m.subscribed_topic_names or ()),
                _partitions(m.assignment, names),
                _partitions(m.target_assignment, names),
            )
            for m in g.members
        )
        return ConsumerGroupView(
            g.group_id,
            g.group_state,
            int(g.group_epoch),
            int(g.assignment_epoch),
            g.assignor_name,
            members,
        )
    return None
