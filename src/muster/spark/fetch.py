"""Executor side: read one offset range of one topic-partition as Arrow batches.

Runs inside `read()` in a Spark Python worker, so it owns a private event loop
and a `Cluster` of muster's client for the life of the iterator (readers are
pickled: nothing here exists before `read()` starts). Each Fetch answer's
record bytes are decoded straight into one Arrow batch; the next Fetch is sent
before the current answer is decoded, so the broker works while we decode.

With kafka.isolation.level=read_committed the Fetch asks for isolation level
1: the broker answers only below the last stable offset and lists the aborted
transactions overlapping the answer, whose records the decoder drops.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from muster.client.errors import KafkaError, KafkaTimeoutError, error_for
from muster.client.net import Cluster
from muster.client.security import ClientSecurity
from muster.client.types import TopicPartition
from muster.spark.decode import Columns, decode_into

FETCH = 1
OFFSET_OUT_OF_RANGE = 1
# unknown topic/partition, leader not available, not leader, fenced/unknown epoch
_REFRESH = frozenset({3, 5, 6, 74, 75, 100})
_RETRIES = 20
_BACKOFF_S = 0.1


class DataLossError(RuntimeError):
    """Offsets the query needs are gone (retention, deletion) and failOnDataLoss."""


@dataclass(frozen=True)
class FetchRange:
    bootstrap: str
    topic: str
    partition: int
    start: int
    end: int
    include_headers: bool
    fail_on_data_loss: bool
    max_bytes: int
    timeout_s: float
    isolation_level: int = 0  # 1: read_committed
    security: tuple[tuple[str, str], ...] = ()  # client TLS/SASL properties


def data_loss_message(what: str) -> str:
    return (
        f"{what}. Some data may have been lost because they are not available in Kafka "
        "any more; either the data was aged out by Kafka or the topic may have been deleted "
        "before all the data in the topic was processed. If you don't want your streaming "
        'query to fail on such cases, set the source option "failOnDataLoss" to "false".'
    )


class RangeReader:
    def __init__(self, r: FetchRange) -> None:
        self.r = r
        self.loop = asyncio.new_event_loop()
        security = ClientSecurity.from_conf(dict(r.security))
        self.cluster = Cluster(r.bootstrap, "muster-spark", r.timeout_s, security)

    def close(self) -> None:
        try:
            self.loop.run_until_complete(self.cluster.close())
        finally:
            self.loop.close()

    def _run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    async def _send(self, position: int) -> asyncio.Future[Any]:
        r = self.r
        leader = self.cluster.leader_for(r.topic, r.partition)
        if leader is None:
            await self.cluster.refresh_metadata([r.topic])
            leader = self.cluster.leader_for(r.topic, r.partition)
            if leader is None:
                raise error_for(3, f"no leader for {r.topic}-{r.partition}")
        conn = await self.cluster.connection(leader)
        body = {
            "replica_id": -1,
            "max_wait": 500,
            "min_bytes": 1,
            "max_bytes": r.max_bytes,
            "isolation_level": r.isolation_level,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic": r.topic,
                    "partitions": [
                        {
                            "partition": r.partition,
                            "current_leader_epoch": -1,
                            "fetch_offset": position,
                            "last_fetched_epoch": -1,
                            "log_start_offset": -1,
                            "partition_max_bytes": r.max_bytes,
                        }
                    ],
                }
            ],
            "forgotten_topics_data": [],
            "rack_id": "",
        }
        return conn.send_nowait(FETCH, body)

    async def _answer(self, future: asyncio.Future[Any]) -> Any:
        try:
            async with asyncio.timeout(self.r.timeout_s):
                response = await future
        except TimeoutError:
            raise KafkaTimeoutError(f"no Fetch answer in {self.r.timeout_s}s") from None
        if int(response.error_code) != 0:
            raise error_for(int(response.error_code), "Fetch")
        for t in response.responses:
            for p in t.partitions:
                if int(p.partition_index) == self.r.partition:
                    return p
        raise error_for(3, f"Fetch answer without {self.r.topic}-{self.r.partition}")

    def _earliest(self) -> int:
        tp = TopicPartition(self.r.topic, self.r.partition)
        return int(self._run(self.cluster.list_offsets({tp: -2}, self.r.isolation_level))[tp])

    def batches(self) -> Iterator[pa.RecordBatch]:
        r = self.r
        position = r.start
        deadline = time.monotonic() + r.timeout_s * 4
        retries = 0
        pending = self._run(self._send(position))
        while position < r.end:
            try:
                p = self._run(self._answer(pending))
            except KafkaError as exc:
                if not exc.retriable or retries >= _RETRIES:
                    raise
                retries += 1
                time.sleep(_BACKOFF_S)
                self._run(self.cluster.refresh_metadata([r.topic]))
                pending = self._run(self._send(position))
                continue
            code = int(p.error_code)
            if code == OFFSET_OUT_OF_RANGE:
                position = self._skip_lost(position)
                if position < r.end:
                    pending = self._run(self._send(position))
                continue
            if code in _REFRESH and retries < _RETRIES:
                retries += 1
                time.sleep(_BACKOFF_S)
                self._run(self.cluster.refresh_metadata([r.topic]))
                pending = self._run(self._send(position))
                continue
            if code != 0:
                raise error_for(code, f"Fetch {r.topic}-{r.partition}")
            retries = 0
            data = p.records or b""
            if type(data) is not bytes:
                data = bytes(data)
            cols = Columns(r.include_headers)
            aborted = None
            if r.isolation_level and p.aborted_transactions:
                aborted = [
                    (int(a.producer_id), int(a.first_offset)) for a in p.aborted_transactions
                ]
            next_position = decode_into(cols, data, position, r.end, aborted) if data else position
            if next_position > position:
                deadline = time.monotonic() + r.timeout_s * 4
                if next_position < r.end:  # overlap the next fetch with the Arrow build
                    pending = self._run(self._send(next_position))
                position = next_position
                if len(cols):
                    yield cols.to_arrow(r.topic, r.partition)
                continue
            position = self._no_progress(position, int(p.high_watermark), deadline)
            if position < r.end:
                pending = self._run(self._send(position))

    def _no_progress(self, position: int, high_watermark: int, deadline: float) -> int:
        """An answer without whole batches past `position`: the range's end is
        beyond what the log holds now (truncated, or records not yet visible)."""
        r = self.r
        if high_watermark <= position or time.monotonic() > deadline:
            what = (
                f"Cannot fetch offset {position} of {r.topic}-{r.partition}: "
                f"the log ends at {high_watermark}, the range at {r.end}"
            )
            if r.fail_on_data_loss:
                raise DataLossError(data_loss_message(what))
            return r.end
        return position

    def _skip_lost(self, position: int) -> int:
        r = self.r
        earliest = self._earliest()
        what = (
            f"Cannot fetch offset {position} of {r.topic}-{r.partition}: "
            f"the earliest available offset is {earliest}"
        )
        if r.fail_on_data_loss:
            raise DataLossError(data_loss_message(what))
        # below the log start: skip to it; past the log's end: nothing left to read
        return min(earliest, r.end) if earliest > position else r.end


def read_range(r: FetchRange) -> Iterator[pa.RecordBatch]:
    if r.start >= r.end:
        return
    reader = RangeReader(r)
    try:
        yield from reader.batches()
    finally:
        reader.close()
