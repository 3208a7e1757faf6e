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
    Property(
        "muster.storage",
        str,
        "disk",
        "disk: partition logs in log.dirs; memory: nothing on disk, lost at stop (tests).",
    ),
    Property("muster.fsync.interval.ms", int, 1000, "fsync period when muster.fsync=interval."),
    Property(
        "muster.metrics.listen",
        str,
        "",
        "HOST:PORT for the Prometheus /metrics endpoint (empty: off).",
    ),
    Property(
        "muster.console.listen",
        str,
        "",
        "HOST:PORT for the web console inside the broker, on its event loop "
        "(empty: off; needs the console extra: pip install 'muster[console]').",
    ),
    Property(
        "muster.console.read.only", bool, False, "The console offers no actions (resets, deletes)."
    ),
    Property("muster.log.level", str, "INFO", "Log level; DEBUG logs every request and answer."),
    Property(
        "muster.event.loop",
        str,
        "asyncio",
        "asyncio: the standard event loop; uvloop: libuv's drop-in loop, fewer "
        "CPU microseconds per request (needs the uvloop extra: pip install 'muster[uvloop]').",
    ),
    Property(
        "muster.poll.spin.us",
        int,
        0,
        "Busy polling (asyncio loop only): after its last event the loop polls without "
        "sleeping this long, so a request-answer client's next request finds it hot; "
        "lower latency, CPU burned while waiting (0: off).",
    ),
    Property("connections.max.idle.ms", int, 600000, "Close idle or half-sent connections."),
    Property("max.connections", int, 2147483647, "Connections at once; more are closed."),
    Property("max.connections.per.ip", int, 2147483647, "Connections from one address."),
    Property(
        "max.connections.per.ip.overrides",
        str,
        "",
        "Per-address caps, as in Kafka: 'host:count,host:count'.",
    ),
    Property(
        "max.incremental.fetch.session.cache.slots",
        int,
        1000,
        "Incremental fetch sessions (KIP-227) kept at once.",
    ),
    Property("offsets.topic.num.partitions", int, 50, "Partitions of __consumer_offsets."),
    Property("offsets.retention.minutes", int, 10080, "Committed offsets expire after this."),
    Property("offsets.retention.check.interval.ms", int, 600000, "How often offsets expire."),
    Property("group.initial.rebalance.delay.ms", int, 3000, "Delay of a new group's first join."),
    Property("group.min.session.timeout.ms", int, 6000, "Smallest session timeout accepted."),
    Property("group.max.session.timeout.ms", int, 1800000, "Largest session timeout accepted."),
    Property("group.max.size", int, 2147483647, "Most members in one group."),
    Property(
        "group.consumer.session.timeout.ms",
        int,
        45000,
        "Consumer-protocol (KIP-848) members are fenced after this silence.",
    ),
    Property(
        "group.consumer.heartbeat.interval.ms",
        int,
        5000,
        "How often consumer-protocol members are told to heartbeat.",
    ),
    Property("group.consumer.max.size", int, 2147483647, "Most members in one consumer group."),
    Property(
        "group.consumer.assignors",
        str,
        "uniform,range",
        "Server assignors of consumer groups; the first is the default.",
    ),
    Property(
        "group.consumer.migration.policy",
        str,
        "bidirectional",
        "Online classic <-> consumer group conversion: bidirectional, upgrade, downgrade,"
        " disabled.",
    ),
    Property(
        "muster.share.enable",
        bool,
        True,
        "Serve and advertise share groups (KIP-932), as a Kafka 4.4 does by default;"
        " false leaves the share APIs out (Kafka: share.version 0).",
    ),
    Property(
        "group.share.session.timeout.ms",
        int,
        45000,
        "Share-group members are fenced after this silence.",
    ),
    Property(
        "group.share.heartbeat.interval.ms",
        int,
        5000,
        "How often share-group members are told to heartbeat.",
    ),
    Property("group.share.max.size", int, 200, "Most members in one share group."),
    *(
        Property(f"group.{kind}.{bound}.{what}", int, value, f"{doc} a {kind} group may set.")
        for kind in ("consumer", "share")
        for bound, what, value, doc in (
            ("min", "session.timeout.ms", 45000, "Smallest session timeout"),
            ("max", "session.timeout.ms", 60000, "Largest session timeout"),
            ("min", "heartbeat.interval.ms", 5000, "Smallest heartbeat interval"),
            ("max", "heartbeat.interval.ms", 15000, "Largest heartbeat interval"),
        )
    ),
    Property(
        "group.share.min.record.lock.duration.ms",
        int,
        15000,
        "Smallest share.record.lock.duration.ms a share group may set.",
    ),
    Property(
        "group.share.max.record.lock.duration.ms",
        int,
        60000,
        "Largest share.record.lock.duration.ms a share group may set.",
    ),
    Property("group.share.min.delivery.count.limit", int, 2, "Smallest delivery-count limit."),
    Property("group.share.max.delivery.count.limit", int, 10, "Largest delivery-count limit."),
    Property(
        "group.share.min.partition.max.record.locks",
        int,
        100,
        "Smallest share.partition.max.record.locks a share group may set.",
    ),
    Property(
        "group.share.max.partition.max.record.locks",
        int,
        4000,
        "Largest share.partition.max.record.locks a share group may set.",
    ),
    Property(
        "group.share.record.lock.duration.ms",
        int,
        30000,
        "How long a share-group member holds a record it acquired.",
    ),
    Property(
        "group.share.delivery.count.limit",
        int,
        5,
        "Deliveries of a record before a share group archives it.",
    ),
    Property(
        "group.share.max.share.sessions",
        int,
        2000,
        "Share sessions (ShareFetch) one broker keeps at once; past it a new one is refused.",
    ),
    Property(
        "group.share.partition.max.record.locks",
        int,
        2000,
        "Records in flight (acquired or available) per share partition.",
    ),
    Property(
        "share.coordinator.state.topic.num.partitions",
        int,
        50,
        "Partitions of __share_group_state.",
    ),
    Property(
        "share.coordinator.snapshot.update.records.per.snapshot",
        int,
        500,
        "ShareUpdate records of a share partition between two ShareSnapshots.",
    ),
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


# Kafka broker properties that have no meaning for a single-node muster (KRaft
# quorum, threads, replication, socket buffers...). A Kafka server.properties
# carries them; they are reported as ignored in one log line, not refused.
KAFKA_ONLY: frozenset[str] = frozenset(
    {
        "process.roles",
        "controller.quorum.voters",
        "controller.quorum.bootstrap.servers",
        "metadata.log.dir",
        "num.network.threads",
        "num.io.threads",
        "num.recovery.threads.per.data.dir",
        "num.replica.fetchers",
        "background.threads",
        "socket.send.buffer.bytes",
        "socket.receive.buffer.bytes",
        "offsets.topic.replication.factor",
        "transaction.state.log.replication.factor",
        "transaction.state.log.min.isr",
        "share.coordinator.state.topic.replication.factor",
        "share.coordinator.state.topic.min.isr",
        "min.insync.replicas",
        "unclean.leader.election.enable",
        "auto.leader.rebalance.enable",
        "replica.lag.time.max.ms",
        "log.flush.interval.messages",
        "log.flush.interval.ms",
        "log.flush.scheduler.interval.ms",
        "log.cleaner.threads",
        "log.cleaner.enable",
        "delete.topic.enable",
        "compression.type",
        "zookeeper.connect",
        "zookeeper.connection.timeout.ms",
        "zookeeper.session.timeout.ms",
        "group.coordinator.rebalance.protocols",
        "group.coordinator.threads",
        "share.coordinator.threads",
        "confluent.support.metrics.enable",
    }
)

# Kafka's coarser spellings of a property muster keeps in milliseconds (or
# under its KRaft name); the finer one wins when a source sets both, as in Kafka.
ALIASES: dict[str, tuple[str, int]] = {
    "log.retention.hours": ("log.retention.ms", 3_600_000),
    "log.retention.minutes": ("log.retention.ms", 60_000),
    "log.roll.hours": ("log.roll.ms", 3_600_000),
    "broker.id": ("node.id", 1),
}


def did_you_mean(name: str, known: Iterable[str] | None = None) -> str:
    """ " (did you mean 'x'?)" for the known property name closest to a
    misspelt one, or "": by default among the broker's names (muster's and
    Kafka's alike); the CLI passes the client's."""
    import difflib

    names = list(known) if known is not None else [*BY_NAME, *KAFKA_ONLY, *ALIASES]
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.8)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _resolve_aliases(values: Mapping[str, str]) -> dict[str, str]:
    resolved = dict(values)
    # hours before minutes, so minutes (finer) overwrite hours when both are given
    for alias, (target, factor) in ALIASES.items():
        if alias not in resolved:
            continue
        raw = resolved.pop(alias)
        if target in values:
            continue
        try:
            resolved[target] = str(int(raw.strip()) * factor) if factor != 1 else raw
        except ValueError as exc:
            raise ConfigError(f"{alias}: cannot read {raw!r} as int") from exc
    return resolved


def plaintext_listener(listeners: str) -> tuple[str, int]:
    """HOST, PORT of the listener muster serves, from Kafka's `listeners` syntax.

    Kafka's KRaft files list a CONTROLLER listener next to PLAINTEXT; muster has
    no controller quorum, so it serves the PLAINTEXT one (or the first
    non-controller listener when none is named PLAINTEXT).
    """
    entries = [e.strip() for e in listeners.split(",") if e.strip()]
    if not entries:
        raise ConfigError("listeners: empty")
    named = [(e.split("://", 1)[0].upper() if "://" in e else "PLAINTEXT", e) for e in entries]
    chosen = next((e for name, e in named if name == "PLAINTEXT"), None)
    if chosen is None:
        chosen = next((e for name, e in named if name != "CONTROLLER"), None)
    if chosen is None:
        raise ConfigError(f"listeners: no PLAINTEXT listener in {listeners!r}")
    host, sep, port = chosen.split("://", 1)[-1].rpartition(":")
    if not sep or not port.isdigit():
        raise ConfigError(f"listeners: expected NAME://HOST:PORT, got {chosen!r}")
    return host, int(port)


class BrokerConfig(Mapping[str, Any]):
    """Resolved broker properties.

    `set` refuses unknown names (a typo on the command line should stop the
    broker); `set(..., strict=False)`, used for config files, records them in
    `ignored` instead, as Kafka logs and skips properties it does not know.
    """

    def __init__(self, values: Mapping[str, Any] | None = None) -> None:
        self._values = {p.name: p.default for p in PROPERTIES}
        self.ignored: list[str] = []
        for name, raw in (values or {}).items():
            self.set(name, raw)

    def set(self, name: str, raw: Any, strict: bool = True) -> None:
        prop = BY_NAME.get(name)
        if prop is None and (dynamic := listener_property(name)) is not None:
            prop = Property(name, *dynamic)
        if prop is None:
            if strict:
                raise ConfigError(
                    f"unknown property {name!r}{did_you_mean(name)} (see `muster serve --help`)"
                )
            self.ignored.append(name)
            return
        value = _coerce(prop, raw)
        if name == "muster.storage" and value not in ("disk", "memory"):
            raise ConfigError(f"muster.storage: expected disk or memory, got {value!r}")
        self._values[name] = value

    def ignored_report(self) -> list[str]:
        """One line for Kafka's properties muster does not use, one for unknown names."""
        kafka = sorted(n for n in self.ignored if n in KAFKA_ONLY)
        unknown = sorted(n for n in self.ignored if n not in KAFKA_ONLY)
        lines = []
        if kafka:
            lines.append(
                "ignoring Kafka properties that do not apply to muster: " + ", ".join(kafka)
            )
        if unknown:
            lines.append(
                "ignoring unknown properties (see `muster serve --help`): "
                + ", ".join(n + did_you_mean(n) for n in unknown)
            )
        return lines

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    @property
    def listen(self) -> tuple[str, int]:
        host, port = plaintext_listener(self["listeners"])
        return (host or "0.0.0.0", port)

    @property
    def advertised(self) -> tuple[str, int]:
        host, port = plaintext_listener(self["advertised.listeners"] or self["listeners"])
        if host in ("", "0.0.0.0"):
            host = "127.0.0.1"
        return (host, port)

    @property
    def in_memory(self) -> bool:
        return self["muster.storage"] == "memory"

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
        for name, raw in _resolve_aliases(parse_properties_file(config_file)).items():
            cfg.set(name, raw, strict=False)
    pairs: dict[str, str] = {}
    for item in overrides:
        name, sep, raw = item.partition("=")
        if not sep:
            raise ConfigError(f"--set expects key=value, got {item!r}")
        pairs[name.strip()] = raw.strip()
    for name, raw in _resolve_aliases(pairs).items():
        cfg.set(name, raw)
    for name, raw in explicit.items():
        if raw is not None:
            cfg.set(name, raw)
    return cfg
