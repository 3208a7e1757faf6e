"""The CLI's only door to a Kafka client library.

Everything the commands need from a broker goes through the small classes
here (`Admin`, `Producer`, `Consumer`), which speak in plain dataclasses and
raise `KafkaCliError` only. They wrap muster's own client (`muster.client`),
so the CLI needs no third-party Kafka client. Each is built from
`client_config`: the bootstrap address, the request timeout and the client
properties of `--command-config FILE` / `-X key=value` (security.protocol,
sasl.*, ssl.*, as librdkafka and Kafka's tools name them).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from muster._lazy import lazy_exports
from muster.client import admin as mc_admin
from muster.client import consumer as mc_consumer
from muster.client import producer as mc_producer
from muster.client.errors import KafkaError
from muster.client.types import TopicPartition

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
DEFAULT_TIMEOUT = 10.0

StartOffset = Literal["earliest", "latest"] | int


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
        if isinstance(exc, KafkaError):
            detail = str(exc.message)
            if detail.startswith(f"{exc.name}: "):
                detail = detail[len(exc.name) + 2 :]
            elif detail == exc.name:
                detail = "no message"
            return cls(exc.name, prefix + detail)
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


def client_config(
    bootstrap: str, timeout: float, props: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The configuration every client of the CLI starts from: the command's
    properties (--command-config, then -X) over the CLI's own defaults, with
    the bootstrap address and request timeout of its options on top.
    Checks first that something listens, so every command fails fast."""
    check_reachable(bootstrap)
    ms = max(1, int(timeout * 1000))
    return {
        "client.id": "muster-cli",
        **dict(props or {}),
        "bootstrap.servers": bootstrap,
        "request.timeout.ms": max(ms, 1000),
    }


def _call(context: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except (KafkaError, TimeoutError, OSError, ValueError) as exc:
        raise KafkaCliError.wrap(exc, context) from exc


def _open_admin(config: dict[str, Any]) -> mc_admin.Admin:
    return _call("cannot reach the broker", mc_admin.Admin, config)


def _topics_from_metadata(admin: mc_admin.Admin) -> list[TopicInfo]:
    topics = _call("cannot reach the broker", admin.describe_topics)
    return [
        TopicInfo(
            name=t.name,
            partitions=tuple(
                PartitionInfo(p.partition, p.leader, p.replicas, p.isr, _error_name(p.error_code))
                for p in t.partitions
            ),
            error=_error_name(t.error_code),
        )
        for t in topics
    ]


def _error_name(code: int) -> str | None:
    return None if code == 0 else KafkaError(code=code).name


def _find_topic(topics: list[TopicInfo], name: str) -> TopicInfo:
    for info in topics:
        if info.name == name:
            if info.error:
                raise KafkaCliError(info.error, f"topic {name!r}")
            return info
    raise KafkaCliError("UNKNOWN_TOPIC_OR_PART", f"topic {name!r} does not exist")


class Admin:
    """Topic administration: create, list, describe, delete."""

    def __init__(
        self,
        bootstrap: str = DEFAULT_BOOTSTRAP,
        timeout: float = DEFAULT_TIMEOUT,
        props: Mapping[str, str] | None = None,
    ):
        self.timeout = timeout
        self._client = _open_admin(client_config(bootstrap, timeout, props))

    @property
    def client(self) -> mc_admin.Admin:
        """muster's admin client underneath (ACLs, users)."""
        return self._client

    def close(self) -> None:
        self._client.close()

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int = 1,
        configs: dict[str, str] | None = None,
    ) -> None:
        new = mc_admin.NewTopic(name, partitions, replication_factor, dict(configs or {}))
        _call(f"cannot create topic {name!r}", self._client.create_topics, [new])

    def delete_topic(self, name: str) -> None:
        _call(f"cannot delete topic {name!r}", self._client.delete_topics, [name])

    def list_topics(self) -> list[TopicInfo]:
        return _topics_from_metadata(self._client)

    def topic(self, name: str) -> TopicInfo:
        return _find_topic(_topics_from_metadata(self._client), name)

    def describe_topic(self, name: str) -> TopicDescription:
        desc = TopicDescription(topic=self.topic(name))
        self._fill_offsets(desc)
        self._fill_configs(desc)
        return desc

    def list_offsets(
        self, partitions: Sequence[tuple[str, int]], spec: str | int
    ) -> dict[tuple[str, int], int | str]:
        """{(topic, partition): offset, or the error's text} for one spec
        ("earliest", "latest" or a timestamp in ms); one request per partition
        so one partition's error does not hide the others' offsets."""
        got: dict[tuple[str, int], int | str] = {}
        for t, p in partitions:
            try:
                answer = self._client.list_offsets({TopicPartition(t, p): spec})
                got[(t, p)] = int(answer[TopicPartition(t, p)])
            except (KafkaError, TimeoutError, OSError) as exc:
                got[(t, p)] = str(KafkaCliError.wrap(exc))
        return got

    def _fill_offsets(self, desc: TopicDescription) -> None:
        keys = [(desc.topic.name, p.partition) for p in desc.topic.partitions]
        if not keys:
            return
        start, end = self.list_offsets(keys, "earliest"), self.list_offsets(keys, "latest")
        failed = False
        for key in keys:
            s, e = start.get(key), end.get(key)
            errors = [v for v in (s, e) if isinstance(v, str)]
            failed = failed or bool(errors)
            desc.offsets[key[1]] = Offsets(
                s if isinstance(s, int) else None,
                e if isinstance(e, int) else None,
                errors[0] if errors else None,
            )
        if failed:
            desc.notes.append("log offsets unavailable for some partitions (ListOffsets failed)")

    def _fill_configs(self, desc: TopicDescription) -> None:
        try:
            got = self._client.describe_configs(desc.topic.name)
        except (KafkaError, TimeoutError, OSError) as exc:
            err = KafkaCliError.wrap(exc)
            desc.notes.append(
                f"topic configs unavailable: the broker did not answer DescribeConfigs ({err})"
            )
            return
        desc.configs = [
            ConfigEntry(e.name, e.value, e.source, e.is_default, e.read_only, e.sensitive)
            for e in got
        ]


DeliveryCallback = Callable[[Delivery | None, "KafkaCliError | None"], None]


class Producer:
    """Asynchronous producer; `send` queues, `flush` waits for every delivery."""

    def __init__(
        self,
        bootstrap: str = DEFAULT_BOOTSTRAP,
        timeout: float = DEFAULT_TIMEOUT,
        props: Mapping[str, str] | None = None,
    ):
        self.timeout = timeout
        config = client_config(bootstrap, timeout, props)
        config.setdefault("delivery.timeout.ms", max(1, int(timeout * 1000)))
        # as librdkafka: a record for a topic the broker does not know fails
        # with UNKNOWN_TOPIC_OR_PARTITION after 1 s, not at the delivery timeout
        config.setdefault("topic.metadata.propagation.max.ms", 1000)
        self._producer = _call("cannot reach the broker", mc_producer.Producer, config)

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

        def delivered(err: KafkaError | None, metadata: Any) -> None:
            if on_delivery is None:
                return
            if err is None:
                on_delivery(Delivery(metadata.partition, metadata.offset), None)
            else:
                on_delivery(None, KafkaCliError.wrap(err))

        _call(
            f"cannot produce to {topic!r}",
            self._producer.produce,
            topic,
            value,
            key=key,
            partition=partition,
            headers=list(headers) or None,
            on_delivery=delivered,
        )

    def poll(self, timeout: float = 0) -> None:
        self._producer.poll(timeout)

    def flush(self) -> int:
        """Waits for outstanding deliveries; returns how many never completed."""
        remaining = self._producer.flush(self.timeout + 2)
        self._producer.poll(0)
        return remaining

    def close(self) -> None:
        try:
            self._producer.close(1.0)
        except (KafkaError, TimeoutError, RuntimeError):
            pass


class Consumer:
    """Assign-mode consumer: no group membership, no offset commits."""

    def __init__(
        self,
        bootstrap: str = DEFAULT_BOOTSTRAP,
        timeout: float = DEFAULT_TIMEOUT,
        props: Mapping[str, str] | None = None,
    ):
        self.timeout = timeout
        config = client_config(bootstrap, timeout, props)
        self.admin = _open_admin(dict(config))
        config.update({"enable.auto.commit": False, "auto.offset.reset": "none"})
        config.pop("group.id", None)
        try:
            self._consumer = _call("cannot reach the broker", mc_consumer.Consumer, config)
        except BaseException:
            self.admin.close()
            raise
        self._buffer: list[Any] = []

    def topic(self, name: str) -> TopicInfo:
        return _find_topic(_topics_from_metadata(self.admin), name)

    def watermarks(self, topic: str, partition: int) -> tuple[int, int]:
        tp = TopicPartition(topic, partition)
        low = _call(f"cannot read {topic}:{partition}", self.admin.list_offsets, {tp: "earliest"})
        high = _call(f"cannot read {topic}:{partition}", self.admin.list_offsets, {tp: "latest"})
        return int(low[tp]), int(high[tp])

    def assign(self, topic: str, partitions: Sequence[int], start: StartOffset) -> None:
        tps = [TopicPartition(topic, p) for p in partitions]
        context = f"cannot assign {topic!r}"
        _call(context, self._consumer.assign, tps)
        if start == "earliest":
            _call(context, self._consumer.seek_to_beginning, tps)
        elif start == "latest":
            _call(context, self._consumer.seek_to_end, tps)
        else:
            for tp in tps:
                _call(context, self._consumer.seek, tp, int(start))

    def poll(self, timeout: float) -> Record | None:
        if not self._buffer:
            self._buffer = list(_call("", self._consumer.poll, timeout))[::-1]
            if not self._buffer:
                return None
        r = self._buffer.pop()
        return Record(
            topic=r.topic,
            partition=r.partition,
            offset=r.offset,
            timestamp=r.timestamp if r.timestamp >= 0 else None,
            key=r.key,
            value=r.value,
            headers=tuple(r.headers or ()),
        )

    def close(self) -> None:
        for close in (lambda: self._consumer.close(autocommit=False), self.admin.close):
            try:
                close()
            except (KafkaError, TimeoutError, RuntimeError):
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
