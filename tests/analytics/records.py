"""Hand-made input rows in the Kafka source's schema, for the transform tests."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from muster.analytics.schema import KAFKA_SCHEMA
from muster.coordinator.topics import EVENTS_TOPIC


def ts(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def events_df(spark: Any, events: Iterable[Any]) -> Any:
    """Coordinator event objects as `__muster_group_events` records, in order."""
    rows = [
        (e.group_id.encode(), e.to_json(), EVENTS_TOPIC, 0, i, ts(0), 0)
        for i, e in enumerate(events)
    ]
    return spark.createDataFrame(rows, KAFKA_SCHEMA)


def records_df(spark: Any, rows: Iterable[tuple[Any, ...]]) -> Any:
    """(key, value, topic, partition, offset, timestamp_ms) as records."""
    return spark.createDataFrame(
        [(k, v, t, p, o, ts(ms), 0) for k, v, t, p, o, ms in rows], KAFKA_SCHEMA
    )
