"""ListOffsets: earliest, latest, by timestamp, max timestamp."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from muster.server.state import RequestContext

LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3


async def handle_list_offsets(ctx: RequestContext, req: Any) -> dict[str, Any]:
    state = ctx.state
    topics = []
    for topic in req.topics:
        parts = []
        for p in topic.partitions:
            entry: dict[str, Any] = {
                "partition_index": p.partition_index,
                "error_code": ErrorCode.none,
                "timestamp": -1,
                "offset": -1,
                "leader_epoch": 0,
            }
            plog = state.logs.get(topic.name, p.partition_index)
            if plog is None:
                entry["error_code"] = ErrorCode.unknown_topic_or_partition
                entry["leader_epoch"] = -1
            elif p.timestamp == LATEST:
                entry["offset"] = state.durability.visible_end(plog)
            elif p.timestamp == EARLIEST:
                entry["offset"] = plog.log_start_offset
            elif p.timestamp == MAX_TIMESTAMP:
                found = plog.max_timestamp()
                if found is not None:
                    entry["offset"], entry["timestamp"] = found
            elif p.timestamp < 0:
                entry["error_code"] = ErrorCode.unsupported_version
            else:
                found = plog.offset_for_timestamp(p.timestamp)
                visible = state.durability.visible_end(plog)
                if found is not None and found[0] < visible:
                    entry["offset"], entry["timestamp"] = found
            if ctx.api_version == 0:
                # v0 answers with a list of offsets (old_style_offsets), at most
                # max_num_offsets of them; one is all a modern log can give.
                found = entry["offset"]
                entry["old_style_offsets"] = [found] if found >= 0 and p.max_num_offsets else []
            parts.append(entry)
        topics.append({"name": topic.name, "partitions": parts})
    return {"throttle_time": 0, "topics": topics}
