"""THE api table: api key -> versions and handler. Dispatch and ApiVersions both read it.

A handler is named "module:function" and imported on the first request of its
API: the handler modules (and the coordinator, ACL, config and transaction code
they pull in) are most of what a broker imports, and a broker must accept
connections before it needs any of them (issue #15: start ≤ 0.3 s).
ApiVersions answers from the versions alone.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from muster.server.state import RequestContext

Handler = Callable[[RequestContext, Any], Awaitable[dict[str, Any] | None]]


@dataclass(frozen=True)
class ApiEntry:
    api_key: int
    name: str
    min_version: int
    max_version: int
    # The handler itself, or "module:function" to import on first use (a
    # module without a dot is one of muster.server.handlers).
    target: Handler | str
    # Serial requests wait for everything before them on the connection and
    # hold back everything after, as Kafka's muted channel does; the data
    # plane is pipelined (answers still go out in request order).
    serial: bool = False

    @cached_property
    def handler(self) -> Handler:
        # cached_property stores in the instance __dict__ (allowed on a frozen
        # dataclass), so after the first request this is a plain attribute read.
        if not isinstance(self.target, str):
            return self.target
        module, _, name = self.target.partition(":")
        if "." not in module:
            module = f"muster.server.handlers.{module}"
        handler: Handler = getattr(importlib.import_module(module), name)
        return handler


ENTRIES: tuple[ApiEntry, ...] = (
    ApiEntry(0, "Produce", 3, 11, "produce:handle_produce"),
    ApiEntry(1, "Fetch", 4, 16, "fetch:handle_fetch"),
    ApiEntry(2, "ListOffsets", 0, 8, "list_offsets:handle_list_offsets"),
    ApiEntry(3, "Metadata", 0, 12, "metadata:handle_metadata"),
    ApiEntry(18, "ApiVersions", 0, 3, "api_versions:handle_api_versions"),
    ApiEntry(29, "DescribeAcls", 1, 3, "acls:handle_describe_acls"),
    ApiEntry(30, "CreateAcls", 1, 3, "acls:handle_create_acls", serial=True),
    ApiEntry(31, "DeleteAcls", 1, 3, "acls:handle_delete_acls", serial=True),
    ApiEntry(17, "SaslHandshake", 0, 1, "sasl:handle_sasl_handshake", serial=True),
    ApiEntry(36, "SaslAuthenticate", 0, 2, "sasl:handle_sasl_authenticate", serial=True),
    ApiEntry(
        50, "DescribeUserScramCredentials", 0, 0, "sasl:handle_describe_user_scram_credentials"
    ),
    ApiEntry(
        51,
        "AlterUserScramCredentials",
        0,
        0,
        "sasl:handle_alter_user_scram_credentials",
        serial=True,
    ),
    ApiEntry(19, "CreateTopics", 2, 7, "topics_admin:handle_create_topics", serial=True),
    ApiEntry(20, "DeleteTopics", 1, 6, "topics_admin:handle_delete_topics", serial=True),
    ApiEntry(21, "DeleteRecords", 0, 2, "delete_records:handle_delete_records", serial=True),
    ApiEntry(22, "InitProducerId", 0, 4, "producer_ids:handle_init_producer_id", serial=True),
    ApiEntry(
        24, "AddPartitionsToTxn", 0, 3, "transactions:handle_add_partitions_to_txn", serial=True
    ),
    ApiEntry(25, "AddOffsetsToTxn", 0, 3, "transactions:handle_add_offsets_to_txn", serial=True),
    ApiEntry(26, "EndTxn", 0, 3, "transactions:handle_end_txn", serial=True),
    ApiEntry(28, "TxnOffsetCommit", 0, 3, "transactions:handle_txn_offset_commit", serial=True),
    ApiEntry(37, "CreatePartitions", 0, 3, "topics_admin:handle_create_partitions", serial=True),
    ApiEntry(8, "OffsetCommit", 0, 9, "groups:handle_offset_commit", serial=True),
    ApiEntry(9, "OffsetFetch", 0, 9, "groups:handle_offset_fetch", serial=True),
    ApiEntry(10, "FindCoordinator", 0, 6, "groups:handle_find_coordinator"),
    ApiEntry(11, "JoinGroup", 0, 9, "groups:handle_join_group", serial=True),
    ApiEntry(12, "Heartbeat", 0, 4, "groups:handle_heartbeat", serial=True),
    ApiEntry(13, "LeaveGroup", 0, 5, "groups:handle_leave_group", serial=True),
    ApiEntry(14, "SyncGroup", 0, 5, "groups:handle_sync_group", serial=True),
    ApiEntry(15, "DescribeGroups", 0, 6, "groups:handle_describe_groups"),
    ApiEntry(16, "ListGroups", 0, 5, "groups:handle_list_groups"),
    ApiEntry(42, "DeleteGroups", 0, 2, "groups:handle_delete_groups", serial=True),
    ApiEntry(47, "OffsetDelete", 0, 0, "groups:handle_offset_delete", serial=True),
    ApiEntry(
        68,
        "ConsumerGroupHeartbeat",
        0,
        1,
        "modern_groups:handle_consumer_group_heartbeat",
        serial=True,
    ),
    ApiEntry(69, "ConsumerGroupDescribe", 0, 1, "modern_groups:handle_consumer_group_describe"),
    ApiEntry(60, "DescribeCluster", 0, 2, "cluster_admin:handle_describe_cluster"),
    ApiEntry(35, "DescribeLogDirs", 1, 4, "cluster_admin:handle_describe_log_dirs"),
    ApiEntry(
        75,
        "DescribeTopicPartitions",
        0,
        0,
        "describe_topics:handle_describe_topic_partitions",
    ),
    ApiEntry(55, "DescribeQuorum", 0, 2, "quorum:handle_describe_quorum"),
    ApiEntry(61, "DescribeProducers", 0, 0, "transactions:handle_describe_producers"),
    ApiEntry(65, "DescribeTransactions", 0, 0, "transactions:handle_describe_transactions"),
    ApiEntry(66, "ListTransactions", 0, 1, "transactions:handle_list_transactions"),
    ApiEntry(43, "ElectLeaders", 0, 2, "replicas:handle_elect_leaders", serial=True),
    ApiEntry(
        46, "ListPartitionReassignments", 0, 0, "replicas:handle_list_partition_reassignments"
    ),
    ApiEntry(48, "DescribeClientQuotas", 0, 1, "client_quotas:handle_describe_client_quotas"),
    ApiEntry(
        49, "AlterClientQuotas", 0, 1, "client_quotas:handle_alter_client_quotas", serial=True
    ),
    ApiEntry(32, "DescribeConfigs", 1, 4, "configs:handle_describe_configs"),
    ApiEntry(33, "AlterConfigs", 0, 2, "configs:handle_alter_configs", serial=True),
    ApiEntry(
        44, "IncrementalAlterConfigs", 0, 1, "configs:handle_incremental_alter_configs", serial=True
    ),
)


# KIP-932 share groups: served and advertised unless muster.share.enable is
# false (a Kafka 4.4 serves them by default: share.version finalized)
SHARE_ENTRIES: tuple[ApiEntry, ...] = (
    ApiEntry(76, "ShareGroupHeartbeat", 1, 1, "share_groups:handle_share_group_heartbeat"),
    ApiEntry(77, "ShareGroupDescribe", 1, 1, "share_groups:handle_share_group_describe"),
    ApiEntry(78, "ShareFetch", 1, 2, "share_fetch:handle_share_fetch"),
    ApiEntry(79, "ShareAcknowledge", 1, 2, "share_fetch:handle_share_acknowledge"),
    ApiEntry(
        90,
        "DescribeShareGroupOffsets",
        0,
        1,
        "share_offsets:handle_describe_share_group_offsets",
    ),
    ApiEntry(
        91,
        "AlterShareGroupOffsets",
        0,
        0,
        "share_offsets:handle_alter_share_group_offsets",
        serial=True,
    ),
    ApiEntry(
        92,
        "DeleteShareGroupOffsets",
        0,
        0,
        "share_offsets:handle_delete_share_group_offsets",
        serial=True,
    ),
)


def build_table(extra: tuple[ApiEntry, ...] = (), share: bool = False) -> dict[int, ApiEntry]:
    return {e.api_key: e for e in (*ENTRIES, *(SHARE_ENTRIES if share else ()), *extra)}
