"""The groups of one shard, plus what every group handler needs (config and
the member-id generator)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from muster.coordinator.context import CoordinatorConfig
from muster.coordinator.groups.classic.group import ClassicGroup
from muster.coordinator.groups.modern.group import ConsumerGroup
from muster.coordinator.groups.share.group import ShareGroup
from muster.records.offsets_topic import GroupMetadataValue


def random_member_id(prefix: str) -> str:
    """Kafka's rule: (group instance id, else client id) + "-" + a random UUID."""
    return f"{prefix}-{uuid.uuid4()}"


# group kinds: the first key of the shard's request table (`coordinator/routes.py`)
CLASSIC = "classic"  # a classic group, or an id no group holds yet
MODERN = "consumer"  # a KIP-848 group (modern/); "consumer" is its type on the wire
SHARE = "share"  # a KIP-932 share group


@dataclass
class GroupStore:
    cfg: CoordinatorConfig
    new_member_id: Callable[[str], str] = random_member_id
    groups: dict[str, ClassicGroup] = field(default_factory=dict)
    # modern (KIP-848) groups: all durable state, changed only by
    # `modern.group.apply` (at write time and at load)
    modern: dict[str, ConsumerGroup] = field(default_factory=dict)
    # KIP-932 share groups: durable, changed only by `share.group.apply`
    share: dict[str, ShareGroup] = field(default_factory=dict)
    # transient: the topic image of each share group's last heartbeat
    share_topics: dict[str, Any] = field(default_factory=dict)
    # durable state: each group's last GroupMetadata record (log position,
    # value); only `replay_metadata` changes it
    records: dict[str, tuple[int, GroupMetadataValue]] = field(default_factory=dict)
    # transient: (group, member) -> when a classic member of a modern group
    # told to rejoin is fenced (`modern/classic_bridge.py`)
    classic_join_due: dict[tuple[str, str], int] = field(default_factory=dict)

    def persisted(self, group_id: str) -> GroupMetadataValue | None:
        """The group's last GroupMetadata record in the log (None: none or tombstoned)."""
        entry = self.records.get(group_id)
        return None if entry is None else entry[1]

    def replay_metadata(self, group_id: str, value: GroupMetadataValue | None, seq: int) -> None:
        """A GroupMetadata record at log position `seq` (None: a tombstone)."""
        if value is None:
            self.records.pop(group_id, None)
            return
        current = self.records.get(group_id)
        if current is None or current[0] < seq:
            self.records[group_id] = (seq, value)

    def kind_of(self, group_id: str) -> str:
        """The kind of group that serves this id (SHARE, MODERN or CLASSIC)."""
        if group_id in self.share:
            return SHARE
        return MODERN if group_id in self.modern else CLASSIC

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
