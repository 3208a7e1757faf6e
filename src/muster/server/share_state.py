"""The broker's share-group serving state (KIP-932), in memory in this
slice: share partitions (`muster.share.partition`), share sessions (Kafka's
ShareSessionCache) and the groups' dynamic configs set through
IncrementalAlterConfigs on the GROUP resource. Nothing here survives a
restart yet (see SHARE_STATUS.md: `__share_group_state` comes next)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from muster.share.partition import SharePartition

# ShareFetch/ShareAcknowledge session epochs (Kafka's ShareRequestMetadata)
INITIAL_EPOCH, FINAL_EPOCH = 0, -1

# the group configs a GROUP resource takes (Kafka's GroupConfig), with defaults
GROUP_CONFIGS: dict[str, str] = {
    "share.auto.offset.reset": "latest",
    "share.isolation.level": "read_uncommitted",
    "share.record.lock.duration.ms": "30000",
    "share.session.timeout.ms": "45000",
    "share.heartbeat.interval.ms": "5000",
    "consumer.session.timeout.ms": "45000",
    "consumer.heartbeat.interval.ms": "5000",
}

TopicPartition = tuple[uuid.UUID, int]


@dataclass
class ShareSession:
    group_id: str
    member_id: str
    epoch: int = 1  # the epoch the next request must carry
    partitions: set[TopicPartition] = field(default_factory=set)


def next_epoch(epoch: int) -> int:
    return 1 if epoch >= 2**31 - 1 else epoch + 1


def check_group_config(name: str, value: str) -> str | None:
    """Why a group config cannot take this value (None: it can)."""
    if name not in GROUP_CONFIGS:
        return f"Unknown group config name: {name}"
    if name == "share.auto.offset.reset":
        if value not in ("latest", "earliest") and not value.startswith("by_duration:"):
            return f"Invalid value {value} for configuration share.auto.offset.reset"
    elif name == "share.isolation.level":
        if value not in ("read_uncommitted", "read_committed"):
            return f"Invalid value {value} for configuration share.isolation.level"
    else:
        try:
            int(value)
        except ValueError:
            return f"Invalid value {value} for configuration {name}"
    return None


class ShareState:
    def __init__(self, config: Mapping[str, Any]) -> None:
        self.lock_ms = int(config.get("group.share.record.lock.duration.ms", 30000))
        self.delivery_limit = int(config.get("group.share.delivery.count.limit", 5))
        self.max_locks = int(config.get("group.share.partition.max.record.locks", 2000))
        self.partitions: dict[tuple[str, uuid.UUID, int], SharePartition] = {}
        self.sessions: dict[tuple[str, str], ShareSession] = {}
        self.group_configs: dict[str, dict[str, str]] = {}

    def group_config(self, group_id: str, name: str) -> str:
        return self.group_configs.get(group_id, {}).get(name, GROUP_CONFIGS[name])

    def lock_duration(self, group_id: str) -> int:
        own = self.group_configs.get(group_id, {}).get("share.record.lock.duration.ms")
        return int(own) if own is not None else self.lock_ms

    def partition(
        self, group_id: str, tp: TopicPartition, log_start: int, high_watermark: int
    ) -> SharePartition:
        """The group's share partition, made on first use with its SPSO from
        `share.auto.offset.reset` (once, as Kafka initialises it)."""
        sp = self.partitions.get((group_id, *tp))
        if sp is None:
            reset = self.group_config(group_id, "share.auto.offset.reset")
            sp = self.reset(group_id, tp, log_start if reset == "earliest" else high_watermark)
        if sp.speo < log_start:  # records deleted under the window: skip them
            sp.records.clear()
            sp.spso = sp.speo = log_start
        return sp

    def reset(self, group_id: str, tp: TopicPartition, start: int) -> SharePartition:
        """The group's share partition starts afresh at `start` (made on first
        use, or AlterShareGroupOffsets): nothing in flight."""
        sp = self.partitions[(group_id, *tp)] = SharePartition(
            start, start, self.delivery_limit, self.lock_duration(group_id), self.max_locks
        )
        return sp

    def close_session(self, session: ShareSession) -> None:
        """The member's session ends: its locks go back."""
        self.sessions.pop((session.group_id, session.member_id), None)
        for topic_id, index in session.partitions:
            sp = self.partitions.get((session.group_id, topic_id, index))
            if sp is not None:
                sp.release_member(session.member_id)

    def delete_group(self, group_id: str) -> None:
        for key in [k for k in self.partitions if k[0] == group_id]:
            del self.partitions[key]
        self.group_configs.pop(group_id, None)
