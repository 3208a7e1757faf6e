"""Internal plumbing of one shard step: configuration and the effects a
handler accumulates (records, replies, timers, events, continuations)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from muster.coordinator.result import Cancel, Record, Schedule, TimerOp

NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000  # Kafka's GroupCoordinator.NewMemberJoinTimeoutMs
OFFSET_METADATA_MAX_BYTES = 4096  # Kafka's offset.metadata.max.bytes default


@dataclass(frozen=True)
class CoordinatorConfig:
    num_partitions: int = 50
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1800000
    group_initial_rebalance_delay_ms: int = 3000
    group_max_size: int = 2147483647
    offsets_retention_ms: int = 10080 * 60 * 1000
    offsets_retention_check_interval_ms: int = 600000
    offset_metadata_max_bytes: int = OFFSET_METADATA_MAX_BYTES
    new_member_join_timeout_ms: int = NEW_MEMBER_JOIN_TIMEOUT_MS
    # modern (KIP-848) groups (Kafka's group.consumer.* properties)
    consumer_session_timeout_ms: int = 45000
    consumer_heartbeat_interval_ms: int = 5000
    consumer_max_size: int = 2147483647
    consumer_assignors: tuple[str, ...] = ("uniform", "range")
    # group.consumer.migration.policy: bidirectional, upgrade, downgrade, disabled
    consumer_migration_policy: str = "bidirectional"
    # KIP-932 share groups (Kafka's group.share.* properties)
    share_session_timeout_ms: int = 45000
    share_heartbeat_interval_ms: int = 5000
    share_max_size: int = 200

    @classmethod
    def from_mapping(cls, cfg: Mapping[str, Any]) -> CoordinatorConfig:
        """From broker properties (muster.config.BrokerConfig or a plain dict)."""
        d = cls()

        def get(name: str, default: int) -> int:
            return int(cfg[name]) if name in cfg else default

        return cls(
            num_partitions=get("offsets.topic.num.partitions", d.num_partitions),
            group_min_session_timeout_ms=get(
                "group.min.session.timeout.ms", d.group_min_session_timeout_ms
            ),
            group_max_session_timeout_ms=get(
                "group.max.session.timeout.ms", d.group_max_session_timeout_ms
            ),
            group_initial_rebalance_delay_ms=get(
                "group.initial.rebalance.delay.ms", d.group_initial_rebalance_delay_ms
            ),
            group_max_size=get("group.max.size", d.group_max_size),
            offsets_retention_ms=get("offsets.retention.minutes", 10080) * 60 * 1000,
            offsets_retention_check_interval_ms=get(
                "offsets.retention.check.interval.ms", d.offsets_retention_check_interval_ms
            ),
            consumer_session_timeout_ms=get(
                "group.consumer.session.timeout.ms", d.consumer_session_timeout_ms
            ),
            consumer_heartbeat_interval_ms=get(
                "group.consumer.heartbeat.interval.ms", d.consumer_heartbeat_interval_ms
            ),
            consumer_max_size=get("group.consumer.max.size", d.consumer_max_size),
            consumer_assignors=tuple(
                a.strip()
                for a in str(cfg.get("group.consumer.assignors", "uniform,range")).split(",")
                if a.strip()
            ),
            share_session_timeout_ms=get(
                "group.share.session.timeout.ms", d.share_session_timeout_ms
            ),
            share_heartbeat_interval_ms=get(
                "group.share.heartbeat.interval.ms", d.share_heartbeat_interval_ms
            ),
            share_max_size=get("group.share.max.size", d.share_max_size),
            consumer_migration_policy=migration_policy(
                cfg.get("group.consumer.migration.policy", d.consumer_migration_policy)
            ),
        )

    @property
    def upgrade_enabled(self) -> bool:
        return self.consumer_migration_policy in ("bidirectional", "upgrade")

    @property
    def downgrade_enabled(self) -> bool:
        return self.consumer_migration_policy in ("bidirectional", "downgrade")


MIGRATION_POLICIES = ("bidirectional", "upgrade", "downgrade", "disabled")


def migration_policy(value: object) -> str:
    """Kafka's ConsumerGroupMigrationPolicy.parse: case-insensitive, and an
    unknown name is `disabled`."""
    name = str(value).strip().lower()
    return name if name in MIGRATION_POLICIES else "disabled"


Continuation = Callable[[int, "Effects"], None]  # (error_code, effects)


class Effects:
    """What one step accumulates. A plain class: every request makes one (a
    commit two), and a dataclass's default factories cost twice the time."""

    __slots__ = (
        "continuations",
        "events",
        "first_seq",
        "marker",
        "modern_undo",
        "now",
        "producer",
        "records",
        "replies",
        "share_undo",
        "timers",
    )

    def __init__(self, now: int, first_seq: int = 0) -> None:
        self.now = now
        # log position (record sequence) the first record of this step takes; the
        # shard hands it in and moves on by len(records) afterwards
        self.first_seq = first_seq
        self.records: list[Record] = []
        self.replies: list[tuple[int, Any]] = []
        self.timers: list[TimerOp] = []
        self.events: list[Any] = []
        self.continuations: list[Continuation] = []
        # (producer id, epoch): this step's records form one transactional batch
        self.producer: tuple[int, int] | None = None
        # (producer id, epoch, commit): this step writes a transaction marker
        self.marker: tuple[int, int, bool] | None = None
        # modern groups this step changed at write time -> their objects before
        # it (None: the group did not exist), or classic groups an upgrade
        # replaced; restored if the append fails. Its domain
        # (`groups/modern/domain.py`) reads it
        self.modern_undo: dict[str, Any] = {}
        # share groups likewise (their own domain, `groups/share/domain.py`)
        self.share_undo: dict[str, Any] = {}

    def reply(self, request_id: int | None, response: Any) -> None:
        if request_id is not None:
            self.replies.append((request_id, response))

    def record(self, record: Record) -> int:
        """Appends a record to this step's write; returns its record sequence
        (its position among everything the shard appends, the log offset once
        replayed), which orders it against other writes."""
        self.records.append(record)
        return self.first_seq + len(self.records) - 1

    def schedule(self, key: TimerKey, deadline_ms: int) -> None:
        self.timers.append(Schedule(key, deadline_ms))

    def cancel(self, key: TimerKey) -> None:
        self.timers.append(Cancel(key))

    def emit(self, event: Any) -> None:
        self.events.append(event)

    def after_durable(self, continuation: Continuation) -> None:
        self.continuations.append(continuation)


class TimerKey(str):
    """A timer key (plain text for the runtime) that remembers its target."""

    kind: str
    group_id: str
    member_id: str

    def __new__(cls, kind: str, group_id: str = "", member_id: str = "") -> TimerKey:
        # The group id's length is part of the text: ids may contain any character,
        # and group "a-b" member "c" must not share a timer with group "a" member "b-c".
        text = kind if not group_id else f"{kind}-{len(group_id)}:{group_id}"
        if member_id:
            text += f"-{member_id}"
        key = super().__new__(cls, text)
        key.kind, key.group_id, key.member_id = kind, group_id, member_id
        return key


def heartbeat_key(group_id: str, member_id: str) -> TimerKey:
    return TimerKey("heartbeat", group_id, member_id)


def pending_key(group_id: str, member_id: str) -> TimerKey:
    return TimerKey("pending", group_id, member_id)


def join_key(group_id: str) -> TimerKey:
    return TimerKey("join", group_id)


def sync_key(group_id: str) -> TimerKey:
    return TimerKey("sync", group_id)


EXPIRE_OFFSETS_KEY = TimerKey("expire-offsets")
