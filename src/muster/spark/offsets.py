"""Driver side: which topic-partitions the subscription covers and which
concrete offsets its start / end specifications mean, asked of the broker
with muster's blocking Admin.

Offsets travel as Spark's Kafka source writes them in its checkpoint:
{"topic": {"partition": offset}} with string partition keys (JSON object keys
are strings; integer keys would silently come back as strings after a restart
and no longer compare equal).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from muster.client import Admin
from muster.client.types import TopicPartition
from muster.spark.options import EARLIEST, LATEST, OffsetSpec, PartitionOffsets, SourceOptions

Offsets = dict[TopicPartition, int]


def to_json(offsets: Mapping[TopicPartition, int]) -> PartitionOffsets:
    out: PartitionOffsets = {}
    for (topic, partition), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = int(offset)
    return out


def from_json(data: Mapping[str, Mapping[str, int]]) -> Offsets:
    return {TopicPartition(t, int(p)): int(o) for t, ps in data.items() for p, o in ps.items()}


class OffsetResolver:
    """Talks to the broker for the driver; connects on first use (the reader
    holding it is pickled before any call) and keeps the connection."""

    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts
        self._admin: Admin | None = None

    def __getstate__(self) -> dict[str, object]:
        return {"opts": self.opts, "_admin": None}

    @property
    def admin(self) -> Admin:
        if self._admin is None:
            self._admin = Admin(
                {
                    "bootstrap.servers": self.opts.bootstrap,
                    "client.id": "muster-spark",
                    "request.timeout.ms": int(self.opts.request_timeout_s * 1000),
                    **dict(self.opts.security),
                }
            )
        return self._admin

    def close(self) -> None:
        if self._admin is not None:
            admin, self._admin = self._admin, None
            admin.close()

    def partitions(self) -> list[TopicPartition]:
        """The subscription's partitions as the broker knows them now."""
        if self.opts.strategy == "assign":
            return [TopicPartition(t, p) for t, p in self.opts.assign]
        topics = self.admin.list_topics()
        return sorted(
            TopicPartition(t, p)
            for t, count in topics.items()
            if self.opts.matches(t)
            for p in range(count)
        )

    def list_offsets(self, wanted: Mapping[TopicPartition, int]) -> Offsets:
        """Asked with the source's isolation level, as Spark's Kafka source asks
        with its consumer's: with read_committed, "latest" is the last stable
        offset, so no range reaches into an open transaction."""
        if not wanted:
            return {}
        found = self.admin.list_offsets(wanted, self.opts.isolation_level)
        return {TopicPartition(*tp): int(o) for tp, o in found.items()}

    def earliest(self, tps: Iterable[TopicPartition]) -> Offsets:
        return self.list_offsets(dict.fromkeys(tps, EARLIEST))

    def latest(self, tps: Iterable[TopicPartition]) -> Offsets:
        return self.list_offsets(dict.fromkeys(tps, LATEST))

    def resolve(self, spec: OffsetSpec, tps: list[TopicPartition], starting: bool) -> Offsets:
        """Concrete offsets for `spec` on `tps`."""
        if spec.kind == "earliest":
            return self.earliest(tps)
        if spec.kind == "latest":
            return self.latest(tps)
        if spec.kind == "offsets":
            given = from_json(spec.offsets)
            if set(given) != set(tps):
                which = "startingOffsets" if starting else "endingOffsets"
                raise ValueError(
                    f"If {which} contains specific offsets, you must specify all "
                    "TopicPartitions.\nUse -1 for latest, -2 for earliest.\n"
                    f"Specified: {sorted(given)} Assigned: {sorted(tps)}"
                )
            symbolic = {tp: o for tp, o in given.items() if o in (EARLIEST, LATEST)}
            return {**given, **self.list_offsets(symbolic)}
        if spec.kind == "timestamp":
            stamps = dict.fromkeys(tps, spec.timestamp)
        else:
            given = from_json(spec.offsets)
            missing = set(tps) - set(given)
            if missing:
                raise ValueError(
                    f"No timestamp given in the offsets-by-timestamp option for {sorted(missing)}"
                )
            stamps = {tp: given[tp] for tp in tps}
        found = self.list_offsets(stamps)
        none = [tp for tp, o in found.items() if o < 0]
        if none:
            if starting and self.opts.timestamp_strategy == "error":
                raise ValueError(
                    f"No offset matched the timestamp for {sorted(none)} "
                    "(startingOffsetsByTimestampStrategy=error)"
                )
            found.update(self.latest(none))
        return found


def rate_limit(start: Offsets, latest: Offsets, limit: int) -> Offsets:
    """Spread `limit` offsets over the partitions in proportion to what each
    has available, as Spark's Kafka source does for maxOffsetsPerTrigger."""
    sizes = {tp: max(0, end - start.get(tp, end)) for tp, end in latest.items()}
    total = sum(sizes.values())
    if total <= limit:
        return dict(latest)
    out: Offsets = {}
    for tp, end in latest.items():
        begin = start.get(tp, end)
        share = limit * (sizes[tp] / total)
        step = math.ceil(share) if share < 1 else math.floor(share)
        out[tp] = min(end, begin + step)
    return out


# [start, end) of one topic-partition: what one Spark input partition reads.
Span = tuple[TopicPartition, int, int]


def split_ranges(
    spans: list[Span], min_partitions: int | None, max_records: int | None
) -> list[Span]:
    """Spark's KafkaOffsetRangeCalculator: cut each range into the fewest even
    pieces of at most `max_records` offsets; then, if that makes fewer pieces than
    `min_partitions`, cut the large ones in proportion to their size. Pieces keep
    their order, so a topic-partition's records are read in offset order."""
    spans = [s for s in spans if s[2] > s[1]]
    if max_records:
        spans = [piece for s in spans for piece in _divide(s, -(-(s[2] - s[1]) // max_records))]
    if min_partitions and len(spans) < min_partitions:
        spans = _spread(spans, min_partitions)
    return spans


def _divide(span: Span, parts: int) -> list[Span]:
    """`parts` consecutive pieces differing in size by at most one (the later
    ones take the remainder, as Spark's), empty ones left out."""
    tp, begin, end = span
    out: list[Span] = []
    remaining = end - begin
    for i in range(parts):
        size = remaining // (parts - i)
        remaining -= size
        if size:
            out.append((tp, begin, begin + size))
        begin += size
    return out


def _spread(spans: list[Span], min_partitions: int) -> list[Span]:
    total = sum(u - b for _tp, b, u in spans)
    whole = [_part_count(u - b, total, min_partitions) == 1 for _tp, b, u in spans]
    # Ranges too small to cut stay whole and are left out of the proportion the
    # others share, so the others get all the remaining partitions.
    rest = total - sum(u - b for (_tp, b, u), w in zip(spans, whole, strict=True) if w)
    rest_partitions = max(min_partitions - sum(whole), 1)
    out: list[Span] = []
    for s, w in zip(spans, whole, strict=True):
        out.extend([s] if w else _divide(s, _part_count(s[2] - s[1], rest, rest_partitions)))
    return out


def _part_count(size: int, total: int, partitions: int) -> int:
    # Java's Math.round: half up, not Python's round-half-even
    return max(math.floor(size / total * partitions + 0.5), 1)
