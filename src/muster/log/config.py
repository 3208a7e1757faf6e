"""Per-log settings: a topic's Kafka-named overrides over the broker's `log.*`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from muster.config import BY_NAME

# topic-level name -> (broker property, type)
TOPIC_CONFIGS: dict[str, tuple[str, type]] = {
    "segment.bytes": ("log.segment.bytes", int),
    "segment.ms": ("log.roll.ms", int),
    "retention.ms": ("log.retention.ms", int),
    "retention.bytes": ("log.retention.bytes", int),
    "index.interval.bytes": ("log.index.interval.bytes", int),
    "cleanup.policy": ("log.cleanup.policy", str),
    "min.compaction.lag.ms": ("log.cleaner.min.compaction.lag.ms", int),
    "delete.retention.ms": ("log.cleaner.delete.retention.ms", int),
    "max.message.bytes": ("message.max.bytes", int),
    "message.timestamp.type": ("log.message.timestamp.type", str),
}
_FALLBACK = {"log.message.timestamp.type": "CreateTime"}


class InvalidConfigError(ValueError):
    error_code = 40  # INVALID_CONFIG


@dataclass(frozen=True)
class LogConfig:
    segment_bytes: int = 1073741824
    segment_ms: int = 604800000
    retention_ms: int = 604800000
    retention_bytes: int = -1
    index_interval_bytes: int = 4096
    cleanup_policy: str = "delete"
    min_compaction_lag_ms: int = 0
    delete_retention_ms: int = 86400000
    max_message_bytes: int = 1048588
    message_timestamp_type: str = "CreateTime"

    @cached_property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy.split(",")

    @cached_property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy.split(",")

    @cached_property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    @classmethod
    def resolve(
        cls, broker: Mapping[str, Any] | None = None, topic: Mapping[str, str] | None = None
    ) -> LogConfig:
        broker = broker or {}
        topic = topic or {}
        values: dict[str, Any] = {}
        for name, (prop, kind) in TOPIC_CONFIGS.items():
            if name in topic:
                raw: Any = topic[name]
            elif prop in broker:
                raw = broker[prop]
            elif prop in BY_NAME:
                raw = BY_NAME[prop].default
            else:
                raw = _FALLBACK[prop]
            try:
                values[name.replace(".", "_")] = kind(str(raw).strip()) if kind is int else str(raw)
            except ValueError as exc:
                raise InvalidConfigError(f"{name}: invalid value {raw!r}") from exc
        values["cleanup_policy"] = values["cleanup_policy"].replace(" ", "").lower()
        for policy in values["cleanup_policy"].split(","):
            if policy not in ("delete", "compact"):
                raise InvalidConfigError(f"cleanup.policy: invalid value {policy!r}")
        if values["message_timestamp_type"] not in ("CreateTime", "LogAppendTime"):
            raise InvalidConfigError(
                f"message.timestamp.type: invalid value {values['message_timestamp_type']!r}"
            )
        if values["segment_bytes"] < 14:
            raise InvalidConfigError("segment.bytes must be at least 14")
        return cls(**values)
