"""The consumer-group half of the CLI's door to Kafka: everything `muster
groups` needs. Kafka's state names ("Stable", "PreparingRebalance", ...) are
used throughout, whatever the client reports."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from muster.cli.kafka import (
    DEFAULT_BOOTSTRAP,
    DEFAULT_TIMEOUT,
    Admin,
    Consumer,
    KafkaCliError,
    Offsets,
    Record,
    _call,
)
from muster.client.errors import KafkaError
from muster.client.types import TopicPartition

_GROUP_STATES = {
    "UNKNOWN": "Unknown",
    "PREPARING_REBALANCING": "PreparingRebalance",
    "COMPLETING_REBALANCING": "CompletingRebalance",
    "STABLE": "Stable",
    "DEAD": "Dead",
    "EMPTY": "Empty",
}


TopicPartitionKey = tuple[str, int]


@dataclass(frozen=True)
class GroupListing:
    group_id: str
    state: str
    protocol_type: str | None  # None when the broker's answer did not say
    type: str  # "classic" / "consumer" / "unknown"


@dataclass(frozen=True)
class GroupMember:
    member_id: str
    client_id: str
    host: str
    group_instance_id: str | None
    assignment: tuple[TopicPartitionKey, ...]
    # consumer (KIP-848) groups: what the broker's target gives the member
    # (None for classic groups, which have no target)
    target: tuple[TopicPartitionKey, ...] | None = None


@dataclass(frozen=True)
class GroupDescription:
    group_id: str
    state: str
    protocol: str  # the chosen assignor ("range", ...); "" when none
    is_simple: bool  # no protocol type: assign-mode commits only
    coordinator: int | None
    members: tuple[GroupMember, ...]
    type: str = ""  # "classic", "consumer" (KIP-848), or "" when unknown


def _state_name(state: Any) -> str:
    name = getattr(state, "name", None) or str(state)
    return _GROUP_STATES.get(name.upper(), name)


class GroupAdmin(Admin):
    """Consumer-group administration on top of `Admin` (list, describe,
    offsets, reset, delete), all through muster's own admin client."""

    def __init__(
        self,
        bootstrap: str = DEFAULT_BOOTSTRAP,
        timeout: float = DEFAULT_TIMEOUT,
        props: Mapping[str, str] | None = None,
    ):
        super().__init__(bootstrap, timeout, props)

    def list_groups(self) -> list[GroupListing]:
        groups = _call("cannot list groups", self._client.list_groups)
        listings = [
            GroupListing(
                group_id=g.group_id,
                state=_state_name(g.state) if g.state else "Unknown",
                protocol_type=g.protocol_type,
                type=g.group_type or ("classic" if g.protocol_type is not None else "unknown"),
            )
            for g in groups
        ]
        return sorted(listings, key=lambda g: g.group_id)

    def describe_group(self, group: str) -> GroupDescription:
        context = f"cannot describe group {group!r}"
        found = _call(context, self._client.describe_groups, [group])
        desc = found.get(group)
        if desc is None:
            raise KafkaCliError("GROUP_ID_NOT_FOUND", f"{context}: no answer for it")
        if _state_name(desc.state) == "Dead" and not desc.members:
            # DescribeGroups knows classic groups only; a consumer (KIP-848)
            # group answers ConsumerGroupDescribe
            modern = self._describe_consumer_group(group)
            if modern is not None:
                return modern
        members = tuple(
            GroupMember(
                member_id=m.member_id,
                client_id=m.client_id,
                host=m.client_host,
                group_instance_id=m.group_instance_id,
                assignment=tuple(sorted((tp.topic, tp.partition) for tp in m.assignment)),
            )
            for m in desc.members
        )
        state = _state_name(desc.state)
        try:
            coordinator: int | None = self._client.find_coordinator(group)
        except (KafkaError, TimeoutError, OSError):
            coordinator = None
        return GroupDescription(
            group_id=desc.group_id,
            state=state,
            protocol=desc.protocol or "",
            is_simple=not desc.protocol_type and state == "Empty",
            coordinator=coordinator,
            members=tuple(sorted(members, key=lambda m: (m.client_id, m.member_id))),
            type="classic" if desc.protocol_type else "",
        )

    def _describe_consumer_group(self, group: str) -> GroupDescription | None:
        client = self._client
        view = client.describe_consumer_group(group)
        if view is None:
            return None
        try:
            coordinator: int | None = client.find_coordinator(group)
        except (KafkaError, TimeoutError, OSError):
            coordinator = None
        members = tuple(
            GroupMember(
                member_id=m.member_id,
                client_id=m.client_id,
                host=m.client_host,
                group_instance_id=m.instance_id,
                assignment=tuple(sorted(m.current)),
                target=tuple(sorted(m.target)),
            )
            for m in view.members
        )
        return GroupDescription(
            group_id=view.group_id,
            state=view.state,
            protocol=view.assignor,
            is_simple=False,
            coordinator=coordinator,
            members=tuple(sorted(members, key=lambda m: (m.client_id, m.member_id))),
            type="consumer",
        )

    def committed_offsets(self, group: str) -> dict[TopicPartitionKey, int]:
        """Every committed offset of the group (OffsetFetch for all partitions)."""
        got = _call(f"cannot fetch offsets of {group!r}", self._client.list_group_offsets, group)
        return {(tp.topic, tp.partition): int(o) for tp, o in got.items() if o >= 0}

    def log_offsets(
        self, partitions: Sequence[TopicPartitionKey]
    ) -> dict[TopicPartitionKey, Offsets]:
        """Log-start and log-end offsets (ListOffsets earliest/latest)."""
        start = self.list_offsets(partitions, "earliest")
        end = self.list_offsets(partitions, "latest")
        answer = {}
        for key in partitions:
            s, e = start.get(key), end.get(key)
            errors = [v for v in (s, e) if isinstance(v, str)]
            answer[key] = Offsets(
                s if isinstance(s, int) else None,
                e if isinstance(e, int) else None,
                errors[0] if errors else None,
            )
        return answer

    def offsets_for_time(
        self, partitions: Sequence[TopicPartitionKey], timestamp_ms: int
    ) -> dict[TopicPartitionKey, int | None]:
        """The first offset with a timestamp >= `timestamp_ms`; None when no such record."""
        got = self.list_offsets(partitions, int(timestamp_ms))
        answer: dict[TopicPartitionKey, int | None] = {}
        for key in partitions:
            value = got.get(key)
            if isinstance(value, str):
                raise KafkaCliError("LIST_OFFSETS_FAILED", f"{key[0]}:{key[1]}: {value}")
            answer[key] = value if isinstance(value, int) and value >= 0 else None
        return answer

    def alter_group_offsets(self, group: str, offsets: dict[TopicPartitionKey, int]) -> None:
        """Commits `offsets` for the group (OffsetCommit as an admin, generation -1)."""
        wanted = {TopicPartition(t, p): o for (t, p), o in sorted(offsets.items())}
        _call(
            f"cannot commit offsets of {group!r}", self._client.alter_group_offsets, group, wanted
        )

    def delete_group(self, group: str) -> None:
        _call(f"cannot delete group {group!r}", self._client.delete_groups, [group])

    def delete_group_offsets(
        self, group: str, partitions: Sequence[TopicPartitionKey]
    ) -> dict[TopicPartitionKey, str | None]:
        """OffsetDelete: each partition's error name, None when deleted.

        A group-level error (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, ...) raises."""
        context = f"cannot delete offsets of {group!r}"
        tps = [TopicPartition(t, p) for t, p in partitions]
        try:
            got = self._client.delete_group_offsets(group, tps)
        except KafkaError as exc:
            per_partition = getattr(exc, "errors", None)
            if not isinstance(per_partition, dict):
                raise KafkaCliError.wrap(exc, context) from exc
            got = per_partition
        except (TimeoutError, OSError) as exc:
            raise KafkaCliError.wrap(exc, context) from exc
        return {
            (tp.topic, tp.partition): None if error is None else error.name
            for tp, error in got.items()
        }


def read_partition(
    bootstrap: str,
    topic: str,
    partition: int,
    timeout: float = DEFAULT_TIMEOUT,
    props: Mapping[str, str] | None = None,
) -> list[Record]:
    """Every record of one partition, from log start to the high watermark
    at the time of the call (assign mode: no group, nothing committed)."""
    consumer = Consumer(bootstrap, timeout, props)
    try:
        consumer.topic(topic)  # raises UNKNOWN_TOPIC_OR_PART when absent
        low, high = consumer.watermarks(topic, partition)
        records: list[Record] = []
        if high <= low:
            return records
        consumer.assign(topic, [partition], "earliest")
        deadline = time.monotonic() + timeout
        position = low
        while position < high:
            if time.monotonic() > deadline:
                raise KafkaCliError(
                    "REQUEST_TIMED_OUT", f"read {topic}:{partition} up to {position} of {high}"
                )
            record = consumer.poll(0.2)
            if record is None:
                continue
            records.append(record)
            position = record.offset + 1
            deadline = time.monotonic() + timeout  # the timeout is for a stall, not the whole read
        return records
    finally:
        consumer.close()
