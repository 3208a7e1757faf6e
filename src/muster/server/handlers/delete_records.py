"""DeleteRecords: move partitions' log start offsets up (kafka-delete-records.sh)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from kio.schema.errors import ErrorCode

from muster.security.acl import Operation
from muster.server import authz
from muster.server.handlers.metadata import INTERNAL_TOPICS
from muster.server.state import RequestContext

log = logging.getLogger(__name__)
HIGH_WATERMARK = -1  # Kafka's "delete everything below the high watermark"


async def handle_delete_records(ctx: RequestContext, req: Any) -> dict[str, Any]:
    state = ctx.state
    topics = []
    denied = authz.denied_topics(ctx, Operation.DELETE, (t.name for t in req.topics))
    for topic in req.topics:
        parts = []
        for p in topic.partitions:
            entry: dict[str, Any] = {
                "partition_index": p.partition_index,
                "low_watermark": -1,
                "error_code": ErrorCode.none,
            }
            plog = state.logs.get(topic.name, p.partition_index)
            if topic.name in denied:
                entry["error_code"] = ErrorCode.topic_authorization_failed
            elif plog is None:
                entry["error_code"] = ErrorCode.unknown_topic_or_partition
            elif topic.name in INTERNAL_TOPICS:
                entry["error_code"] = ErrorCode.invalid_topic_exception
            else:
                high_watermark = state.durability.visible_end(plog)
                offset = high_watermark if p.offset == HIGH_WATERMARK else p.offset
                if offset < 0 or offset > high_watermark:
                    entry["error_code"] = ErrorCode.offset_out_of_range
                else:
                    try:
                        entry["low_watermark"] = await asyncio.to_thread(
                            plog.delete_records, offset
                        )
                    except OSError as exc:
                        log.error(
                            "DeleteRecords on %s-%d failed: %s", topic.name, p.partition_index, exc
                        )
                        entry["error_code"] = ErrorCode.kafka_storage_error
            parts.append(entry)
        topics.append({"name": topic.name, "partitions": parts})
    return {"throttle_time": 0, "topics": topics}
