"""The source's options, parsed and checked once, as Spark's Kafka source names
and checks them, into a picklable `SourceOptions`.

Error messages follow Spark's Kafka source so a job moved from
`format("kafka")` fails the same way for the same mistake.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from muster.client.config import READ_UNCOMMITTED
from muster.client.config import isolation_level as isolation_level_of
from muster.client.errors import ConfigError
from muster.client.security import KEYS as SECURITY_KEYS
from muster.client.security import ClientSecurity

EARLIEST = -2
LATEST = -1

# Offsets per partition: {"topic": {"0": 23}} as Spark writes them.
PartitionOffsets = dict[str, dict[str, int]]

_STRATEGIES = ("subscribe", "subscribepattern", "assign")

# Kafka consumer settings Spark's source refuses because it manages them itself; we
# ignore them instead (a job that sets them harmlessly keeps working).
IGNORED_KAFKA = frozenset(
    {
        "kafka.group.id",
        "kafka.auto.offset.reset",
        "kafka.key.deserializer",
        "kafka.value.deserializer",
        "kafka.enable.auto.commit",
        "kafka.interceptor.classes",
    }
)


KAFKA_INTERNAL = frozenset({"__consumer_offsets", "__transaction_state"})


@dataclass(frozen=True)
class OffsetSpec:
    """Where a range starts or ends: "earliest", "latest", per-partition offsets
    (-2 earliest, -1 latest) or per-partition / global timestamps."""

    kind: str  # "earliest" | "latest" | "offsets" | "timestamps" | "timestamp"
    offsets: PartitionOffsets = field(default_factory=dict)
    timestamp: int = 0


@dataclass(frozen=True)
class SourceOptions:
    bootstrap: str
    strategy: str  # "subscribe" | "subscribepattern" | "assign"
    topics: tuple[str, ...] = ()
    pattern: str = ""
    assign: tuple[tuple[str, int], ...] = ()
    starting: OffsetSpec = OffsetSpec("latest")
    ending: OffsetSpec = OffsetSpec("latest")
    timestamp_strategy: str = "error"  # startingOffsetsByTimestampStrategy
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60 * 1000
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    fail_on_data_loss: bool = True
    include_headers: bool = False
    commit_to_group: str | None = None
    isolation_level: int = READ_UNCOMMITTED  # kafka.isolation.level: 0 or 1 (read_committed)
    security: tuple[tuple[str, str], ...] = ()  # kafka.security.protocol, kafka.sasl.*, ...
    fetch_max_bytes: int = 4 * 1024 * 1024
    request_timeout_s: float = 30.0
    poll_timeout_s: float = 120.0

    def matches(self, topic: str) -> bool:
        """Whether `topic` belongs to the subscription (assign: its topics)."""
        if self.strategy == "subscribe":
            return topic in self.topics
        if self.strategy == "subscribepattern":
            # as a Kafka consumer's pattern subscription (exclude.internal.topics)
            if topic in KAFKA_INTERNAL:
                return False
            return re.fullmatch(self.pattern, topic) is not None
        return any(t == topic for t, _p in self.assign)


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in options.items()}


def _bool(value: str, name: str) -> bool:
    v = value.strip().lower()
    if v in ("true", "false"):
        return v == "true"
    raise ValueError(f"{name} must be true or false, not {value!r}")


def _positive(opts: dict[str, str], key: str, name: str) -> int | None:
    """A count option: absent, or a positive integer."""
    text = opts.get(key)
    if text is None:
        return None
    try:
        value = int(text.strip())
    except ValueError:
        value = 0
    if value <= 0:
        raise ValueError(f"Invalid value '{text}' for option '{name}', must be a positive integer")
    return value


# Spark's time strings (JavaUtils.timeStringAsMs): an integer and a unit, ms when
# none; microseconds per unit so that "us" truncates to whole ms as Spark's does.
_TIME_UNITS_US = {
    "us": 1,
    "ms": 1000,
    "s": 1_000_000,
    "m": 60_000_000,
    "min": 60_000_000,
    "h": 3_600_000_000,
    "d": 86_400_000_000,
}


def _duration_ms(text: str, name: str) -> int:
    match = re.fullmatch(r"([0-9]+)([a-z]+)?", text.strip().lower())
    unit = (match[2] or "ms") if match else ""
    if match is None or unit not in _TIME_UNITS_US:
        raise ValueError(
            f"Invalid value '{text}' for option '{name}', must be a duration such as "
            "'500ms', '30s', '15m', '1h' or '1d'"
        )
    return int(match[1]) * _TIME_UNITS_US[unit] // 1000


def _json_offsets(text: str, name: str) -> PartitionOffsets:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f'Expected e.g. {{"topicA":{{"0":23,"1":-1}},"topicB":{{"0":-2}}}}, got {text} ({name})'
        ) from exc
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise ValueError(f'Expected e.g. {{"topicA":{{"0":23}}}}, got {text} ({name})')
    return {str(t): {str(p): int(o) for p, o in ps.items()} for t, ps in data.items()}


def _offset_spec(opts: dict[str, str], prefix: str, default: str) -> OffsetSpec:
    by_ts = opts.get(f"{prefix}offsetsbytimestamp")
    if by_ts is not None:
        return OffsetSpec("timestamps", _json_offsets(by_ts, f"{prefix}OffsetsByTimestamp"))
    global_ts = opts.get(f"{prefix}timestamp")
    if global_ts is not None:
        return OffsetSpec("timestamp", timestamp=int(global_ts))
    text = opts.get(f"{prefix}offsets", default).strip()
    if text.lower() in ("earliest", "latest"):
        return OffsetSpec(text.lower())
    return OffsetSpec("offsets", _json_offsets(text, f"{prefix}Offsets"))


def _strategy(opts: dict[str, str]) -> tuple[str, dict[str, Any]]:
    given = [s for s in _STRATEGIES if s in opts]
    if len(given) != 1:
        if not given:
            raise ValueError(
                "One of the following options must be specified for Kafka source: "
                "subscribe, subscribePattern, assign. See the docs for more details."
            )
        raise ValueError(
            "Only one of the following options can be specified for Kafka source: "
            "subscribe, subscribePattern, assign. See the docs for more details."
        )
    kind = given[0]
    value = opts[kind].strip()
    if kind == "subscribe":
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise ValueError(
                f"No topics to subscribe to as specified value for option "
                f"'subscribe' is '{opts[kind]}'"
            )
        return kind, {"topics": topics}
    if kind == "subscribepattern":
        if not value:
            raise ValueError(
                "Pattern to subscribe is empty as specified value for option "
                f"'subscribePattern' is '{opts[kind]}'"
            )
        re.compile(value)
        return kind, {"pattern": value}
    try:
        data = json.loads(value)
        assign = tuple(sorted((str(t), int(p)) for t, ps in data.items() for p in ps))
    except (json.JSONDecodeError, AttributeError, TypeError, ValueError) as exc:
        raise ValueError(
            f'Expected e.g. {{"topicA":[0,1],"topicB":[0,1]}}, got {value} (assign)'
        ) from exc
    if not assign:
        raise ValueError(
            f"No topic-partitions to assign as specified value for option "
            f"'assign' is '{opts[kind]}'"
        )
    return kind, {"assign": assign}


_JAAS_OPTION = re.compile(r'(username|password)\s*=\s*"((?:[^"\\]|\\.)*)"')


def security_conf(opts: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The `kafka.`-prefixed TLS/SASL options (Spark's Kafka source names), as
    client properties; checked here so a bad one fails the query, not a task."""
    found = {key: str(opts[f"kafka.{key}"]) for key in SECURITY_KEYS if f"kafka.{key}" in opts}
    # Spark jobs carry SASL credentials in a JAAS line (Plain/ScramLoginModule)
    # and a PEM truststore; librdkafka's names win where both are given.
    jaas = dict(_JAAS_OPTION.findall(opts.get("kafka.sasl.jaas.config", "")))
    for key in ("username", "password"):
        if key in jaas:
            found.setdefault(f"sasl.{key}", jaas[key])
    if "kafka.ssl.truststore.location" in opts:
        found.setdefault("ssl.ca.location", opts["kafka.ssl.truststore.location"])
    conf = tuple(sorted(found.items()))
    try:
        ClientSecurity.from_conf(dict(conf)).ssl_context()
    except ConfigError as exc:
        raise ValueError(str(exc)) from None
    return conf


def parse_source(options: Mapping[str, str], streaming: bool | None) -> SourceOptions:
    """Checks the options of a read (`streaming`: readStream; None: only the
    checks common to both) as Spark's Kafka source does; raises ValueError
    with Spark's message."""
    opts = _lower(options)
    bootstrap = opts.get("kafka.bootstrap.servers", "").strip()
    if not bootstrap:
        raise ValueError(
            "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer"
        )
    security = security_conf(opts)
    kind, subscription = _strategy(opts)
    starting = _offset_spec(opts, "starting", "latest" if streaming else "earliest")
    ending = _offset_spec(opts, "ending", "latest")
    if streaming is None:
        pass
    elif streaming:
        for name in ("endingoffsets", "endingoffsetsbytimestamp", "endingtimestamp"):
            if name in opts:
                raise ValueError(f"ending offset not valid in streaming queries ({name})")
    else:
        _check_batch_bounds(starting, ending)
    max_per_trigger = _positive(opts, "maxoffsetspertrigger", "maxOffsetsPerTrigger")
    min_per_trigger = _positive(opts, "minoffsetspertrigger", "minOffsetsPerTrigger")
    if max_per_trigger and min_per_trigger and min_per_trigger > max_per_trigger:
        raise ValueError(
            f"The value of minOffsetPerTrigger({min_per_trigger}) is higher than the "
            f"maxOffsetsPerTrigger({max_per_trigger})."
        )
    trigger_delay = _duration_ms(opts.get("maxtriggerdelay", "15m"), "maxTriggerDelay")
    strategy = opts.get("startingoffsetsbytimestampstrategy", "error").lower()
    if strategy not in ("error", "latest"):
        raise ValueError("startingOffsetsByTimestampStrategy must be 'error' or 'latest'")
    group = opts.get("committogroup", "").strip() or None
    try:
        isolation = isolation_level_of(
            opts.get("kafka.isolation.level", "read_uncommitted"), "isolation.level"
        )
    except ConfigError as exc:
        raise ValueError(str(exc)) from None
    return SourceOptions(
        bootstrap=bootstrap,
        strategy=kind,
        starting=starting,
        ending=ending,
        timestamp_strategy=strategy,
        max_offsets_per_trigger=max_per_trigger,
        min_offsets_per_trigger=min_per_trigger,
        max_trigger_delay_ms=trigger_delay,
        min_partitions=_positive(opts, "minpartitions", "minPartitions"),
        max_records_per_partition=_positive(
            opts, "maxrecordsperpartition", "maxRecordsPerPartition"
        ),
        fail_on_data_loss=_bool(opts.get("failondataloss", "true"), "failOnDataLoss"),
        include_headers=_bool(opts.get("includeheaders", "false"), "includeHeaders"),
        commit_to_group=group,
        isolation_level=isolation,
        security=security,
        fetch_max_bytes=int(opts.get("kafka.max.partition.fetch.bytes", 4 * 1024 * 1024)),
        request_timeout_s=int(opts.get("kafka.request.timeout.ms", 30_000)) / 1000,
        poll_timeout_s=int(opts.get("kafkaconsumer.polltimeoutms", 120_000)) / 1000,
        **subscription,
    )


def _check_batch_bounds(starting: OffsetSpec, ending: OffsetSpec) -> None:
    if starting.kind == "latest" or (
        starting.kind == "offsets"
        and any(o == LATEST for ps in starting.offsets.values() for o in ps.values())
    ):
        raise ValueError("starting offset can't be latest for batch queries on Kafka")
    if ending.kind == "earliest" or (
        ending.kind == "offsets"
        and any(o == EARLIEST for ps in ending.offsets.values() for o in ps.values())
    ):
        raise ValueError("ending offset can't be earliest for batch queries on Kafka")
