"""Cluster descriptions for tools: topics with their partitions' leaders,
replicas and ISRs (Metadata), and a resource's configs (DescribeConfigs).
`AIOAdmin.describe_topics` / `describe_configs` call these."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from muster.client._runner import with_timeout
from muster.client.errors import KafkaTimeoutError, error_for
from muster.client.net import METADATA, Cluster

DESCRIBE_CONFIGS = 32
RESOURCE_TOPIC, RESOURCE_BROKER = 2, 4
# DescribeConfigs' config_source (Kafka's ConfigSource ids), by Java's names
CONFIG_SOURCES = {
    0: "unknown",
    1: "dynamic_topic_config",
    2: "dynamic_broker_config",
    3: "dynamic_default_broker_config",
    4: "static_broker_config",
    5: "default_config",
    6: "dynamic_broker_logger_config",
}


@dataclass(frozen=True)
class PartitionMetadata:
    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    error_code: int = 0


@dataclass(frozen=True)
class TopicMetadata:
    name: str
    partitions: tuple[PartitionMetadata, ...]
    error_code: int = 0


@dataclass(frozen=True)
class ConfigEntry:
    name: str
    value: str | None
    source: str  # CONFIG_SOURCES' names
    read_only: bool
    sensitive: bool

    @property
    def is_default(self) -> bool:
        return self.source == "default_config"


async def describe_topics(cluster: Cluster) -> list[TopicMetadata]:
    """Every topic (Metadata for all topics: naming one may auto-create it)."""
    conn = await cluster.any_connection()
    version = conn.version_for(METADATA)
    body = {"topics": None if version >= 1 else [], "allow_auto_topic_creation": False}
    try:
        response = await with_timeout(conn.send(METADATA, body, version), cluster.request_timeout_s)
    except TimeoutError:
        raise KafkaTimeoutError(f"metadata from {conn!r}") from None
    topics = []
    for t in response.topics:
        parts = tuple(
            PartitionMetadata(
                int(p.partition_index),
                int(p.leader_id),
                tuple(int(r) for r in p.replica_nodes),
                tuple(int(r) for r in p.isr_nodes),
                int(p.error_code),
            )
            for p in sorted(t.partitions, key=lambda p: int(p.partition_index))
        )
        topics.append(TopicMetadata(str(t.name), parts, int(t.error_code)))
    return sorted(topics, key=lambda t: t.name)


async def describe_configs(cluster: Cluster, resource_type: int, name: str) -> list[ConfigEntry]:
    body: dict[str, Any] = {
        "resources": [
            {"resource_type": resource_type, "resource_name": name, "configuration_keys": None}
        ],
        "include_synonyms": False,
        "include_documentation": False,
    }
    response = await cluster.send_any(DESCRIBE_CONFIGS, body)
    entries = []
    for result in response.results:
        if int(result.error_code) != 0:
            raise error_for(int(result.error_code), result.error_message or name)
        for c in result.configs:
            source = CONFIG_SOURCES.get(int(getattr(c, "config_source", 0)), "unknown")
            entries.append(
                ConfigEntry(c.name, c.value, source, bool(c.read_only), bool(c.is_sensitive))
            )
    return sorted(entries, key=lambda e: e.name)
