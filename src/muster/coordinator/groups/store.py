"""The groups of one shard, plus what every group handler needs (config and
the member-id generator)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from muster.coordinator.context import CoordinatorConfig
from muster.coordinator.groups.classic.group import ClassicGroup


def random_member_id(prefix: str) -> str:
    """Kafka's rule: (group instance id, else client id) + "-" + a random UUID."""
    return f"{prefix}-{uuid.uuid4()}"


@dataclass
class GroupStore:
    cfg: CoordinatorConfig
    new_member_id: Callable[[str], str] = random_member_id
    groups: dict[str, ClassicGroup] = field(default_factory=dict)

    def get(self, group_id: str) -> ClassicGroup | None:
        return self.groups.get(group_id)

    def get_or_create(self, group_id: str) -> ClassicGroup:
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = ClassicGroup(group_id)
        return group

    def remove(self, group_id: str) -> None:
        self.groups.pop(group_id, None)

    def __iter__(self) -> Iterator[ClassicGroup]:
        return iter(list(self.groups.values()))
