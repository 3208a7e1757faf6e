"""The message browser's parameters and record formatting: where to start
(offset, timestamp or newest), how to show key and value (text, pretty JSON,
hex), and the filter box."""

from __future__ import annotations

import json
from dataclasses import dataclass

from starlette.datastructures import QueryParams

from muster.client.admin import AIOAdmin
from muster.client.types import ConsumerRecord, TopicPartition
from muster.console.paging import int_param

FORMATS = ("text", "json", "hex")
SHOW_BYTES = 4_096


@dataclass(frozen=True)
class Browse:
    partition: int
    mode: str  # offset | timestamp | newest
    offset: int
    timestamp_ms: int
    limit: int
    fmt: str
    filter: str


def browse_params(params: QueryParams, partition_count: int) -> Browse:
    mode = params.get("from", "newest")
    if mode not in ("offset", "timestamp", "newest"):
        mode = "newest"
    fmt = params.get("format", "text")
    return Browse(
        partition=int_param(params, "partition", 0, 0, max(0, partition_count - 1)),
        mode=mode,
        offset=int_param(params, "offset", 0, 0, 1 << 62),
        timestamp_ms=int_param(params, "timestamp", 0, 0, 1 << 62),
        limit=int_param(params, "limit", 20, 1, 200),
        fmt=fmt if fmt in FORMATS else "text",
        filter=params.get("filter", "").strip(),
    )


async def find_start(
    admin: AIOAdmin, tp: TopicPartition, b: Browse, earliest: int, latest: int
) -> int:
    """The first offset of the page: as asked, clamped into [earliest, latest]."""
    if b.mode == "newest":
        start = latest - b.limit
    elif b.mode == "timestamp":
        found = (await admin.list_offsets({tp: b.timestamp_ms})).get(tp, -1)
        start = latest if found < 0 else found
    else:
        start = b.offset
    return min(latest, max(earliest, start))


@dataclass(frozen=True)
class Row:
    offset: int
    timestamp: int
    key: str
    value: str
    headers: list[tuple[str, str]]
    size: int

    def matches(self, needle: str) -> bool:
        n = needle.lower()
        return n in self.key.lower() or n in self.value.lower()


def show(data: bytes | None, fmt: str) -> str:
    if data is None:
        return "null"
    cut = data[:SHOW_BYTES]
    more = f" … ({len(data)} bytes)" if len(data) > SHOW_BYTES else ""
    if fmt == "hex":
        return cut.hex(" ") + more
    text = cut.decode("utf-8", errors="replace")
    if fmt == "json" and not more:
        try:
            return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
        except ValueError:
            return text
    return text + more


def render_record(record: ConsumerRecord, fmt: str) -> Row:
    return Row(
        record.offset,
        record.timestamp,
        show(record.key, fmt if fmt != "json" else "text"),
        show(record.value, fmt),
        [(k, show(v, "text" if fmt == "json" else fmt)) for k, v in record.headers],
        len(record.key or b"") + len(record.value or b""),
    )
