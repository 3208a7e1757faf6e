"""`kafka.isolation.level` on a muster broker holding transactions written by
confluent-kafka's transactional producer: read_committed reads exactly the
committed (and plain) records and ends at the last stable offset,
read_uncommitted (Spark's default) reads the aborted ones too."""

from __future__ import annotations

from typing import Any

from muster.client.types import TopicPartition
from muster.spark.fetch import FetchRange, read_range
from muster.spark.offsets import OffsetResolver
from muster.spark.options import parse_source
from tests.spark.kafka import create_topic, read_sorted
from tests.support.transactions import Txn, plain_write, values


def _read(spark: Any, bootstrap: str, topic: str, **options: str) -> list[tuple[int, int, bytes]]:
    rows = read_sorted(spark, bootstrap, topic, **options)
    return [(r.partition, r.offset, r.value) for r in rows]


def _write(bootstrap: str, topic: str, partitions: int) -> tuple[list[Any], list[Any]]:
    """In every partition: plain records, a committed transaction, an aborted
    one interleaved with another producer's committed one, then the aborted
    producer's next, committed transaction. Returns (partition, offset, value)
    of the committed-or-plain records and of every data record."""
    a, b = Txn(bootstrap, "spark-a"), Txn(bootstrap, "spark-b")
    everything: list[tuple[int, int, bytes]] = []

    def note(p: int, acked: dict[bytes, int]) -> None:
        everything.extend((p, o, v) for v, o in acked.items())

    for p in range(partitions):
        plain_write(bootstrap, topic, values(f"plain{p}", 2), partition=p)
        everything.extend((p, i, v) for i, v in enumerate(values(f"plain{p}", 2)))
    a.begin()
    for p in range(partitions):
        note(p, a.write(topic, values(f"commit{p}", 3), partition=p))
    a.commit()
    a.begin()
    b.begin()
    for p in range(partitions):
        for i in range(2):
            note(p, a.write(topic, values(f"abort{p}.{i}", 2), partition=p))
            note(p, b.write(topic, values(f"other{p}.{i}", 2), partition=p))
    a.abort()
    b.commit()
    a.begin()
    for p in range(partitions):
        note(p, a.write(topic, values(f"again{p}", 2), partition=p))
    a.commit()
    everything.sort()
    return [e for e in everything if b"abort" not in e[2]], everything


def test_read_committed_batch_read_returns_exactly_the_committed_records(
    spark: Any, shared_muster: Any, topic: str
) -> None:
    bootstrap = shared_muster.bootstrap
    create_topic(bootstrap, topic, 2)
    committed, everything = _write(bootstrap, topic, 2)
    assert len(everything) == 2 * 15 and len(committed) == 2 * 11

    assert _read(spark, bootstrap, topic, **{"kafka.isolation.level": "read_committed"}) == (
        committed
    )
    # one Fetch per batch: answers start inside the aborted transaction
    small = {"kafka.isolation.level": "read_committed", "kafka.max.partition.fetch.bytes": "100"}
    assert _read(spark, bootstrap, topic, **small) == committed
    uncommitted = {"kafka.isolation.level": "read_uncommitted"}
    assert _read(spark, bootstrap, topic, **uncommitted) == everything
    assert _read(spark, bootstrap, topic) == everything  # Spark's default


def test_an_open_transaction_ends_a_read_committed_read_at_its_first_offset(
    spark: Any, shared_muster: Any, topic: str
) -> None:
    bootstrap = shared_muster.bootstrap
    create_topic(bootstrap, topic, 1)
    plain_write(bootstrap, topic, values("before", 3))  # 0..2
    txn = Txn(bootstrap, "spark-open").begin()
    try:
        txn.write(topic, values("open", 2))  # 3, 4
        plain_write(bootstrap, topic, values("after", 2))  # 5, 6
        rc = {"kafka.isolation.level": "read_committed"}
        assert [v for _p, _o, v in _read(spark, bootstrap, topic, **rc)] == values("before", 3)
        assert len(_read(spark, bootstrap, topic)) == 7

        tp = TopicPartition(topic, 0)
        for level, latest in (("read_committed", 3), ("read_uncommitted", 7)):
            opts = parse_source(
                {"kafka.bootstrap.servers": bootstrap, "assign": f'{{"{topic}":[0]}}'}
                | {"kafka.isolation.level": level},
                streaming=True,
            )
            resolver = OffsetResolver(opts)
            try:
                assert resolver.latest([tp]) == {tp: latest}  # a streaming batch's end
            finally:
                resolver.close()

        txn.commit()  # marker at 7
        expected = values("before", 3) + values("open", 2) + values("after", 2)
        assert [v for _p, _o, v in _read(spark, bootstrap, topic, **rc)] == expected
    finally:
        txn.producer.flush(5)


def test_range_reader_drops_aborted_records_across_fetches(shared_muster: Any, topic: str) -> None:
    """The executor's reader alone: read_committed asks for isolation level 1
    and passes each answer's aborted list to the decoder."""
    bootstrap = shared_muster.bootstrap
    create_topic(bootstrap, topic, 1)
    committed, everything = _write(bootstrap, topic, 1)
    end = max(o for _p, o, _v in everything) + 2  # past the last marker

    def read(isolation: int, max_bytes: int) -> list[tuple[int, int, bytes]]:
        r = FetchRange(bootstrap, topic, 0, 0, end, False, True, max_bytes, 10.0, isolation)
        return [
            (0, o, v)
            for b in read_range(r)
            for o, v in zip(
                b.column("offset").to_pylist(), b.column("value").to_pylist(), strict=True
            )
        ]

    for max_bytes in (1 << 20, 100):
        assert read(1, max_bytes) == committed
        assert read(0, max_bytes) == everything
