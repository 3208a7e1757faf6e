"""read_committed in the consumer's core, no sockets: the aborted-transaction
filter of the decoder (Kafka's Java consumer's rule) on hand-built batches,
and the fetch manager asking for isolation level 1 and bounding prefetch and
lag by the last stable offset."""

from __future__ import annotations

from typing import Any

import pytest

from muster.client.config import READ_COMMITTED, READ_UNCOMMITTED, isolation_level
from muster.client.consumer import AIOConsumer
from muster.client.core import decode
from muster.client.core.decode import committed_batches, decode_records
from muster.client.core.fetcher import EARLIEST, LATEST, FetchManager
from muster.client.errors import ConfigError, ProtocolError
from muster.client.types import TopicPartition
from muster.protocol.codec import build, response_schema
from muster.records import compression
from muster.records.batch import CONTROL_MASK, Record, build_batch

TP = TopicPartition("t", 0)
ABORT_KEY, COMMIT_KEY = b"\x00\x00\x00\x00", b"\x00\x00\x00\x01"
MARKER_VALUE = b"\x00\x00\x00\x00\x00\x00"


def data(base: int, n: int, pid: int = -1, txn: bool = True, codec: int = 0) -> bytes:
    """n records at base.. of producer `pid` (transactional unless txn=False)."""
    recs = [Record(None, b"v%d" % (base + i)) for i in range(n)]
    return build_batch(
        recs,
        base_offset=base,
        producer_id=pid,
        producer_epoch=0 if pid >= 0 else -1,
        base_sequence=0 if pid >= 0 else -1,
        transactional=txn and pid >= 0,
        compression_type=codec,
    )


def marker(offset: int, pid: int, commit: bool, codec: int = 0) -> bytes:
    key = COMMIT_KEY if commit else ABORT_KEY
    return build_batch(
        [Record(key, MARKER_VALUE)],
        base_offset=offset,
        producer_id=pid,
        producer_epoch=0,
        transactional=True,
        control=True,
        compression_type=codec,
    )


def log(codec: int = 0) -> bytes:
    """Producer 7's transaction 0..1,4 aborted (marker 5), producer 8's 2..3
    committed in between (marker 10), producer 7's next transaction 6..7
    committed (marker 8), plain records at 9 and 11."""
    return b"".join(
        [
            data(0, 2, pid=7, codec=codec),
            data(2, 2, pid=8, codec=codec),
            data(4, 1, pid=7, codec=codec),
            marker(5, 7, commit=False, codec=codec),
            data(6, 2, pid=7, codec=codec),
            marker(8, 7, commit=True, codec=codec),
            data(9, 1, codec=codec),
            marker(10, 8, commit=True, codec=codec),
            data(11, 1, codec=codec),
        ]
    )


def offsets(records: list[Any]) -> list[int]:
    return [r.offset for r in records]


@pytest.mark.parametrize("codec", [compression.NONE, compression.GZIP, compression.ZSTD])
def test_aborted_records_are_dropped_and_later_transactions_of_the_producer_read(codec):
    records, next_offset = decode_records(TP, log(codec), 0, [(7, 0)])
    # the ABORT marker at 5 takes producer 7 out of the aborted set: 6, 7 are read
    assert offsets(records) == [2, 3, 6, 7, 9, 11]
    assert [r.value for r in records][:2] == [b"v2", b"v3"]
    assert next_offset == 12  # past the markers and the aborted batches
    # read_uncommitted (or no aborted transaction listed): every data record
    assert offsets(decode_records(TP, log(codec), 0)[0]) == [0, 1, 2, 3, 4, 6, 7, 9, 11]
    assert offsets(decode_records(TP, log(codec), 0, [])[0]) == [0, 1, 2, 3, 4, 6, 7, 9, 11]


def test_an_aborted_transaction_begun_before_the_fetch_offset_is_still_dropped():
    raw = log()
    tail = raw[raw.index(data(4, 1, pid=7)) :]  # an answer from offset 4 on
    assert offsets(decode_records(TP, tail, 4, [(7, 0)])[0]) == [6, 7, 9, 11]
    # a fetch offset inside the answer's first batch: only records past it
    assert offsets(decode_records(TP, raw, 3, [(7, 0)])[0]) == [3, 6, 7, 9, 11]


def test_only_the_aborted_transaction_of_a_producer_is_dropped():
    # Two aborted transactions listed: producer 8's (2..3) and producer 7's (6..7).
    raw = b"".join(
        [
            data(0, 2, pid=7),
            marker(2, 7, commit=True),
            data(3, 2, pid=8),
            data(5, 1, pid=7),
            marker(6, 8, commit=False),
            data(7, 1, pid=8),  # producer 8 again, after its abort marker
            marker(8, 7, commit=False),
            marker(9, 8, commit=True),
        ]
    )
    records, next_offset = decode_records(TP, raw, 0, [(8, 3), (7, 5)])
    assert offsets(records) == [0, 1, 7] and next_offset == 10


def test_non_transactional_batches_of_an_aborted_producer_are_kept():
    # Kafka drops only transactional batches (an idempotent producer's plain
    # batches carry a producer id too).
    raw = data(0, 2, pid=7) + data(2, 2, pid=7, txn=False) + marker(4, 7, commit=False)
    assert offsets(decode_records(TP, raw, 0, [(7, 0)])[0]) == [2, 3]


def test_the_filter_marks_aborted_batches_as_control_and_keeps_the_rest():
    headers = list(committed_batches(log(), [(7, 0)]))
    assert [h.base_offset for h in headers] == [0, 2, 4, 5, 6, 8, 9, 10, 11]
    control = [h.base_offset for h in headers if h.attributes & CONTROL_MASK]
    assert control == [0, 4, 5, 8, 10]


def test_a_control_record_without_a_type_is_corrupt():
    raw = data(0, 1, pid=7) + build_batch(
        [Record(b"\x00", b"")], base_offset=1, producer_id=7, transactional=True, control=True
    )
    with pytest.raises(ProtocolError, match="corrupt record batch"):
        decode_records(TP, raw, 0, [(7, 0)])


def test_no_aborted_transactions_means_no_filter(monkeypatch):
    """The hot path stays as it was: the filter only runs for a non-empty list."""

    def fail(*_a: Any) -> Any:
        raise AssertionError("committed_batches called without aborted transactions")

    monkeypatch.setattr(decode, "committed_batches", fail)
    for aborted in (None, []):
        assert offsets(decode_records(TP, log(), 0, aborted)[0]) == [0, 1, 2, 3, 4, 6, 7, 9, 11]


# ---- the fetch manager


def fetch_response(fields: dict[str, Any]) -> Any:
    return build(
        response_schema(1, 12),
        {"responses": [{"topic": TP.topic, "partitions": [{"partition_index": 0, **fields}]}]},
    )


def manager(read_committed: bool, **kw: Any) -> FetchManager:
    f = FetchManager(
        default_reset=EARLIEST, use_committed=False, read_committed=read_committed, **kw
    )
    f.assign([TP])
    return f


def leaders(topic: str, partition: int) -> int:
    return 1


def only(requests: list[Any], kind: str) -> Any:
    matching = [r for r in requests if r.kind == kind]
    assert len(matching) == 1, requests
    return matching[0]


@pytest.mark.parametrize("read_committed", [True, False])
def test_requests_carry_the_isolation_level(read_committed):
    f = manager(read_committed)
    f.seek(TP, LATEST)
    lo = only(f.poll(0, leaders)[0], "list_offsets")
    assert lo.body["isolation_level"] == int(read_committed)
    f.seek(TP, 0)
    fetch = only(f.poll(0, leaders)[0], "fetch")
    assert fetch.body["isolation_level"] == int(read_committed)


def test_aborted_transactions_of_an_answer_reach_the_decoder():
    f = manager(True)
    f.seek(TP, 0)
    fetch = only(f.poll(0, leaders)[0], "fetch")
    answer = {
        "records": log(),
        "high_watermark": 12,
        "last_stable_offset": 12,
        "aborted_transactions": [{"producer_id": 7, "first_offset": 0}],
    }
    f.on_response(fetch, fetch_response(answer), 0)
    assert offsets(f.take_records()) == [2, 3, 6, 7, 9, 11]
    assert f.position(TP) == 12 and f.lag(TP) == 0
    # the same answer to a read_uncommitted consumer: the list is not used
    g = manager(False)
    g.seek(TP, 0)
    g.on_response(only(g.poll(0, leaders)[0], "fetch"), fetch_response(answer), 0)
    assert offsets(g.take_records()) == [0, 1, 2, 3, 4, 6, 7, 9, 11]


def test_an_answer_of_only_aborted_batches_and_markers_moves_the_position():
    f = manager(True)
    f.seek(TP, 0)
    fetch = only(f.poll(0, leaders)[0], "fetch")
    raw = data(0, 3, pid=7) + marker(3, 7, commit=False)
    answer = {
        "records": raw,
        "high_watermark": 4,
        "last_stable_offset": 4,
        "aborted_transactions": [{"producer_id": 7, "first_offset": 0}],
    }
    f.on_response(fetch, fetch_response(answer), 0)
    assert f.take_records() == []
    assert f.position(TP) == 4
    assert (
        only(f.poll(0, leaders)[0], "fetch").body["topics"][0]["partitions"][0]["fetch_offset"] == 4
    )


@pytest.mark.parametrize("read_committed", [True, False])
def test_prefetch_and_lag_stop_at_the_last_stable_offset(read_committed):
    # An open transaction at 4: the broker's high watermark is 10, its LSO 4.
    f = manager(read_committed, max_poll_records=2)
    f.seek(TP, 0)
    fetch = only(f.poll(0, leaders)[0], "fetch")
    answer = {"records": data(0, 4), "high_watermark": 10, "last_stable_offset": 4}
    f.on_response(fetch, fetch_response(answer), 0)
    assert offsets(f.take_records()) == [0, 1]  # two still buffered
    prefetch = [r for r in f.poll(0, leaders)[0] if r.kind == "fetch"]
    # read_committed: nothing past 4 can come back yet, so no prefetch (it
    # would not long-poll: an empty spin); read_uncommitted: there is more
    assert bool(prefetch) is not read_committed
    assert f.lag(TP) == (2 if read_committed else 8)
    assert f.end_offset(TP) == (4 if read_committed else 10)


def test_isolation_level_option():
    assert isolation_level("read_committed") == READ_COMMITTED
    assert isolation_level("READ_UNCOMMITTED") == READ_UNCOMMITTED
    assert isolation_level(1) == READ_COMMITTED
    with pytest.raises(ConfigError, match="read_committed, read_uncommitted"):
        isolation_level("committed")


def test_consumer_default_is_read_committed_as_librdkafka():
    conf = {"bootstrap.servers": "127.0.0.1:1"}
    assert AIOConsumer(conf).fetcher.read_committed is True
    assert AIOConsumer({**conf, "isolation.level": "read_uncommitted"}).isolation_level == 0
    with pytest.raises(ConfigError, match=r"isolation\.level"):
        AIOConsumer({**conf, "isolation.level": "snapshot"})
