"""The consumer-group half of the CLI's door to Kafka: everything `muster
groups` needs. Kafka's state names ("Stable", "PreparingRebalance", ...) are
used throughout, whatever the client reports."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import confluent_kafka
from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import (
    OffsetSpec,
)

from muster.cli.kafka import (
    DEFAULT_BOOTSTRAP,
    DEFAULT_TIMEOUT,
    Admin,
    Consumer,
    KafkaCliError,
    Offsets,
    Record,
    _result,
)

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


def _pairs(assignment: Any) -> tuple[TopicPartitionKey, ...]:
    parts = assignment.topic_partitions if assignment else []
    return tuple(sorted((tp.topic, tp.partition) for tp in parts))


def _state_name(state: Any) -> str:
    name = getattr(state, "name", None) or str(state)
    return _GROUP_STATES.get(name.upper(), name)


def _kafka_python_error(exc: BaseException, context: str) -> KafkaCliError:
    """kafka-python errors carry Kafka's error name in `message`."""
    name = getattr(exc, "message", None)
    if isinstance(name, str) and name.isupper():
        detail = getattr(exc, "description", "") or str(exc)
        return KafkaCliError(name, f"{context}: {detail}" if context else detail)
    detail = str(exc)
    prefix = f"{type(exc).__name__}: "
    if detail.startswith(prefix):
        detail = detail[len(prefix) :]
    return KafkaCliError(type(exc).__name__, f"{context}: {detail}" if context else detail)


class GroupAdmin(Admin):
    """Consumer-group administration on top of `Admin` (list, describe,
    offsets, reset, delete); OffsetDelete goes through kafka-python, which
    confluent-kafka's AdminClient does not offer."""

    def __init__(self, bootstrap: str = DEFAULT_BOOTSTRAP, timeout: float = DEFAULT_TIMEOUT):
        super().__init__(bootstrap, timeout)
        self._bootstrap = bootstrap

    def list_groups(self) -> list[GroupListing]:
        try:
            future = self._client.list_consumer_groups(request_timeout=self.timeout)
        except (KafkaException, ValueError, TypeError) as exc:
            raise KafkaCliError.wrap(exc, "cannot list groups") from exc
        result = _result(future, self.timeout + 1, "cannot list groups")
        if result.errors and not result.valid:
            raise KafkaCliError.wrap(result.errors[0], "cannot list groups")
        protocol_types = self._protocol_types()
        listings = [
            GroupListing(
                group_id=g.group_id,
                state=_state_name(g.state),
                protocol_type=protocol_types.get(
                    g.group_id, "" if g.is_simple_consumer_group else None
                ),
                type=(getattr(g.type, "name", None) or str(g.type)).lower(),
            )
            for g in result.valid
        ]
        return sorted(listings, key=lambda g: g.group_id)

    def _protocol_types(self) -> dict[str, str]:
        # ListGroups carries each group's protocol type, but confluent-kafka's
        # list_consumer_groups() drops it; its older list_groups() keeps it.
        import warnings

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                groups = self._client.list_groups(timeout=self.timeout)
        except (KafkaException, ValueError, TypeError, RuntimeError):
            return {}
        return {g.id: g.protocol_type for g in groups}

    def describe_group(self, group: str) -> GroupDescription:
        try:
            futures = self._client.describe_consumer_groups([group], request_timeout=self.timeout)
        except (KafkaException, ValueError, TypeError) as exc:
            raise KafkaCliError.wrap(exc, f"cannot describe group {group!r}") from exc
        desc = _result(futures[group], self.timeout + 1, f"cannot describe group {group!r}")
        members = tuple(
            GroupMember(
                member_id=m.member_id,
                client_id=m.client_id,
                host=m.host,
                group_instance_id=m.group_instance_id,
                assignment=_pairs(m.assignment),
                target=None
                if getattr(m, "target_assignment", None) is None
                else _pairs(m.target_assignment),
            )
            for m in desc.members
        )
        return GroupDescription(
            group_id=desc.group_id,
            state=_state_name(desc.state),
            protocol=desc.partition_assignor or "",
            is_simple=bool(desc.is_simple_consumer_group),
            coordinator=desc.coordinator.id if desc.coordinator is not None else None,
            members=tuple(sorted(members, key=lambda m: (m.client_id, m.member_id))),
            type=(getattr(desc.type, "name", "") or "").lower().replace("unknown", ""),
        )

    def committed_offsets(self, group: str) -> dict[TopicPartitionKey, int]:
        """Every committed offset of the group (OffsetFetch for all partitions)."""
        try:
            futures = self._client.list_consumer_group_offsets(
                [confluent_kafka.ConsumerGroupTopicPartitions(group)],
                request_timeout=self.timeout,
            )
        except (KafkaException, ValueError, TypeError) as exc:
            raise KafkaCliError.wrap(exc, f"cannot fetch offsets of {group!r}") from exc
        got = _result(futures[group], self.timeout + 1, f"cannot fetch offsets of {group!r}")
        offsets = {}
        for tp in got.topic_partitions or []:
            if tp.error is not None:
                raise KafkaCliError.wrap(tp.error, f"offset of {tp.topic}:{tp.partition}")
            if tp.offset >= 0:
                offsets[(tp.topic, tp.partition)] = tp.offset
        return offsets

    def log_offsets(
        self, partitions: Sequence[TopicPartitionKey]
    ) -> dict[TopicPartitionKey, Offsets]:
        """Log-start and log-end offsets (ListOffsets earliest/latest)."""
        start = self._list_offsets(partitions, OffsetSpec.earliest())
        end = self._list_offsets(partitions, OffsetSpec.latest())
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
        got = self._list_offsets(partitions, OffsetSpec.for_timestamp(timestamp_ms))
        answer: dict[TopicPartitionKey, int | None] = {}
        for key in partitions:
            value = got.get(key)
            if isinstance(value, str):
                raise KafkaCliError("LIST_OFFSETS_FAILED", f"{key[0]}:{key[1]}: {value}")
            answer[key] = value if isinstance(value, int) and value >= 0 else None
        return answer

    def _list_offsets(
        self, partitions: Sequence[TopicPartitionKey], spec: Any
    ) -> dict[TopicPartitionKey, int | str]:
        if not partitions:
            return {}
        try:
            futures = self._client.list_offsets(
                {TopicPartition(t, p): spec for t, p in partitions}, request_timeout=self.timeout
            )
        except (KafkaException, ValueError, TypeError) as exc:
            raise KafkaCliError.wrap(exc, "cannot list log offsets") from exc
        got: dict[TopicPartitionKey, int | str] = {}
        for tp, future in futures.items():
            try:
                got[(tp.topic, tp.partition)] = _result(future, self.timeout + 1, "").offset
            except KafkaCliError as err:
                got[(tp.topic, tp.partition)] = str(err)
        return got

    def alter_group_offsets(self, group: str, offsets: dict[TopicPartitionKey, int]) -> None:
        """Commits `offsets` for the group (OffsetCommit as an admin, generation -1)."""
        request = confluent_kafka.ConsumerGroupTopicPartitions(
            group, [TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())]
        )
        context = f"cannot commit offsets of {group!r}"
        try:
            futures = self._client.alter_consumer_group_offsets(
                [request], request_timeout=self.timeout
            )
        except (KafkaException, ValueError, TypeError) as exc:
            raise KafkaCliError.wrap(exc, context) from exc
        got = _result(futures[group], self.timeout + 1, context)
        for tp in got.topic_partitions or []:
            if tp.error is not None:
                raise KafkaCliError.wrap(tp.error, f"{context} ({tp.topic}:{tp.partition})")

    def delete_group(self, group: str) -> None:
        context = f"cannot delete group {group!r}"
        try:
            futures = self._client.delete_consumer_groups([group], request_timeout=self.timeout)
        except (KafkaException, ValueError, TypeError) as exc:
            raise KafkaCliError.wrap(exc, context) from exc
        _result(futures[group], self.timeout + 1, context)

    def delete_group_offsets(
        self, group: str, partitions: Sequence[TopicPartitionKey]
    ) -> dict[TopicPartitionKey, str | None]:
        """OffsetDelete: each partition's error name, None when deleted.

        A group-level error (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, ...) raises."""
        import kafka as kafka_python  # kafka-python: confluent-kafka has no OffsetDelete
        import kafka.errors as kafka_python_errors

        context = f"cannot delete offsets of {group!r}"
        ms = max(1000, int(self.timeout * 1000))
        try:
            admin = kafka_python.KafkaAdminClient(
                bootstrap_servers=self._bootstrap,
                client_id="muster-cli",
                request_timeout_ms=ms,
            )
        except Exception as exc:
            raise _kafka_python_error(exc, context) from exc
        try:
            got = admin.delete_group_offsets(
                group, [kafka_python.TopicPartition(t, p) for t, p in partitions]
            )
        except Exception as exc:
            raise _kafka_python_error(exc, context) from exc
        finally:
            admin.close()
        answer: dict[TopicPartitionKey, str | None] = {}
        for tp, error in got.items():
            ok = error is kafka_python_errors.NoError
            answer[(tp.topic, tp.partition)] = None if ok else error.message
        return answer


def read_partition(
    bootstrap: str, topic: str, partition: int, timeout: float = DEFAULT_TIMEOUT
) -> list[Record]:
    """Every record of one partition, from log start to the high watermark
    at the time of the call (assign mode: no group, nothing committed)."""
    consumer = Consumer(bootstrap, timeout)
    try:
        consumer.topic(topic)  # raises UNKNOWN_TOPIC_OR_PART when absent
        try:
            low, high = consumer._consumer.get_watermark_offsets(
                TopicPartition(topic, partition), timeout=timeout
            )
        except KafkaException as exc:
            raise KafkaCliError.wrap(exc, f"cannot read {topic}:{partition}") from exc
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
