"""The `muster` data source's readers: batch and micro-batch streaming.

Planning (which partitions, which offsets) runs on the driver with muster's
Admin; `read()` runs in executor Python workers and fetches one offset range
of one topic-partition (see fetch.py). Readers are pickled right after they
are built, so they hold options only and connect lazily.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)

from muster.spark.fetch import DataLossError, FetchRange, data_loss_message, read_range
from muster.spark.group import GroupCommitter
from muster.spark.offsets import (
    OffsetResolver,
    Offsets,
    Span,
    from_json,
    rate_limit,
    split_ranges,
    to_json,
)
from muster.spark.options import SourceOptions


class KafkaRange(InputPartition):
    """One Spark input partition: [start, end) of one topic-partition."""

    def __init__(self, fetch: FetchRange) -> None:
        super().__init__(fetch)
        self.fetch = fetch


def plan_ranges(opts: SourceOptions, start: Offsets, end: Offsets) -> list[KafkaRange]:
    """Input partitions for [start, end) per topic-partition, cut by
    maxRecordsPerPartition and minPartitions as Spark's source cuts them."""
    spans: list[Span] = []
    for tp, until in sorted(end.items()):
        begin = start[tp]
        if until < begin:
            what = f"Partition {tp.topic}-{tp.partition}'s offset went from {begin} to {until}"
            if opts.fail_on_data_loss:
                raise DataLossError(data_loss_message(what))
            continue
        spans.append((tp, begin, until))
    spans = split_ranges(spans, opts.min_partitions, opts.max_records_per_partition)
    return [
        KafkaRange(
            FetchRange(
                opts.bootstrap,
                tp.topic,
                tp.partition,
                b,
                u,
                opts.include_headers,
                opts.fail_on_data_loss,
                opts.fetch_max_bytes,
                opts.request_timeout_s,
                opts.isolation_level,
                opts.security,
            )
        )
        for tp, b, u in spans
    ]


def _now() -> float:
    return time.monotonic()


def _read(partition: InputPartition) -> Iterator[pa.RecordBatch]:
    assert isinstance(partition, KafkaRange)
    return read_range(partition.fetch)


class BatchReader(DataSourceReader):
    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts

    def partitions(self) -> Sequence[InputPartition]:
        resolver = OffsetResolver(self.opts)
        try:
            tps = resolver.partitions()
            start = resolver.resolve(self.opts.starting, tps, starting=True)
            end = resolver.resolve(self.opts.ending, tps, starting=False)
        finally:
            resolver.close()
        ranges = plan_ranges(self.opts, start, end)
        # Spark needs at least one partition; an empty range reads nothing.
        return ranges or [InputPartition(None)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, KafkaRange):
            return iter(())
        return _read(partition)


class StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets are Spark's Kafka checkpoint format, {"topic": {"0": 23}}.

    Partitions that appear later (new partitions, new topics matching the
    pattern) are absent from the batch's start and are read from their
    earliest offset, as Spark's Kafka source does.
    """

    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts
        self.resolver = OffsetResolver(opts)
        self.committer = GroupCommitter(opts.commit_to_group) if opts.commit_to_group else None
        self.target: Offsets | None = None  # Trigger.AvailableNow's end
        self.last_trigger: float | None = None  # when minOffsetsPerTrigger last let one run

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "committer": None}

    def initialOffset(self) -> dict[str, Any]:
        tps = self.resolver.partitions()
        return to_json(self.resolver.resolve(self.opts.starting, tps, starting=True))

    def getDefaultReadLimit(self) -> ReadLimit:
        # Spark's Kafka source combines both bounds in one limit; Python's limits do
        # not combine, so the maximum travels as the limit and the minimum is read
        # from the options. Only ReadAllAvailable (Trigger.Once) lifts both.
        if self.opts.max_offsets_per_trigger:
            return ReadMaxRows(self.opts.max_offsets_per_trigger)
        if self.opts.min_offsets_per_trigger:
            return ReadMinRows(self.opts.min_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        tps = self.resolver.partitions()
        self.target = self.resolver.latest(tps)

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        begin = from_json(start)
        self._commit_group(begin)
        if self.target is not None:
            latest = dict(self.target)
        else:
            latest = self.resolver.latest(self.resolver.partitions())
        new = [tp for tp in latest if tp not in begin]
        begin_all = {**self.resolver.earliest(new), **begin}
        if isinstance(limit, ReadAllAvailable):
            return to_json({**begin, **latest})
        if self._hold_back(begin_all, latest):
            return to_json(begin)  # the same offsets again: no batch this trigger
        if isinstance(limit, ReadMaxRows):
            latest = rate_limit(begin_all, latest, limit.max_rows)
        # partitions that vanished keep their place, so start and end cover the same keys
        return to_json({**begin, **latest})

    def _hold_back(self, start: Offsets, latest: Offsets) -> bool:
        """minOffsetsPerTrigger as Spark's source applies it: no batch while fewer
        offsets are new (over all partitions) and maxTriggerDelay has not passed
        since the last trigger it let through. The first trigger after a (re)start
        always goes through; Trigger.AvailableNow reads all it has, whatever the size."""
        minimum = self.opts.min_offsets_per_trigger
        if minimum is None or self.target is not None:
            return False
        now = _now()
        waited = self.last_trigger is None or (
            (now - self.last_trigger) * 1000 >= self.opts.max_trigger_delay_ms
        )
        new = sum(max(0, end - start.get(tp, end)) for tp, end in latest.items())
        if not waited and new < minimum:
            return True
        self.last_trigger = now
        return False

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        begin = from_json(start)
        until = from_json(end)
        new = [tp for tp in until if tp not in begin]
        begin = {**self.resolver.earliest(new), **begin}
        return plan_ranges(self.opts, begin, until)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(partition)

    def commit(self, end: dict[str, Any]) -> None:
        self._commit_group(from_json(end))

    def stop(self) -> None:
        self.resolver.close()

    def _commit_group(self, offsets: Offsets) -> None:
        if self.committer is not None and offsets:
            self.committer.commit(self.resolver.admin, offsets)
