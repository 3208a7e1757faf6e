"""The CLI's only door to a Kafka client library.

Everything the commands need from a broker goes through the small classes
here (`Admin`, `Producer`, `Consumer`), which speak in plain dataclasses and
raise `KafkaCliError` only. Today they wrap confluent-kafka (librdkafka); to
move the CLI onto muster's own client later, only this module changes.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Literal

import confluent_kafka
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    ConfigResource,
    ConfigSource,
    NewTopic,
    OffsetSpec,
    ResourceType,
)

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
DEFAULT_TIMEOUT = 10.0

StartOffset = Literal["earliest", "latest"] | int

# librdkafka logs connection failures straight to stderr unless a logger is
# given; the CLI reports errors itself, one line each, so its logs go nowhere.
_LOG = logging.getLogger("muster.cli.librdkafka")
_LOG.addHandler(logging.NullHandler())
_LOG.propagate = False


class KafkaCliError(Exception):
    """A broker or client error, reduced to Kafka's error name and a message."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}")
        self.name = name
        self.message = message

    @classmethod
    def wrap(cls, exc: BaseException, context: str = "") -> KafkaCliError:
        if isinstance(exc, KafkaCliError):
            return exc
        prefix = f"{context}: " if context else ""
        if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
            err = exc.args[0]
            return cls(err.name(), prefix + (err.str() or "no message"))
        if isinstance(exc, KafkaError):
            return cls(exc.name(), prefix + (exc.str() or "no message"))
        if isinstance(exc, TimeoutError):
            return cls("REQUEST_TIMED_OUT", prefix + "no answer from the broker in time")
        return cls(type(exc).__name__, prefix + str(exc))


@dataclass(frozen=True)
class PartitionInfo:
    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    error: str | None = None


@dataclass(frozen=True)
class TopicInfo:
    name: str
    partitions: tuple[PartitionInfo, ...]
    error: str | None = None

    @property
    def internal(self) -> bool:
        return self.name.startswith("__")


@dataclass(frozen=True)
class ConfigEntry:
    name: str
    value: str | None
    source: str
    is_default: bool
    read_only: bool = False
    sensitive: bool = False


@dataclass(frozen=True)
class Offsets:
    log_start: int | None
    log_end: int | None
    error: str | None = None


@dataclass
class TopicDescription:
    topic: TopicInfo
    offsets: dict[int, Offsets] = field(default_factory=dict)
    configs: list[ConfigEntry] | None = None
    # Why configs (or offsets) are missing, e.g. the broker lacks DescribeConfigs.
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Delivery:
    partition: int
    offset: int


@dataclass(frozen=True)
class Record:
    topic: str
    partition: int
    offset: int
    timestamp: int | None  # milliseconds since the epoch
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


CONNECT_TIMEOUT = 2.0


class CannotConnect(KafkaCliError):
    """Nothing answers at any bootstrap address: said plainly, without an error name."""

    def __str__(self) -> str:
        return self.message


def check_reachable(bootstrap: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """Fails fast when no bootstrap address accepts a TCP connection.

    librdkafka retries a refused connection until the request times out and
    then reports only `_TIMED_OUT`; one plain connect first turns "nothing
    listens there" into an answer within `timeout`.
    """
    problems = []
    for address in (a.strip() for a in bootstrap.split(",") if a.strip()):
        host, _, port = address.rpartition(":")
        host = host.strip("[]") or "127.0.0.1"
        try:
            with socket.create_connection((host, int(port)), timeout=timeout):
                return
        except ValueError:
            problems.append(f"{address} (not HOST:PORT)")
        except ConnectionRefusedError:
            problems.append(f"{address} (connection refused)")
        except TimeoutError:
            problems.append(f"{address} (no answer in {timeout:g} s)")
        except socket.gaierror:
            problems.append(f"{address} (unknown host)")
        except OSError as exc:
            problems.append(f"{address} ({os.strerror(exc.errno) if exc.errno else exc})")
    raise CannotConnect(
        "_TRANSPORT",
        f"cannot connect to {', '.join(problems)}: is the broker running? "
        "Start one with `muster serve` or pass --bootstrap-server HOST:PORT.",
    )


def _base_config(bootstrap: str, timeout: float) -> dict[str, Any]:
    # Every client of the CLI is built from here, so every command fails fast
    # when nothing listens.
    check_reachable(bootstrap)
    ms = max(1, int(timeout * 1000))
    return {
        "bootstrap.servers": bootstrap,
        "client.id": "muster-cli",
        "logger": _LOG,
        "socket.timeout.ms": max(ms, 1500),
        "socket.connection.setup.timeout.ms": max(ms, 1000),
        "reconnect.backoff.ms": 50,
        "reconnect.backoff.max.ms": 1000,
    }


def _result(future: Future[Any], timeout: float, context: str) -> Any:
    try:
        return future.result(timeout=timeout)
    except Exception as exc:
        raise KafkaCliError.wrap(exc, context) from exc


class Admin:
    """Topic administration: create, list, describe, delete."""

    def __init__(self, bootstrap: str = DEFAULT_BOOTSTRAP, timeout: float = DEFAULT_TIMEOUT):
        self.timeout = timeout
        self._client = AdminClient(_base_config(bootstrap, timeout))

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int = 1,
        configs: dict[str, str] | None = None,
    ) -> None:
        try:
            new = NewTopic(name, partitions, replication_factor, config=dict(configs or {}))
            futures = self._client.create_topics([new], request_timeout=self.timeout)
        except (KafkaException, ValueError, TypeError) as exc:
            raise KafkaCliError.wrap(exc, f"cannot create topic {name!r}") from exc
        _result(futures[name], self.timeout + 1, f"cannot create topic {name!r}")

    def delete_topic(self, name: str) -> None:
        try:
            futures = self._client.delete_topics([name], request_timeout=self.timeout)
        except (KafkaException, ValueError, TypeError) as exc:
            raise KafkaCliError.wrap(exc, f"cannot delete topic {name!r}") from exc
        _result(futures[name], self.timeout + 1, f"cannot delete topic {name!r}")

    def list_topics(self) -> list[TopicInfo]:
        return sorted(_topics_from_metadata(self._client, self.timeout), key=lambda t: t.name)

    def topic(self, name: str) -> TopicInfo:
        for info in _topics_from_metadata(self._client, self.timeout):
            if info.name == name:
                if info.error:
                    raise KafkaCliError(info.error, f"topic {name!r}")
                return info
        raise KafkaCliError("UNKNOWN_TOPIC_OR_PART", f"topic {name!r} does not exist")

    def describe_topic(self, name: str) -> TopicDescription:
        desc = TopicDescription(topic=self.topic(name))
        self._fill_offsets(desc)
        self._fill_configs(desc)
        return desc

    def _fill_offsets(self, desc: TopicDescription) -> None:
        name = desc.topic.name
        parts = [p.partition for p in desc.topic.partitions]
        if not parts:
            return
        answers: dict[str, dict[int, int | str]] = {}
        for label, spec in (("start", OffsetSpec.earliest()), ("end", OffsetSpec.latest())):
            got: dict[int, int | str] = {}
            answers[label] = got
            try:
                futures = self._client.list_offsets(
                    {TopicPartition(name, p): spec for p in parts}, request_timeout=self.timeout
                )
            except (KafkaException, ValueError, TypeError) as exc:
                err = KafkaCliError.wrap(exc)
                desc.notes.append(f"log offsets unavailable ({err})")
                return
            for tp, future in futures.items():
                try:
                    got[tp.partition] = _result(future, self.timeout + 1, "").offset
                except KafkaCliError as err:
                    got[tp.partition] = str(err)
        failed = False
        for p in parts:
            start, end = answers["start"].get(p), answers["end"].get(p)
            errors = [v for v in (start, end) if isinstance(v, str)]
            failed = failed or bool(errors)
            desc.offsets[p] = Offsets(
                start if isinstance(start, int) else None,
                end if isinstance(end, int) else None,
                errors[0] if errors else None,
            )
        if failed:
            desc.notes.append("log offsets unavailable for some partitions (ListOffsets failed)")

    def _fill_configs(self, desc: TopicDescription) -> None:
        resource = ConfigResource(ResourceType.TOPIC, desc.topic.name)
        try:
            futures = self._client.describe_configs([resource], request_timeout=self.timeout)
            entries = next(iter(futures.values()))
            got = _result(entries, self.timeout + 1, "")
        except (KafkaException, KafkaCliError, ValueError, TypeError) as exc:
            err = KafkaCliError.wrap(exc)
            desc.notes.append(
                f"topic configs unavailable: the broker did not answer DescribeConfigs ({err})"
            )
            return
        configs = []
        for entry in sorted(got.values(), key=lambda e: e.name):
            try:
                source = ConfigSource(entry.source).name.lower()
            except ValueError:
                source = str(entry.source)
            configs.append(
                ConfigEntry(
                    name=entry.name,
                    value=entry.value,
                    source=source,
                    is_default=bool(entry.is_default),
                    read_only=bool(entry.is_read_only),
                    sensitive=bool(entry.is_sensitive),
                )
            )
        desc.configs = configs


def _topics_from_metadata(client: Any, timeout: float) -> list[TopicInfo]:
    # Always ask for all topics: a Metadata request naming one topic may
    # auto-create it on brokers with auto.create.topics.enable.
    try:
        metadata = client.list_topics(timeout=timeout)
    except KafkaException as exc:
        raise KafkaCliError.wrap(exc, "cannot reach the broker") from exc
    topics = []
    for name, tmeta in metadata.topics.items():
        parts = tuple(
            PartitionInfo(
                partition=p.id,
                leader=p.leader,
                replicas=tuple(p.replicas),
                isr=tuple(p.isrs),
                error=p.error.name() if p.error else None,
            )
            for p in sorted(tmeta.partitions.values(), key=lambda p: p.id)
        )
        topics.append(
            TopicInfo(
                name=name, partitions=parts, error=tmeta.error.name() if tmeta.error else None
            )
        )
    return topics


DeliveryCallback = Callable[[Delivery | None, "KafkaCliError | None"], None]


class Producer:
    """Asynchronous producer; `send` queues, `flush` waits for every delivery."""

    def __init__(self, bootstrap: str = DEFAULT_BOOTSTRAP, timeout: float = DEFAULT_TIMEOUT):
        self.timeout = timeout
        self._last_error: KafkaCliError | None = None
        config = _base_config(bootstrap, timeout)
        config.update(
            {
                "message.timeout.ms": max(1, int(timeout * 1000)),
                # librdkafka waits this long (default 30 s) for a topic the broker
                # says is unknown to appear; past it the records fail with
                # UNKNOWN_TOPIC_OR_PART instead of a bare message timeout.
                "topic.metadata.propagation.max.ms": 1000,
                "linger.ms": 5,
                "error_cb": self._error,
            }
        )
        self._producer = confluent_kafka.Producer(config)

    def _error(self, err: KafkaError) -> None:
        self._last_error = KafkaCliError(err.name(), err.str())

    def _callback(self, on_delivery: DeliveryCallback) -> Callable[[Any, Any], None]:
        def delivered(err: KafkaError | None, msg: Any) -> None:
            if err is None:
                on_delivery(Delivery(msg.partition(), msg.offset()), None)
                return
            failure = KafkaCliError(err.name(), err.str())
            if err.code() == KafkaError._MSG_TIMED_OUT and self._last_error is not None:
                failure = KafkaCliError(
                    err.name(), f"{err.str()} (last broker error: {self._last_error})"
                )
            on_delivery(None, failure)

        return delivered

    def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        partition: int | None = None,
        headers: Sequence[tuple[str, bytes | None]] = (),
        on_delivery: DeliveryCallback | None = None,
    ) -> None:
        """Queues one record; `on_delivery(delivery, error)` runs when it is settled."""
        kwargs: dict[str, Any] = {"value": value, "key": key}
        if on_delivery is not None:
            kwargs["on_delivery"] = self._callback(on_delivery)
        if partition is not None:
            kwargs["partition"] = partition
        if headers:
            kwargs["headers"] = list(headers)
        while True:
            try:
                self._producer.produce(topic, **kwargs)
                break
            except BufferError:
                self._producer.poll(0.1)  # local queue full: serve deliveries, retry
            except KafkaException as exc:
                raise KafkaCliError.wrap(exc, f"cannot produce to {topic!r}") from exc
        self._producer.poll(0)

    def poll(self, timeout: float = 0) -> None:
        self._producer.poll(timeout)

    def flush(self) -> int:
        """Waits for outstanding deliveries; returns how many never completed."""
        deadline = time.monotonic() + self.timeout + 2
        remaining = len(self._producer)
        while remaining and time.monotonic() < deadline:
            remaining = self._producer.flush(min(0.2, max(0.0, deadline - time.monotonic())))
        return remaining


class Consumer:
    """Assign-mode consumer: no group membership, no offset commits."""

    def __init__(self, bootstrap: str = DEFAULT_BOOTSTRAP, timeout: float = DEFAULT_TIMEOUT):
        self.timeout = timeout
        config = _base_config(bootstrap, timeout)
        config.update(
            {
                # librdkafka insists on a group id, but assign() never joins the
                # group and nothing is committed.
                "group.id": "muster-cli",
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "auto.offset.reset": "error",
                "enable.partition.eof": False,
            }
        )
        self._consumer = confluent_kafka.Consumer(config)

    def topic(self, name: str) -> TopicInfo:
        for info in _topics_from_metadata(self._consumer, self.timeout):
            if info.name == name:
                if info.error:
                    raise KafkaCliError(info.error, f"topic {name!r}")
                return info
        raise KafkaCliError("UNKNOWN_TOPIC_OR_PART", f"topic {name!r} does not exist")

    def assign(self, topic: str, partitions: Sequence[int], start: StartOffset) -> None:
        if start == "earliest":
            offset = confluent_kafka.OFFSET_BEGINNING
        elif start == "latest":
            offset = confluent_kafka.OFFSET_END
        else:
            offset = int(start)
        try:
            self._consumer.assign([TopicPartition(topic, p, offset) for p in partitions])
        except KafkaException as exc:
            raise KafkaCliError.wrap(exc, f"cannot assign {topic!r}") from exc

    def poll(self, timeout: float) -> Record | None:
        try:
            msg = self._consumer.poll(timeout)
        except KafkaException as exc:
            raise KafkaCliError.wrap(exc) from exc
        if msg is None:
            return None
        err = msg.error()
        if err is not None:
            if err.code() == KafkaError._PARTITION_EOF:
                return None
            raise KafkaCliError(err.name(), err.str())
        ts_type, ts = msg.timestamp()
        return Record(
            topic=msg.topic(),
            partition=msg.partition(),
            offset=msg.offset(),
            timestamp=None if ts_type == confluent_kafka.TIMESTAMP_NOT_AVAILABLE else ts,
            key=msg.key(),
            value=msg.value(),
            headers=tuple(msg.headers() or ()),
        )

    def close(self) -> None:
        try:
            self._consumer.close()
        except (KafkaException, RuntimeError):
            pass


# ---- consumer groups ---------------------------------------------------------
#
# Everything `muster groups` needs. Kafka's state names ("Stable",
# "PreparingRebalance", ...) are used throughout, whatever the client reports.

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


@dataclass(frozen=True)
class GroupDescription:
    group_id: str
    state: str
    protocol: str  # the chosen assignor ("range", ...); "" when none
    is_simple: bool  # no protocol type: assign-mode commits only
    coordinator: int | None
    members: tuple[GroupMember, ...]


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
                assignment=tuple(
                    sorted(
                        (tp.topic, tp.partition)
                        for tp in (m.assignment.topic_partitions if m.assignment else [])
                    )
                ),
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
