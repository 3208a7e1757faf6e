"""ListOffsets: earliest, latest, by timestamp, max timestamp.

As in Kafka, only offsets a consumer could fetch are answered: LATEST is the
high watermark, or the last stable offset for read_committed (v2+), and a
timestamp lookup finding a record at or past it answers no offset.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kio.schema.errors import ErrorCode

from muster.security.acl import Operation
from muster.server import authz
from muster.server.handlers.common import Slices
from muster.server.handlers.fetch import READ_COMMITTED, last_stable_offset
from muster.server.state import RequestContext

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL = -1, -2, -3, -4


async def handle_list_offsets(ctx: RequestContext, req: Any) -> dict[str, Any]:
    state = ctx.state
    committed = getattr(req, "isolation_level", 0) == READ_COMMITTED
    version = ctx.api_version
    topics = []
    denied = authz.denied_topics(ctx, Operation.DESCRIBE, (t.name for t in req.topics))
    slices = Slices(ctx)
    for topic in req.topics:
        parts = []
        for p in topic.partitions:
            if slices.due():
                await asyncio.sleep(0)
            entry: dict[str, Any] = {
                "partition_index": p.partition_index,
                "error_code": ErrorCode.none,
                "timestamp": -1,
                "offset": -1,
                "leader_epoch": 0,
            }
            plog = state.logs.get(topic.name, p.partition_index)
            if topic.name in denied:
                entry["error_code"] = ErrorCode.topic_authorization_failed
                entry["leader_epoch"] = -1
            elif plog is None:
                entry["error_code"] = ErrorCode.unknown_topic_or_partition
                entry["leader_epoch"] = -1
            elif p.timestamp == EARLIEST or (p.timestamp == EARLIEST_LOCAL and version >= 8):
                entry["offset"] = plog.log_start_offset  # no tiered storage: local is all
            elif (p.timestamp < 0 and p.timestamp not in (LATEST, MAX_TIMESTAMP)) or (
                p.timestamp == MAX_TIMESTAMP and version < 7
            ):  # Kafka: MAX_TIMESTAMP from v7 (KIP-734), EARLIEST_LOCAL from v8 (KIP-405)
                entry["error_code"] = ErrorCode.unsupported_version
            else:
                fetchable = state.durability.visible_end(plog)
                if committed:
                    fetchable = last_stable_offset(plog, fetchable)
                if p.timestamp == LATEST:
                    entry["offset"] = fetchable
                else:
                    if p.timestamp == MAX_TIMESTAMP:
                        found = plog.max_timestamp()
                    else:
                        found = plog.offset_for_timestamp(p.timestamp)
                    if found is not None and found[0] < fetchable:
                        entry["offset"], entry["timestamp"] = found
            if ctx.api_version == 0:
                # v0 answers with a list of offsets (old_style_offsets), at most
                # max_num_offsets of them; one is all a modern log can give.
                found = entry["offset"]
                entry["old_style_offsets"] = [found] if found >= 0 and p.max_num_offsets else []
            parts.append(entry)
        topics.append({"name": topic.name, "partitions": parts})
    return {"throttle_time": 0, "topics": topics}
