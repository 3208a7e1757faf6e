"""Broker configuration by Kafka's own property names.

One declarative table lists every property muster understands; `muster serve
--help` and the config-file parser are both driven from it, so a property is
documented exactly where it is defined.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from muster.security.properties import SECURITY_PROPERTIES, listener_property


@dataclass(frozen=True)
class Property:
    name: str
    kind: type  # int, str, bool or float
    default: Any
    doc: str


PROPERTIES: tuple[Property, ...] = (
    Property("node.id", int, 0, "This broker's node id."),
    Property("listeners", str, "PLAINTEXT://127.0.0.1:9092", "Where the broker listens."),
    Property("advertised.listeners", str, "", "What Metadata tells clients (default: listeners)."),
    Property("log.dirs", str, "./muster-data", "Data directory for partition logs."),
    Property("cluster.id", str, "muster-cluster", "Cluster id returned in Metadata."),
    Property("auto.create.topics.enable", bool, True, "Create unknown topics on Metadata/Produce."),
    Property("num.partitions", int, 1, "Partitions of an auto-created topic."),
    Property("default.replication.factor", int, 1, "Accepted for compatibility; one copy."),
    Property("message.max.bytes", int, 1048588, "Largest record batch accepted."),
    Property("socket.request.max.bytes", int, 104857600, "Largest request frame; larger closes."),
    Property("log.segment.bytes", int, 1073741824, "Segment size before roll."),
    Property("log.roll.ms", int, 604800000, "Segment age before roll."),
    Property("log.retention.ms", int, 604800000, "Delete segments older than this (-1: never)."),
    Property("log.retention.bytes", int, -1, "Delete oldest segments above this size (-1: never)."),
    Property("log.retention.check.interval.ms", int, 300000, "How often retention runs."),
    Property("log.index.interval.bytes", int, 4096, "Bytes between sparse index entries."),
    Property("log.cleanup.policy", str, "delete", "delete or compact (topic: cleanup.policy)."),
    Property("log.cleaner.backoff.ms", int, 15000, "How often the compaction cleaner runs."),
    Property("log.cleaner.min.compaction.lag.ms", int, 0, "Records younger stay uncompacted."),
    Property("log.cleaner.delete.retention.ms", int, 86400000, "How long tombstones are kept."),
    Property(
        "muster.fsync",
        str,
        "always",
        "always: acknowledged writes are fsynced (group commit) before the answer; "
        "interval: fsync every muster.fsync.interval.ms; never: leave it to the OS.",
    ),
    Property("muster.fsync.interval.ms", int, 1000, "fsync period when muster.fsync=interval."),
    Property(
        "muster.metrics.listen",
        str,
        "",
        "HOST:PORT for the Prometheus /metrics endpoint (empty: off).",
    ),
    Property("muster.log.level", str, "INFO", "Log level; DEBUG logs every request and answer."),
    Property("connections.max.idle.ms", int, 600000, "Close connections idle this long."),
    Property("offsets.topic.num.partitions", int, 50, "Partitions of __consumer_offsets."),
    Property("offsets.retention.minutes", int, 10080, "Committed offsets expire after this."),
    Property("offsets.retention.check.interval.ms", int, 600000, "How often offsets expire."),
    Property("group.initial.rebalance.delay.ms", int, 3000, "Delay of a new group's first join."),
    Property("group.min.session.timeout.ms", int, 6000, "Smallest session timeout accepted."),
    Property("group.max.session.timeout.ms", int, 1800000, "Largest session timeout accepted."),
    Property("group.max.size", int, 2147483647, "Most members in one group."),
    Property("transaction.state.log.num.partitions", int, 50, "Partitions of __transaction_state."),
    Property("transaction.max.timeout.ms", int, 900000, "Largest transaction timeout accepted."),
    Property(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        int,
        10000,
        "How often open transactions past their timeout are aborted.",
    ),
    *(Property(*p) for p in SECURITY_PROPERTIES),
)

BY_NAME: dict[str, Property] = {p.name: p for p in PROPERTIES}


class ConfigError(ValueError):
    pass


def _coerce(prop: Property, raw: Any) -> Any:
    if isinstance(raw, prop.kind) and not (prop.kind is int and isinstance(raw, bool)):
        return raw
    text = str(raw).strip()
    try:
        if prop.kind is bool:
            if text.lower() in ("true", "1", "yes"):
                return True
            if text.lower() in ("false", "0", "no"):
                return False
            raise ValueError(text)
        return prop.kind(text)
    except ValueError as exc:
        raise ConfigError(f"{prop.name}: cannot read {text!r} as {prop.kind.__name__}") from exc


class BrokerConfig(Mapping[str, Any]):
    """Resolved broker properties; unknown names are refused, not ignored."""

    def __init__(self, values: Mapping[str, Any] | None = None) -> None:
        self._values = {p.name: p.default for p in PROPERTIES}
        for name, raw in (values or {}).items():
            self.set(name, raw)

    def set(self, name: str, raw: Any) -> None:
        prop = BY_NAME.get(name)
        if prop is None and (dynamic := listener_property(name)) is not None:
            prop = Property(name, *dynamic)
        if prop is None:
            raise ConfigError(f"unknown property {name!r} (see `muster serve --help`)")
        self._values[name] = _coerce(prop, raw)

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    @property
    def listen(self) -> tuple[str, int]:
        listener = self["listeners"].split(",")[0]
        hostport = listener.split("://", 1)[-1]
        host, _, port = hostport.rpartition(":")
        return (host or "0.0.0.0", int(port))

    @property
    def advertised(self) -> tuple[str, int]:
        raw = self["advertised.listeners"] or self["listeners"]
        hostport = raw.split(",")[0].split("://", 1)[-1]
        host, _, port = hostport.rpartition(":")
        if host in ("", "0.0.0.0"):
            host = "127.0.0.1"
        return (host, int(port))

    @property
    def data_dir(self) -> Path:
        return Path(self["log.dirs"].split(",")[0])


def parse_properties_file(path: Path) -> dict[str, str]:
    """Reads a server.properties-style file: `key=value`, `#`/`!` comments."""
    values: dict[str, str] = {}
    for raw_line in path.read_text().splitlines():
        line = raw_line.strip()
        if not line or line[0] in "#!":
            continue
        sep = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if sep < 0:
            raise ConfigError(f"{path}: line without '=': {raw_line!r}")
        values[line[:sep].strip()] = line[sep + 1 :].strip()
    return values


def load_config(
    config_file: Path | None = None, overrides: Iterable[str] = (), **explicit: Any
) -> BrokerConfig:
    """File first, then `--set key=value` overrides, then explicit options."""
    cfg = BrokerConfig()
    if config_file is not None:
        for name, raw in parse_properties_file(config_file).items():
            cfg.set(name, raw)
    for item in overrides:
        name, sep, raw = item.partition("=")
        if not sep:
            raise ConfigError(f"--set expects key=value, got {item!r}")
        cfg.set(name.strip(), raw.strip())
    for name, raw in explicit.items():
        if raw is not None:
            cfg.set(name, raw)
    return cfg
