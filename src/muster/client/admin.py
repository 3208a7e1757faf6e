"""Admin operations: topics, partitions, groups and their offsets.

`AIOAdmin` is the asyncio core, `Admin` the blocking facade. Every call
returns plain data; a per-item Kafka error raises the matching `KafkaError`
(the first one, with `.errors` holding all of them by name), unless
`raise_errors=False`, where results map each name to an error or value.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from muster.client import admin_info, admin_security
from muster.client._runner import LoopThread
from muster.client.admin_info import ConfigEntry, TopicMetadata
from muster.client.admin_security import AclBinding
from muster.client.config import Config
from muster.client.config import isolation_level as isolation_level_of
from muster.client.errors import KafkaError, error_for
from muster.client.net import Cluster, Connection
from muster.client.security import ClientSecurity
from muster.client.types import TopicPartition
from muster.protocol.consumer_protocol import decode_assignment

CREATE_TOPICS = 19
DELETE_TOPICS = 20
CREATE_PARTITIONS = 37
LIST_GROUPS = 16
DESCRIBE_GROUPS = 15
DELETE_GROUPS = 42
FIND_COORDINATOR = 10
OFFSET_FETCH = 9
OFFSET_COMMIT = 8
OFFSET_DELETE = 47

DEFAULTS: dict[str, Any] = {"client.id": "muster-admin", "request.timeout.ms": 30_000}

OFFSET_SPECS = {"earliest": -2, "latest": -1, "max_timestamp": -3}


@dataclass(frozen=True)
class NewTopic:
    name: str
    num_partitions: int = 1
    replication_factor: int = -1  # the broker's default
    config: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class GroupListing:
    group_id: str
    protocol_type: str
    state: str
    group_type: str = ""  # classic, consumer, share (ListGroups v5+, lowercased); "" when not told


@dataclass(frozen=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    assignment: frozenset[TopicPartition]


@dataclass(frozen=True)
class GroupDescription:
    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: tuple[MemberDescription, ...]


def _check(results: dict[str, KafkaError | None], raise_errors: bool) -> None:
    if not raise_errors:
        return
    for error in results.values():
        if error is not None:
            error.errors = results  # type: ignore[attr-defined]
            raise error


def _err(code: int, message: str | None = None) -> KafkaError | None:
    return None if int(code) == 0 else error_for(int(code), message)


class AIOAdmin:
    def __init__(self, conf: Mapping[str, Any]):
        self.config = Config(conf, DEFAULTS)
        self.timeout_ms = self.config.int("request.timeout.ms")
        self.cluster = Cluster(
            self.config.str("bootstrap.servers"),
            self.config.str("client.id"),
            self.timeout_ms / 1000,
            ClientSecurity.from_conf(self.config.raw),
        )

    async def start(self) -> AIOAdmin:
        await self.cluster.refresh_metadata([])
        return self

    async def close(self) -> None:
        await self.cluster.close()

    async def _controller(self) -> Connection:
        if self.cluster.controller_id < 0:
            await self.cluster.refresh_metadata([])
        if self.cluster.controller_id in self.cluster.brokers:
            return await self.cluster.connection(self.cluster.controller_id)
        return await self.cluster.any_connection()

    async def _find_coordinator(self, group_id: str) -> Any:
        response = await self.cluster.send_any(
            FIND_COORDINATOR, {"key": group_id, "key_type": 0, "coordinator_keys": [group_id]}
        )
        entry = response.coordinators[0] if getattr(response, "coordinators", None) else response
        if int(entry.error_code) != 0:
            raise error_for(int(entry.error_code), f"FindCoordinator {group_id}")
        return entry

    async def find_coordinator(self, group_id: str) -> int:
        """The node id of the group's coordinator (FindCoordinator)."""
        return int((await self._find_coordinator(group_id)).node_id)

    async def _coordinator(self, group_id: str) -> Connection:
        entry = await self._find_coordinator(group_id)
        return await self.cluster.coordinator_connection(
            int(entry.node_id), str(entry.host), int(entry.port)
        )

    # ------------------------------------------------------------ topics

    async def list_topics(self) -> dict[str, int]:
        await self.cluster.refresh_metadata(None)
        return self.cluster.partition_counts()

    async def create_topics(
        self,
        topics: Iterable[NewTopic | str],
        validate_only: bool = False,
        raise_errors: bool = True,
    ) -> dict[str, KafkaError | None]:
        items = [t if isinstance(t, NewTopic) else NewTopic(t) for t in topics]
        conn = await self._controller()
        response = await conn.send(
            CREATE_TOPICS,
            {
                "topics": [
                    {
                        "name": t.name,
                        "num_partitions": t.num_partitions,
                        "replication_factor": t.replication_factor,
                        "assignments": [],
                        "configs": [{"name": k, "value": v} for k, v in t.config.items()],
                    }
                    for t in items
                ],
                "timeout": self.timeout_ms,
                "validate_only": validate_only,
            },
        )
        results = {
            t.name: _err(t.error_code, getattr(t, "error_message", None)) for t in response.topics
        }
        _check(results, raise_errors)
        return results

    async def delete_topics(
        self, names: Iterable[str], raise_errors: bool = True
    ) -> dict[str, KafkaError | None]:
        names = list(names)
        conn = await self._controller()
        response = await conn.send(
            DELETE_TOPICS,
            {
                "topic_names": names,
                "topics": [{"name": n} for n in names],
                "timeout": self.timeout_ms,
            },
        )
        results = {
            r.name: _err(r.error_code, getattr(r, "error_message", None))
            for r in response.responses
        }
        _check(results, raise_errors)
        return results

    async def create_partitions(
        self, new_counts: Mapping[str, int], validate_only: bool = False, raise_errors: bool = True
    ) -> dict[str, KafkaError | None]:
        conn = await self._controller()
        response = await conn.send(
            CREATE_PARTITIONS,
            {
                "topics": [
                    {"name": t, "count": n, "assignments": None} for t, n in new_counts.items()
                ],
                "timeout": self.timeout_ms,
                "validate_only": validate_only,
            },
        )
        results = {r.name: _err(r.error_code, r.error_message) for r in response.results}
        _check(results, raise_errors)
        return results

    async def list_offsets(
        self, specs: Mapping[Any, int | str], isolation_level: int | str = "read_uncommitted"
    ) -> dict[TopicPartition, int]:
        """{tp: "earliest" | "latest" | timestamp_ms} -> {tp: offset} (-1: none).
        With isolation_level="read_committed", "latest" is the last stable offset
        (Java's ListOffsetsOptions; read_uncommitted by default, as Java's and
        confluent-kafka's admin)."""
        wanted = {
            TopicPartition(*tp): OFFSET_SPECS[s] if isinstance(s, str) else int(s)
            for tp, s in specs.items()
        }
        return await self.cluster.list_offsets(wanted, isolation_level_of(isolation_level))

    async def describe_topics(self) -> list[TopicMetadata]:
        """Every topic with its partitions' leader, replicas and ISR."""
        return await admin_info.describe_topics(self.cluster)

    async def describe_configs(
        self, name: str, resource_type: int = admin_info.RESOURCE_TOPIC
    ) -> list[ConfigEntry]:
        """A topic's (or a broker's, resource_type=4) configs: DescribeConfigs."""
        return await admin_info.describe_configs(self.cluster, resource_type, name)

    # ------------------------------------------------------------ ACLs, SCRAM users

    async def create_acls(self, bindings: Iterable[AclBinding]) -> None:
        await admin_security.create_acls(self.cluster, bindings)

    async def describe_acls(self, filter_: AclBinding) -> list[AclBinding]:
        return await admin_security.describe_acls(self.cluster, filter_)

    async def delete_acls(self, filters: Iterable[AclBinding]) -> list[AclBinding]:
        """Deletes every ACL matching a filter; returns the deleted ones."""
        return await admin_security.delete_acls(self.cluster, filters)

    async def describe_scram_users(self) -> dict[str, list[tuple[str, int]]]:
        return await admin_security.describe_scram_users(self.cluster)

    async def upsert_scram_user(
        self, user: str, mechanism: str, password: str, iterations: int = 8192
    ) -> None:
        await admin_security.upsert_scram_user(self.cluster, user, mechanism, password, iterations)

    async def delete_scram_user(self, user: str, mechanism: str) -> None:
        await admin_security.delete_scram_user(self.cluster, user, mechanism)

    # ------------------------------------------------------------ groups

    async def list_groups(self) -> list[GroupListing]:
        await self.cluster.refresh_metadata([])
        out: list[GroupListing] = []
        for node_id in sorted(self.cluster.brokers):
            conn = await self.cluster.connection(node_id)
            response = await conn.send(LIST_GROUPS, {"states_filter": [], "types_filter": []})
            if int(response.error_code) != 0:
                raise error_for(int(response.error_code), "ListGroups")
            for g in response.groups:
                out.append(
                    GroupListing(
                        g.group_id,
                        g.protocol_type,
                        getattr(g, "group_state", "") or "",
                        (getattr(g, "group_type", "") or "").lower(),
                    )
                )
        return out

    async def describe_groups(self, group_ids: Iterable[str]) -> dict[str, GroupDescription]:
        out: dict[str, GroupDescription] = {}
        for group_id in group_ids:
            conn = await self._coordinator(group_id)
            response = await conn.send(
                DESCRIBE_GROUPS, {"groups": [group_id], "include_authorized_operations": False}
            )
            for g in response.groups:
                if int(g.error_code) != 0:
                    raise error_for(int(g.error_code), f"DescribeGroups {g.group_id}")
                members = []
                for m in g.members:
                    try:
                        parts = decode_assignment(bytes(m.member_assignment)).partition_set()
                    except ValueError:
                        parts = frozenset()
                    members.append(
                        MemberDescription(
                            m.member_id,
                            getattr(m, "group_instance_id", None),
                            m.client_id,
                            m.client_host,
                            frozenset(TopicPartition(*tp) for tp in parts),
                        )
                    )
                out[g.group_id] = GroupDescription(
                    g.group_id, g.group_state, g.protocol_type, g.protocol_data, tuple(members)
                )
        return out

    async def delete_groups(
        self, group_ids: Iterable[str], raise_errors: bool = True
    ) -> dict[str, KafkaError | None]:
        results: dict[str, KafkaError | None] = {}
        for group_id in group_ids:
            conn = await self._coordinator(group_id)
            response = await conn.send(DELETE_GROUPS, {"groups_names": [group_id]})
            for r in response.results:
                results[r.group_id] = _err(r.error_code, f"DeleteGroups {r.group_id}")
        _check(results, raise_errors)
        return results

    async def list_group_offsets(
        self, group_id: str, partitions: Iterable[Any] | None = None
    ) -> dict[TopicPartition, int]:
        """Committed offsets of a group (all partitions it has, or those asked)."""
        topics = None
        if partitions is not None:
            grouped: dict[str, list[int]] = {}
            for tp in partitions:
                grouped.setdefault(tp[0], []).append(int(tp[1]))
            topics = [{"name": t, "partition_indexes": ps} for t, ps in grouped.items()]
        conn = await self._coordinator(group_id)
        response = await conn.send(
            OFFSET_FETCH, {"group_id": group_id, "topics": topics, "require_stable": False}
        )
        if int(getattr(response, "error_code", 0)) != 0:
            raise error_for(int(response.error_code), f"OffsetFetch {group_id}")
        out: dict[TopicPartition, int] = {}
        for t in response.topics:
            for p in t.partitions:
                if int(p.error_code) != 0:
                    raise error_for(int(p.error_code), f"OffsetFetch {t.name}")
                if int(p.committed_offset) >= 0:
                    out[TopicPartition(t.name, int(p.partition_index))] = int(p.committed_offset)
        return out

    async def alter_group_offsets(
        self, group_id: str, offsets: Mapping[Any, int]
    ) -> dict[TopicPartition, KafkaError | None]:
        grouped: dict[str, list[dict[str, Any]]] = {}
        for tp, offset in offsets.items():
            grouped.setdefault(tp[0], []).append(
                {
                    "partition_index": int(tp[1]),
                    "committed_offset": int(offset),
                    "committed_leader_epoch": -1,
                    "committed_metadata": "",
                }
            )
        conn = await self._coordinator(group_id)
        response = await conn.send(
            OFFSET_COMMIT,
            {
                "group_id": group_id,
                "generation_id_or_member_epoch": -1,
                "generation_id": -1,
                "member_id": "",
                "group_instance_id": None,
                "retention_time_ms": -1,
                "topics": [{"name": t, "partitions": ps} for t, ps in grouped.items()],
            },
        )
        results = {
            TopicPartition(t.name, int(p.partition_index)): _err(p.error_code, "OffsetCommit")
            for t in response.topics
            for p in t.partitions
        }
        _check(results, True)  # type: ignore[arg-type]
        return results

    async def delete_group_offsets(
        self, group_id: str, partitions: Iterable[Any]
    ) -> dict[TopicPartition, KafkaError | None]:
        grouped: dict[str, list[dict[str, Any]]] = {}
        for tp in partitions:
            grouped.setdefault(tp[0], []).append({"partition_index": int(tp[1])})
        conn = await self._coordinator(group_id)
        response = await conn.send(
            OFFSET_DELETE,
            {
                "group_id": group_id,
                "topics": [{"name": t, "partitions": ps} for t, ps in grouped.items()],
            },
        )
        if int(response.error_code) != 0:
            raise error_for(int(response.error_code), f"OffsetDelete {group_id}")
        results = {
            TopicPartition(t.name, int(p.partition_index)): _err(p.error_code, "OffsetDelete")
            for t in response.topics
            for p in t.partitions
        }
        _check(results, True)  # type: ignore[arg-type]
        return results


class Admin:
    """Blocking admin client over `AIOAdmin` (same methods, same results)."""

    def __init__(self, conf: Mapping[str, Any]):
        self._runner = LoopThread("muster-admin")
        try:
            self._aio: AIOAdmin = self._runner.run(self._make(conf), 60)
        except BaseException:
            self._runner.stop()
            raise

    @staticmethod
    async def _make(conf: Mapping[str, Any]) -> AIOAdmin:
        return await AIOAdmin(conf).start()

    def _run(self, coro: Any) -> Any:
        return self._runner.run(coro, self._aio.timeout_ms / 1000 + 10)

    def describe_consumer_group(self, group_id: str) -> Any:
        """A consumer (KIP-848) group as ConsumerGroupDescribe tells it
        (client.consumer_group_describe.ConsumerGroupView), or None when the
        broker does not serve it or the group is not a consumer group."""
        from muster.client.consumer_group_describe import describe_consumer_group

        return self._run(describe_consumer_group(self._aio, group_id))

    def list_transactions(self) -> Any:
        """Every broker's transactions (client.transactions_admin.TransactionListing)."""
        from muster.client.transactions_admin import list_transactions

        return self._run(list_transactions(self._aio))

    def describe_transaction(self, transactional_id: str) -> Any:
        """One transaction as its coordinator tells it (TransactionDescription)."""
        from muster.client.transactions_admin import describe_transaction

        return self._run(describe_transaction(self._aio, transactional_id))

    def list_topics(self) -> dict[str, int]:
        return self._run(self._aio.list_topics())

    def create_topics(self, topics: Iterable[NewTopic | str], **kw: Any) -> dict[str, Any]:
        return self._run(self._aio.create_topics(list(topics), **kw))

    def delete_topics(self, names: Iterable[str], **kw: Any) -> dict[str, Any]:
        return self._run(self._aio.delete_topics(list(names), **kw))

    def create_partitions(self, new_counts: Mapping[str, int], **kw: Any) -> dict[str, Any]:
        return self._run(self._aio.create_partitions(new_counts, **kw))

    def list_offsets(
        self, specs: Mapping[Any, int | str], isolation_level: int | str = "read_uncommitted"
    ) -> dict[TopicPartition, int]:
        return self._run(self._aio.list_offsets(specs, isolation_level))

    def describe_topics(self) -> list[TopicMetadata]:
        return self._run(self._aio.describe_topics())

    def describe_configs(
        self, name: str, resource_type: int = admin_info.RESOURCE_TOPIC
    ) -> list[ConfigEntry]:
        return self._run(self._aio.describe_configs(name, resource_type))

    def create_acls(self, bindings: Iterable[AclBinding]) -> None:
        self._run(self._aio.create_acls(list(bindings)))

    def describe_acls(self, filter_: AclBinding) -> list[AclBinding]:
        return self._run(self._aio.describe_acls(filter_))

    def delete_acls(self, filters: Iterable[AclBinding]) -> list[AclBinding]:
        return self._run(self._aio.delete_acls(list(filters)))

    def describe_scram_users(self) -> dict[str, list[tuple[str, int]]]:
        return self._run(self._aio.describe_scram_users())

    def upsert_scram_user(
        self, user: str, mechanism: str, password: str, iterations: int = 8192
    ) -> None:
        self._run(self._aio.upsert_scram_user(user, mechanism, password, iterations))

    def delete_scram_user(self, user: str, mechanism: str) -> None:
        self._run(self._aio.delete_scram_user(user, mechanism))

    def find_coordinator(self, group_id: str) -> int:
        return self._run(self._aio.find_coordinator(group_id))

    def list_groups(self) -> list[GroupListing]:
        return self._run(self._aio.list_groups())

    def describe_groups(self, group_ids: Iterable[str]) -> dict[str, GroupDescription]:
        return self._run(self._aio.describe_groups(list(group_ids)))

    def delete_groups(self, group_ids: Iterable[str], **kw: Any) -> dict[str, Any]:
        return self._run(self._aio.delete_groups(list(group_ids), **kw))

    def list_group_offsets(
        self, group_id: str, partitions: Iterable[Any] | None = None
    ) -> dict[TopicPartition, int]:
        return self._run(
            self._aio.list_group_offsets(group_id, None if partitions is None else list(partitions))
        )

    def alter_group_offsets(self, group_id: str, offsets: Mapping[Any, int]) -> dict[Any, Any]:
        return self._run(self._aio.alter_group_offsets(group_id, offsets))

    def delete_group_offsets(self, group_id: str, partitions: Iterable[Any]) -> dict[Any, Any]:
        return self._run(self._aio.delete_group_offsets(group_id, list(partitions)))

    def close(self) -> None:
        if self._runner.loop.is_closed():
            return
        try:
            self._runner.run(self._aio.close(), 10)
        finally:
            self._runner.stop()

    def __enter__(self) -> Admin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
