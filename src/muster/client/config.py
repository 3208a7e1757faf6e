"""Client configuration: Java/librdkafka property names, parsed once."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from muster.client.errors import ConfigError


class Config:
    """A dict of Java-style properties with typed getters and defaults.
    Unknown keys are kept (other tools may pass them) but never guessed at."""

    def __init__(self, conf: Mapping[str, Any] | None, defaults: Mapping[str, Any]):
        self.raw = {**defaults, **(conf or {})}
        for key, value in list(self.raw.items()):
            if "_" in key and "." not in key:  # python-style alias: group_id
                self.raw.setdefault(key.replace("_", "."), value)
        if not self.raw.get("bootstrap.servers"):
            raise ConfigError("bootstrap.servers is required")

    def get(self, key: str, default: Any = None) -> Any:
        return self.raw.get(key, default)

    def str(self, key: str) -> str:
        return str(self.raw[key])

    def opt_str(self, key: str) -> str | None:
        value = self.raw.get(key)
        return None if value is None or value == "" else str(value)

    def int(self, key: str) -> int:
        try:
            return int(self.raw[key])
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{key} must be an integer, not {self.raw[key]!r}") from exc

    def bool(self, key: str) -> bool:
        value = self.raw[key]
        if isinstance(value, str):
            if value.lower() in ("true", "1", "yes"):
                return True
            if value.lower() in ("false", "0", "no"):
                return False
            raise ConfigError(f"{key} must be a boolean, not {value!r}")
        return bool(value)


READ_UNCOMMITTED = 0
READ_COMMITTED = 1
ISOLATION_LEVELS = {"read_uncommitted": READ_UNCOMMITTED, "read_committed": READ_COMMITTED}


def isolation_level(value: Any, name: str = "isolation.level") -> int:
    """The wire value (0 or 1) of an isolation level given by its Kafka name
    (read_uncommitted / read_committed, any case) or as 0 / 1."""
    if isinstance(value, int) and value in (READ_UNCOMMITTED, READ_COMMITTED):
        return int(value)
    level = ISOLATION_LEVELS.get(str(value).strip().lower())
    if level is None:
        raise ConfigError(
            f"Invalid value {value} for configuration {name}: "
            "String must be one of: read_committed, read_uncommitted"
        )
    return level
