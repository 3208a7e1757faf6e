"""The consumer's fetch manager as a pure state machine: positions, offset
resets, pipelined fetches and the record buffer.

`poll(now_ms, leader_for) -> (requests, wake_at)` asks for what the
partitions need: the committed offset (to="group"), a ListOffsets reset
(auto.offset.reset or seek_to_beginning/end), a Fetch per leader (at most one
in flight per broker; a partition whose records the app is still draining is
fetched only from the end of its buffered answer when the broker reported
more data behind it (a prefetch, up to PREFETCH answers buffered), and then
the fetch does not long-poll so no partition's next fetch is stuck behind it)
and a metadata refresh when a leader is unknown or moved.
The driver answers with `on_response` / `on_failure` (or, for a Fetch,
`accept`: buffered raw, so the driver can send the next fetch at once and
leave the decoding to `take_records()`, which hands out up to
`max.poll.records` and advances positions). Errors the app must see
(offset out of range with no reset policy, unexpected partition errors,
corrupt batches) collect in `errors`; the driver raises them from `poll`.

With `read_committed`, Fetch and ListOffsets ask for isolation level 1, as
Kafka's Java consumer: answers end at the last stable offset (LSO), the
aborted transactions an answer lists travel with its raw bytes to the
decoder, which drops their records, and the LSO instead of the high
watermark bounds prefetching and the lag.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from muster.client.core.decode import Aborted, decode_records, scan_batches
from muster.client.core.membership import Request
from muster.client.errors import KafkaError, OffsetError, ProtocolError, error_for
from muster.client.types import ConsumerRecord, TopicPartition

FETCH = 1
LIST_OFFSETS = 2
EARLIEST = -2
LATEST = -1
OFFSET_OUT_OF_RANGE = 1
PREFETCH = 2  # answers buffered per partition before its prefetching stops
REFRESH_CODES = frozenset({3, 5, 6, 74, 75, 100})  # unknown topic, leader moved, epochs

LeaderFor = Callable[[str, int], "int | None"]


@dataclass
class PartitionState:
    position: int | None = None
    reset: int | None = None  # EARLIEST/LATEST when a reset is pending
    paused: bool = False
    high_watermark: int = -1
    last_stable_offset: int = -1


@dataclass(slots=True, eq=False)
class Completed:
    """One partition's part of a Fetch answer: its raw record batches until
    they are decoded into records."""

    tp: TopicPartition
    fetch_offset: int
    data: bytes
    next_offset: int
    records: list[ConsumerRecord] | None = None
    index: int = 0
    aborted: list[Aborted] | None = None  # read_committed: the answer's aborted transactions


class FetchManager:
    def __init__(
        self,
        *,
        default_reset: int | None,
        use_committed: bool,
        max_poll_records: int = 500,
        fetch_max_wait_ms: int = 500,
        fetch_min_bytes: int = 1,
        fetch_max_bytes: int = 52_428_800,
        partition_max_bytes: int = 1_048_576,
        retry_backoff_ms: int = 100,
        read_committed: bool = False,
    ) -> None:
        self.default_reset = default_reset
        self.read_committed = read_committed
        self.isolation_level = 1 if read_committed else 0
        self.use_committed = use_committed
        self.max_poll_records = max_poll_records
        self.fetch_max_wait_ms = fetch_max_wait_ms
        self.fetch_min_bytes = fetch_min_bytes
        self.fetch_max_bytes = fetch_max_bytes
        self.partition_max_bytes = partition_max_bytes
        self.retry_backoff_ms = retry_backoff_ms
        self.parts: dict[TopicPartition, PartitionState] = {}
        self.buffer: deque[Completed] = deque()
        self.errors: deque[KafkaError] = deque()
        self._fetching: dict[int, set[TopicPartition]] = {}
        self._resolving: set[TopicPartition] = set()
        self._backoff_until: dict[Any, int] = {}
        self._need_metadata = False
        self._metadata_in_flight = False

    # ------------------------------------------------------------ app inputs

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Exactly these partitions (positions of kept ones survive)."""
        self.parts = {tp: self.parts.get(tp, PartitionState()) for tp in partitions}
        self.buffer = deque(c for c in self.buffer if c.tp in self.parts)

    def add(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self.parts.setdefault(tp, PartitionState())

    def remove(self, partitions: Iterable[TopicPartition]) -> None:
        gone = set(partitions)
        for tp in gone:
            self.parts.pop(tp, None)
        self._drop_buffered(gone)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        part = self._part(tp)
        if offset in (EARLIEST, LATEST):
            part.position, part.reset = None, offset
        else:
            part.position, part.reset = int(offset), None
        self._drop_buffered({tp})

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        tps = set(partitions)
        for tp in tps:
            self._part(tp).paused = True
        self._drop_buffered(tps)

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self._part(tp).paused = False

    def position(self, tp: TopicPartition) -> int | None:
        return self._part(tp).position

    def end_offset(self, tp: TopicPartition) -> int | None:
        """Where the records `tp` may hand out end, as the last Fetch answer
        said: the last stable offset with read_committed, else the high
        watermark (None before any answer)."""
        part = self._part(tp)
        end = part.high_watermark
        if self.read_committed and part.last_stable_offset >= 0:
            end = part.last_stable_offset
        return end if end >= 0 else None

    def lag(self, tp: TopicPartition) -> int | None:
        """Java's currentLag: end_offset - position, None while either is unknown."""
        end, position = self.end_offset(tp), self.position(tp)
        return None if end is None or position is None else max(0, end - position)

    def consumed(self) -> dict[tuple[str, int], int]:
        return {tp: p.position for tp, p in self.parts.items() if p.position is not None}

    def _part(self, tp: TopicPartition) -> PartitionState:
        part = self.parts.get(tp)
        if part is None:
            raise KafkaError(f"{tp} is not assigned")
        return part

    def _drop_buffered(self, tps: set[TopicPartition]) -> None:
        self.buffer = deque(c for c in self.buffer if c.tp not in tps)

    @property
    def in_flight(self) -> bool:
        return bool(self._fetching)

    # ------------------------------------------------------------ the step

    def poll(self, now_ms: int, leader_for: LeaderFor) -> tuple[list[Request], int | None]:
        out: list[Request] = []
        self._positions_step(now_ms, leader_for, out)
        self._fetch_step(now_ms, leader_for, out)
        if self._need_metadata and not self._metadata_in_flight:
            if now_ms >= self._backoff_until.get("metadata", 0):
                self._metadata_in_flight = True
                topics = sorted({tp.topic for tp in self.parts})
                out.append(Request("metadata", -1, {"topics": topics}, "metadata"))
        pending = [t for t in self._backoff_until.values() if t > now_ms]
        return out, (min(pending) if pending else None)

    def _positions_step(self, now_ms: int, leader_for: LeaderFor, out: list[Request]) -> None:
        need_committed: list[TopicPartition] = []
        resets: dict[int, dict[TopicPartition, int]] = {}
        for tp, part in self.parts.items():
            if part.position is not None or tp in self._resolving:
                continue
            if now_ms < self._backoff_until.get(tp, 0):
                continue
            if part.reset is None and self.use_committed:
                need_committed.append(tp)
                continue
            reset = part.reset if part.reset is not None else self.default_reset
            if reset is None:
                self.errors.append(
                    OffsetError(f"no committed offset for {tp} and auto.offset.reset=none")
                )
                self._backoff_until[tp] = now_ms + 1_000_000_000  # asked once
                continue
            leader = leader_for(*tp)
            if leader is None:
                self._need_metadata = True
                continue
            resets.setdefault(leader, {})[tp] = reset
        if need_committed:
            self._resolving.update(need_committed)
            out.append(Request("committed", -1, {}, "group", tuple(need_committed)))
        for leader, wanted in resets.items():
            self._resolving.update(wanted)
            topics: dict[str, list[dict[str, Any]]] = {}
            for tp, ts in wanted.items():
                topics.setdefault(tp.topic, []).append(
                    {"partition_index": tp.partition, "timestamp": ts, "current_leader_epoch": -1}
                )
            body = {
                "replica_id": -1,
                "isolation_level": self.isolation_level,
                "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
            }
            out.append(Request("list_offsets", LIST_OFFSETS, body, "node", wanted, leader))

    def _fetch_step(self, now_ms: int, leader_for: LeaderFor, out: list[Request]) -> None:
        buffered: dict[TopicPartition, list[Completed]] = {}
        for c in self.buffer:
            buffered.setdefault(c.tp, []).append(c)
        in_flight = set().union(*self._fetching.values()) if self._fetching else set()
        by_leader: dict[int, dict[TopicPartition, int]] = {}
        draining: set[int] = set()  # leaders with partitions the app still drains
        for tp, part in self.parts.items():
            if part.paused:
                continue
            leader = leader_for(*tp)
            chain = buffered.get(tp)
            if chain is not None:
                if leader is not None:
                    draining.add(leader)
                # Prefetch: while the app drains one answer, fetch what follows
                # it if the broker has said there is more (below the high
                # watermark, or with read_committed the last stable offset; no
                # long poll, so never an empty spin at the end).
                end = chain[-1].next_offset
                if len(chain) >= PREFETCH or end >= self._fetchable(part) or tp in in_flight:
                    continue
                position = end
            elif part.position is None or tp in in_flight:
                continue
            else:
                position = part.position
            if leader is None:
                self._need_metadata = True
                continue
            if leader in self._fetching or now_ms < self._backoff_until.get(leader, 0):
                continue
            by_leader.setdefault(leader, {})[tp] = position
        for leader, positions in by_leader.items():
            self._fetching[leader] = set(positions)
            topics: dict[str, list[dict[str, Any]]] = {}
            for tp, offset in positions.items():
                topics.setdefault(tp.topic, []).append(
                    {
                        "partition": tp.partition,
                        "current_leader_epoch": -1,
                        "fetch_offset": offset,
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": self.partition_max_bytes,
                    }
                )
            body = {
                "replica_id": -1,
                "max_wait": 0 if leader in draining else self.fetch_max_wait_ms,
                "min_bytes": self.fetch_min_bytes,
                "max_bytes": self.fetch_max_bytes,
                "isolation_level": self.isolation_level,
                "session_id": 0,
                "session_epoch": -1,  # no fetch session: every fetch is full
                "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()],
                "forgotten_topics_data": [],
                "rack_id": "",
            }
            out.append(Request("fetch", FETCH, body, "node", positions, leader))

    # ------------------------------------------------------------ answers

    def on_response(self, request: Request, response: Any, now_ms: int) -> None:
        """An answer to one of our requests; a Fetch answer is decoded at once."""
        self.accept(request, response, now_ms)
        if request.kind == "fetch":
            self.decode()

    def accept(self, request: Request, response: Any, now_ms: int) -> None:
        """`on_response` without decoding: a Fetch answer is buffered raw, only
        its batch headers read (enough to know where the next fetch starts),
        so a driver can send the next fetches (`poll`) before any record is
        built, and the broker prepares them meanwhile."""
        getattr(self, f"_on_{request.kind}")(request, response, now_ms)

    def decode(self) -> None:
        """Turns every raw buffered answer into records now (`take_records`
        decodes the ones it reaches by itself)."""
        corrupt: set[TopicPartition] = set()
        for c in list(self.buffer):
            if c.records is None and c.tp not in corrupt and not self._decode(c):
                corrupt.add(c.tp)

    def _decode(self, c: Completed) -> bool:
        """Decodes one buffered answer. A corrupt one goes to `errors` and is
        dropped with what is buffered behind it, so its partition stays at
        that offset (the next fetch asks for it again)."""
        try:
            c.records = decode_records(c.tp, c.data, c.fetch_offset, c.aborted)[0]
        except ProtocolError as exc:
            self.errors.append(exc)
            self._drop_buffered({c.tp})
            return False
        c.data = b""  # the records hold copies: let the answer go
        return True

    def on_failure(self, request: Request, error: KafkaError, now_ms: int) -> None:
        backoff = now_ms + self.retry_backoff_ms
        if request.kind == "fetch":
            self._fetching.pop(request.node, None)
            self._backoff_until[request.node] = backoff
            self._need_metadata = True
        elif request.kind in ("list_offsets", "committed"):
            tps = list(request.tag)
            self._resolving.difference_update(tps)
            if error.retriable:
                for tp in tps:
                    self._backoff_until[tp] = backoff
                self._need_metadata = self._need_metadata or request.kind == "list_offsets"
            else:
                self.errors.append(error)
        elif request.kind == "metadata":
            self._metadata_in_flight = False
            self._backoff_until["metadata"] = backoff

    def _on_metadata(self, request: Request, response: Any, now_ms: int) -> None:
        self._metadata_in_flight = False
        self._need_metadata = False
        self._backoff_until["metadata"] = now_ms + self.retry_backoff_ms

    def _on_committed(
        self, request: Request, committed: Mapping[TopicPartition, int | None], now_ms: int
    ) -> None:
        self._resolving.difference_update(request.tag)
        for tp in request.tag:
            part = self.parts.get(tp)
            if part is None or part.position is not None:
                continue
            offset = committed.get(tp)
            if offset is not None and offset >= 0:
                part.position = offset
            elif self.default_reset is not None:
                part.reset = self.default_reset
            else:
                self.errors.append(
                    OffsetError(f"no committed offset for {tp} and auto.offset.reset=none")
                )

    def _on_list_offsets(self, request: Request, response: Any, now_ms: int) -> None:
        wanted: dict[TopicPartition, int] = request.tag
        self._resolving.difference_update(wanted)
        for t in response.topics:
            for p in t.partitions:
                tp = TopicPartition(t.name, int(p.partition_index))
                code = int(p.error_code)
                if code != 0:
                    error = error_for(code, f"ListOffsets {tp.topic}-{tp.partition}")
                    if error.retriable:
                        self._backoff_until[tp] = now_ms + self.retry_backoff_ms
                        self._need_metadata = True
                    else:
                        self.errors.append(error)
                    continue
                part = self.parts.get(tp)
                if part is None or part.position is not None:
                    continue
                if part.reset in (None, wanted.get(tp)):
                    part.position, part.reset = int(p.offset), None

    def _on_fetch(self, request: Request, response: Any, now_ms: int) -> None:
        positions: dict[TopicPartition, int] = request.tag
        self._fetching.pop(request.node, None)
        if int(response.error_code) != 0:
            error = error_for(int(response.error_code), "Fetch")
            if not error.retriable:
                self.errors.append(error)
            self._backoff_until[request.node] = now_ms + self.retry_backoff_ms
            return
        for t in response.responses:
            for p in t.partitions:
                tp = TopicPartition(t.topic, int(p.partition_index))
                fetch_offset = positions.get(tp)
                part = self.parts.get(tp)
                if fetch_offset is None or part is None:
                    continue  # revoked meanwhile
                if fetch_offset != self._next_fetch_offset(tp, part):
                    continue  # seeked, paused or revoked meanwhile
                code = int(p.error_code)
                if code == OFFSET_OUT_OF_RANGE:
                    if self.default_reset is None:
                        self.errors.append(
                            OffsetError(f"offset {fetch_offset} out of range for {tp}", code=code)
                        )
                    else:
                        part.position, part.reset = None, self.default_reset
                    continue
                if code in REFRESH_CODES:
                    self._need_metadata = True
                    continue
                if code != 0:
                    self.errors.append(error_for(code, f"Fetch {tp.topic}-{tp.partition}"))
                    continue
                part.high_watermark = int(p.high_watermark)
                part.last_stable_offset = int(getattr(p, "last_stable_offset", -1))
                data = p.records
                if not data:
                    continue
                try:
                    next_offset = scan_batches(data, fetch_offset)
                except ProtocolError as exc:
                    self.errors.append(exc)
                    continue
                if next_offset > fetch_offset:
                    completed = Completed(tp, fetch_offset, data, next_offset)
                    if self.read_committed and p.aborted_transactions:
                        completed.aborted = [
                            (int(a.producer_id), int(a.first_offset))
                            for a in p.aborted_transactions
                        ]
                    self.buffer.append(completed)

    def _fetchable(self, part: PartitionState) -> int:
        """The end of what a fetch can return now: the last stable offset with
        read_committed (an open transaction holds it back), the high watermark
        without."""
        if self.read_committed and part.last_stable_offset >= 0:
            return part.last_stable_offset
        return part.high_watermark

    def _next_fetch_offset(self, tp: TopicPartition, part: PartitionState) -> int | None:
        """Where the next answer for `tp` must start: after its last buffered
        answer (a prefetch), else at its position."""
        for c in reversed(self.buffer):
            if c.tp == tp:
                return c.next_offset
        return part.position

    # ------------------------------------------------------------ records out

    def take_records(self) -> list[ConsumerRecord]:
        out: list[ConsumerRecord] = []
        limit = self.max_poll_records
        while self.buffer and len(out) < limit:
            completed = self.buffer[0]
            part = self.parts.get(completed.tp)
            if part is None or part.paused or part.position != completed.fetch_offset:
                self.buffer.popleft()  # stale: seeked, paused or revoked since
                continue
            if completed.records is None and not self._decode(completed):
                continue
            records = completed.records
            assert records is not None
            take = records[completed.index : completed.index + limit - len(out)]
            out.extend(take)
            completed.index += len(take)
            if completed.index >= len(records):
                self.buffer.popleft()
                end = completed.next_offset
                if take:
                    end = max(end, take[-1].offset + 1)
                part.position = end
            else:
                part.position = take[-1].offset + 1
                completed.fetch_offset = part.position
        return out
