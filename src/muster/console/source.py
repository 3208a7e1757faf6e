"""What the console shows, read over the wire from any Kafka-protocol broker.

`Source` wraps one `AIOAdmin` (muster's own client) on the web server's event
loop and answers in plain dataclasses: the cluster overview, the groups, one
group with its members, committed offsets and lag, the topics and their
partition offsets. Nothing here knows HTTP or HTML.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from muster.client.admin import AIOAdmin, GroupDescription, GroupListing
from muster.client.consumer_group_describe import ConsumerGroupView, describe_consumer_group
from muster.client.errors import KafkaError
from muster.client.types import TopicPartition
from muster.coordinator.derived import OFFSETS_TOPIC

DESCRIBE_CONFIGS = 32
TOPIC, BROKER = 2, 4  # DescribeConfigs resource types
DESCRIBE_LOG_DIRS = 35
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state", "__muster_group_events")


@dataclass(frozen=True)
class Broker:
    node_id: int
    host: str
    port: int
    controller: bool


@dataclass(frozen=True)
class Overview:
    brokers: tuple[Broker, ...]
    topic_count: int
    partition_count: int
    groups_by_type: dict[str, int]
    groups_by_state: dict[str, int]


@dataclass(frozen=True)
class PartitionLag:
    topic: str
    partition: int
    committed: int | None
    log_end: int | None
    owner: str | None  # member id

    @property
    def lag(self) -> int | None:
        if self.committed is None or self.log_end is None:
            return None
        return max(0, self.log_end - self.committed)


@dataclass(frozen=True)
class GroupDetail:
    group_id: str
    exists: bool
    description: GroupDescription | None
    lags: tuple[PartitionLag, ...]
    group_type: str = ""
    consumer: ConsumerGroupView | None = None  # a consumer (KIP-848) group's own view

    @property
    def total_lag(self) -> int:
        return sum(p.lag or 0 for p in self.lags)


@dataclass(frozen=True)
class PartitionOffsets:
    partition: int
    earliest: int
    latest: int
    leader: int | None

    @property
    def count(self) -> int:
        return max(0, self.latest - self.earliest)


@dataclass(frozen=True)
class RecordTotals:
    """The overview's figures a rate is taken of. Kafka's protocol tells no
    broker's fetch rate (that is JMX), so consumption is seen as offset commits:
    the records appended to __consumer_offsets, on any broker."""

    produced: int  # log ends of the topics clients write (not the "__" internal ones)
    commits: int  # log ends of __consumer_offsets: offset commits (and group records)


@dataclass
class Sampled:
    """A cached answer and when it was fetched (monotonic seconds)."""

    value: Any
    at: float = field(default_factory=time.monotonic)


def group_type_of(listing: GroupListing) -> str:
    """classic / consumer / share; a broker without ListGroups v5 says only the
    protocol type, where an empty or `consumer` one is a classic group."""
    if listing.group_type:
        return listing.group_type.lower()
    return "classic"


class Source:
    """One admin connection shared by every page; short-lived caches keep a page
    of 1,000 groups from asking the broker 1,000 times a second."""

    def __init__(self, conf: Mapping[str, Any], cache_s: float = 1.0):
        self.conf = dict(conf)
        self.conf.setdefault("client.id", "muster-console")
        self.cache_s = cache_s
        self._admin: AIOAdmin | None = None
        self._lock = asyncio.Lock()
        self._cache: dict[str, Sampled] = {}

    async def admin(self) -> AIOAdmin:
        async with self._lock:
            if self._admin is None:
                self._admin = await AIOAdmin(self.conf).start()
            return self._admin

    async def close(self) -> None:
        if self._admin is not None:
            await self._admin.close()
            self._admin = None

    async def _cached(self, key: str, make: Any) -> Any:
        hit = self._cache.get(key)
        if hit is not None and time.monotonic() - hit.at < self.cache_s:
            return hit.value
        value = await make()
        self._cache[key] = Sampled(value)
        return value

    def forget(self) -> None:
        """Drop the caches (after an action changed the cluster)."""
        self._cache.clear()

    # ------------------------------------------------------------ cluster

    async def brokers(self) -> tuple[Broker, ...]:
        admin = await self.admin()
        await admin.cluster.refresh_metadata([])
        cluster = admin.cluster
        return tuple(
            Broker(node, host, port, node == cluster.controller_id)
            for node, (host, port) in sorted(cluster.brokers.items())
        )

    async def topics(self) -> dict[str, int]:
        """Topic -> partition count."""

        async def make() -> dict[str, int]:
            return await (await self.admin()).list_topics()

        return await self._cached("topics", make)

    async def groups(self) -> list[GroupListing]:
        async def make() -> list[GroupListing]:
            listed = await (await self.admin()).list_groups()
            return sorted(listed, key=lambda g: g.group_id)

        return await self._cached("groups", make)

    async def overview(self) -> Overview:
        brokers, topics, groups = await asyncio.gather(self.brokers(), self.topics(), self.groups())
        by_type: dict[str, int] = {}
        by_state: dict[str, int] = {}
        for g in groups:
            kind = group_type_of(g)
            by_type[kind] = by_type.get(kind, 0) + 1
            by_state[g.state or "?"] = by_state.get(g.state or "?", 0) + 1
        return Overview(brokers, len(topics), sum(topics.values()), by_type, by_state)

    # ------------------------------------------------------------ groups

    async def group(self, group_id: str) -> GroupDetail:
        admin = await self.admin()
        listing = next((g for g in await self.groups() if g.group_id == group_id), None)
        try:
            described = (await admin.describe_groups([group_id])).get(group_id)
        except KafkaError:
            described = None
        kind = group_type_of(listing) if listing else ""
        consumer = None
        if kind == "consumer":
            await self.topics()  # topic ids -> names
            consumer = await describe_consumer_group(admin, group_id)
        committed = await admin.list_group_offsets(group_id)
        owners: dict[TopicPartition, str] = {}
        for member in described.members if described else ():
            for tp in member.assignment:
                owners[tp] = member.member_id
        for cmember in consumer.members if consumer else ():
            for topic, partition in cmember.current:
                owners[TopicPartition(topic, partition)] = cmember.member_id
        wanted = set(committed) | set(owners)
        ends = await self.log_ends(wanted)
        lags = tuple(
            PartitionLag(tp.topic, tp.partition, committed.get(tp), ends.get(tp), owners.get(tp))
            for tp in sorted(wanted, key=lambda t: (t.topic, t.partition))
        )
        exists = bool(described and described.state != "Dead") or bool(committed or consumer)
        return GroupDetail(group_id, exists, described, lags, kind, consumer)

    async def log_ends(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        wanted = {tp: "latest" for tp in partitions}
        if not wanted:
            return {}
        ends = await (await self.admin()).list_offsets(wanted)
        return {tp: off for tp, off in ends.items() if off >= 0}

    # ------------------------------------------------------------ topics

    async def partition_count(self, topic: str) -> int:
        admin = await self.admin()
        await admin.cluster.refresh_metadata([topic])
        return admin.cluster.partition_counts([topic]).get(topic, 0)

    async def partitions(
        self, topic: str, indexes: Iterable[int] | None = None
    ) -> list[PartitionOffsets]:
        """Start/end offsets and leader of the partitions asked (all without
        `indexes`): one ListOffsets each way, only for those partitions."""
        admin = await self.admin()
        count = await self.partition_count(topic)
        wanted = range(count) if indexes is None else [p for p in indexes if 0 <= p < count]
        tps = [TopicPartition(topic, p) for p in wanted]
        if not tps:
            return []
        earliest, latest = await asyncio.gather(
            admin.list_offsets({tp: "earliest" for tp in tps}),
            admin.list_offsets({tp: "latest" for tp in tps}),
        )
        return [
            PartitionOffsets(
                tp.partition,
                earliest.get(tp, -1),
                latest.get(tp, -1),
                admin.cluster.leader_for(topic, tp.partition),
            )
            for tp in tps
        ]

    async def record_totals(self) -> RecordTotals:
        """Log end offsets summed (cached 5 s: one ListOffsets of every
        partition, the overview's most expensive figure)."""

        async def make() -> RecordTotals:
            topics = await self.topics()
            tps = [TopicPartition(t, p) for t, n in topics.items() for p in range(n)]
            ends = await self.log_ends(tps)
            produced = sum(o for tp, o in ends.items() if not tp.topic.startswith("__"))
            commits = sum(o for tp, o in ends.items() if tp.topic == OFFSETS_TOPIC)
            return RecordTotals(produced, commits)

        hit = self._cache.get("records")
        if hit is not None and time.monotonic() - hit.at < 5.0:
            return hit.value  # type: ignore[no-any-return]
        value = await make()
        self._cache["records"] = Sampled(value)
        return value

    async def offsets_retention_ms(self) -> int | None:
        """The broker's offsets.retention.minutes in ms (cached), None if not told."""
        return await self._broker_ms("offsets.retention.minutes", 60_000)

    async def consumer_session_timeout_ms(self) -> int | None:
        """The broker's group.consumer.session.timeout.ms (KIP-848 groups), None if not told."""
        return await self._broker_ms("group.consumer.session.timeout.ms", 1)

    async def _broker_ms(self, name: str, unit_ms: int) -> int | None:
        """A broker setting (in units of `unit_ms`) as ms, read at most once a minute."""
        hit = self._cache.get(name)
        if hit is not None and time.monotonic() - hit.at < 60.0:
            return hit.value  # type: ignore[no-any-return]
        admin = await self.admin()
        node = str(min(admin.cluster.brokers, default=0))
        found = dict((n, v) for n, v, _ in await self.configs(BROKER, node))
        value = found.get(name)
        ms = int(value) * unit_ms if value and value.isdigit() else None
        self._cache[name] = Sampled(ms)
        return ms

    async def topic_configs(self, topic: str) -> list[tuple[str, str | None, bool]]:
        return await self.configs(TOPIC, topic)

    async def configs(self, kind: int, name: str) -> list[tuple[str, str | None, bool]]:
        """(name, value, is_default) of a resource's configs, via DescribeConfigs;
        [] when the broker refuses (not authorized, not supported)."""
        admin = await self.admin()
        try:
            response = await admin.cluster.send_any(
                DESCRIBE_CONFIGS,
                {
                    "resources": [
                        {"resource_type": kind, "resource_name": name, "configuration_keys": None}
                    ],
                    "include_synonyms": False,
                    "include_documentation": False,
                },
            )
        except KafkaError:
            return []
        out = []
        for resource in response.results:
            if int(resource.error_code) != 0:
                return []
            for c in resource.configs:
                default = bool(getattr(c, "is_default", False)) or int(
                    getattr(c, "config_source", 0)
                ) in (4, 5)
                out.append((c.name, c.value, default))
        return sorted(out)

    async def partition_sizes(self, topic: str, partitions: Iterable[int]) -> dict[int, int]:
        """Bytes on disk per partition, summed over every broker's log dirs
        (DescribeLogDirs); {} when the broker refuses or lacks the API."""
        admin = await self.admin()
        wanted = [int(p) for p in partitions]
        if not wanted:
            return {}
        sizes: dict[int, int] = {}
        try:
            for node_id in sorted(admin.cluster.brokers):
                conn = await admin.cluster.connection(node_id)
                if not conn.supports(DESCRIBE_LOG_DIRS):
                    return {}
                response = await conn.send(
                    DESCRIBE_LOG_DIRS, {"topics": [{"topic": topic, "partitions": wanted}]}
                )
                if int(getattr(response, "error_code", 0)) != 0:
                    return {}
                for result in response.results:
                    for t in result.topics:
                        for p in t.partitions:
                            if not p.is_future_key:
                                index = int(p.partition_index)
                                sizes[index] = sizes.get(index, 0) + int(p.partition_size)
        except KafkaError:
            return {}
        return sizes
