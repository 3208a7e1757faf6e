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

from muster._lazy import lazy_exports

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


# the consumer-group half lives in kafka_groups.py (which builds on this module)
__getattr__ = lazy_exports(
    __name__,
    {
        name: "muster.cli.kafka_groups"
        for name in (
            "GroupAdmin",
            "GroupDescription",
            "GroupListing",
            "GroupMember",
            "TopicPartitionKey",
            "read_partition",
        )
    },
)
