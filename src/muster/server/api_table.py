"""THE api table: api key -> versions and handler. Dispatch and ApiVersions both read it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from muster.server.handlers import acls as a
from muster.server.handlers import configs as c
from muster.server.handlers import consumer_groups as cg
from muster.server.handlers import groups as g
from muster.server.handlers import sasl as s
from muster.server.handlers import transactions as t
from muster.server.handlers.api_versions import handle_api_versions
from muster.server.handlers.delete_records import handle_delete_records
from muster.server.handlers.fetch import handle_fetch
from muster.server.handlers.list_offsets import handle_list_offsets
from muster.server.handlers.metadata import handle_metadata
from muster.server.handlers.produce import handle_produce
from muster.server.handlers.producer_ids import handle_init_producer_id
from muster.server.handlers.topics_admin import (
    handle_create_partitions,
    handle_create_topics,
    handle_delete_topics,
)
from muster.server.state import RequestContext

Handler = Callable[[RequestContext, Any], Awaitable[dict[str, Any] | None]]


@dataclass(frozen=True)
class ApiEntry:
    api_key: int
    name: str
    min_version: int
    max_version: int
    handler: Handler
    # Serial requests wait for everything before them on the connection and
    # hold back everything after, as Kafka's muted channel does; the data
    # plane is pipelined (answers still go out in request order).
    serial: bool = False


ENTRIES: tuple[ApiEntry, ...] = (
    ApiEntry(0, "Produce", 3, 11, handle_produce),
    ApiEntry(1, "Fetch", 4, 16, handle_fetch),
    ApiEntry(2, "ListOffsets", 0, 8, handle_list_offsets),
    ApiEntry(3, "Metadata", 0, 12, handle_metadata),
    ApiEntry(18, "ApiVersions", 0, 3, handle_api_versions),
    ApiEntry(29, "DescribeAcls", 1, 3, a.handle_describe_acls),
    ApiEntry(30, "CreateAcls", 1, 3, a.handle_create_acls, serial=True),
    ApiEntry(31, "DeleteAcls", 1, 3, a.handle_delete_acls, serial=True),
    ApiEntry(17, "SaslHandshake", 0, 1, s.handle_sasl_handshake, serial=True),
    ApiEntry(36, "SaslAuthenticate", 0, 2, s.handle_sasl_authenticate, serial=True),
    ApiEntry(50, "DescribeUserScramCredentials", 0, 0, s.handle_describe_user_scram_credentials),
    ApiEntry(
        51, "AlterUserScramCredentials", 0, 0, s.handle_alter_user_scram_credentials, serial=True
    ),
    ApiEntry(19, "CreateTopics", 2, 7, handle_create_topics, serial=True),
    ApiEntry(20, "DeleteTopics", 1, 6, handle_delete_topics, serial=True),
    ApiEntry(21, "DeleteRecords", 0, 2, handle_delete_records, serial=True),
    ApiEntry(22, "InitProducerId", 0, 4, handle_init_producer_id, serial=True),
    ApiEntry(24, "AddPartitionsToTxn", 0, 3, t.handle_add_partitions_to_txn, serial=True),
    ApiEntry(25, "AddOffsetsToTxn", 0, 3, t.handle_add_offsets_to_txn, serial=True),
    ApiEntry(26, "EndTxn", 0, 3, t.handle_end_txn, serial=True),
    ApiEntry(28, "TxnOffsetCommit", 0, 3, t.handle_txn_offset_commit, serial=True),
    ApiEntry(37, "CreatePartitions", 0, 3, handle_create_partitions, serial=True),
    ApiEntry(8, "OffsetCommit", 0, 9, g.handle_offset_commit, serial=True),
    ApiEntry(9, "OffsetFetch", 0, 9, g.handle_offset_fetch, serial=True),
    ApiEntry(10, "FindCoordinator", 0, 6, g.handle_find_coordinator),
    ApiEntry(11, "JoinGroup", 0, 9, g.handle_join_group, serial=True),
    ApiEntry(12, "Heartbeat", 0, 4, g.handle_heartbeat, serial=True),
    ApiEntry(13, "LeaveGroup", 0, 5, g.handle_leave_group, serial=True),
    ApiEntry(14, "SyncGroup", 0, 5, g.handle_sync_group, serial=True),
    ApiEntry(15, "DescribeGroups", 0, 5, g.handle_describe_groups),
    ApiEntry(16, "ListGroups", 0, 5, g.handle_list_groups),
    ApiEntry(42, "DeleteGroups", 0, 2, g.handle_delete_groups, serial=True),
    ApiEntry(47, "OffsetDelete", 0, 0, g.handle_offset_delete, serial=True),
    ApiEntry(68, "ConsumerGroupHeartbeat", 0, 1, cg.handle_consumer_group_heartbeat, serial=True),
    ApiEntry(69, "ConsumerGroupDescribe", 0, 1, cg.handle_consumer_group_describe),
    ApiEntry(32, "DescribeConfigs", 1, 4, c.handle_describe_configs),
    ApiEntry(33, "AlterConfigs", 0, 2, c.handle_alter_configs, serial=True),
    ApiEntry(44, "IncrementalAlterConfigs", 0, 1, c.handle_incremental_alter_configs, serial=True),
)


def build_table(extra: tuple[ApiEntry, ...] = ()) -> dict[int, ApiEntry]:
    return {e.api_key: e for e in (*ENTRIES, *extra)}
