"""muster's Consumer with isolation.level over real sockets, on transactions
written by confluent-kafka's transactional producer through a muster broker:
read_committed gets exactly the committed records (and plain ones), never an
aborted record or a marker, read_uncommitted every data record; positions move
past markers and aborted batches; an open transaction holds read_committed
back at its first offset until it commits; end offsets and lag are the last
stable offset under read_committed."""

from __future__ import annotations

import time
from typing import Any

import pytest

from muster.client import Admin, Consumer, TopicPartition
from muster.client.core.fetcher import LATEST
from tests.support.transactions import Txn, plain_write, values
from tests.wire.clients import create_topic


def consumer(bootstrap: str, isolation: str | None, **conf: Any) -> Consumer:
    settings: dict[str, Any] = {"bootstrap.servers": bootstrap, **conf}
    if isolation is not None:
        settings["isolation.level"] = isolation
    return Consumer(settings)


def read_until(c: Consumer, tp: TopicPartition, end: int, timeout: float = 20.0) -> list[Any]:
    """Polls until the position reaches `end`."""
    out: list[Any] = []
    deadline = time.monotonic() + timeout
    while (c.position(tp) or 0) < end:
        assert time.monotonic() < deadline, (c.position(tp), end, [r.value for r in out])
        out += c.poll(0.2)
    return out


def settle(c: Consumer, seconds: float = 1.5) -> list[Any]:
    """Whatever more a consumer gets in a while (to show it gets nothing)."""
    out: list[Any] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        out += c.poll(0.2)
    return out


def high_watermark(bootstrap: str, tp: TopicPartition) -> int:
    admin = Admin({"bootstrap.servers": bootstrap})
    try:
        return admin.list_offsets({tp: "latest"})[tp]
    finally:
        admin.close()


def write_log(bootstrap: str, topic: str) -> tuple[list[bytes], list[bytes]]:
    """Committed, aborted and plain records in one partition, returned as the
    committed-or-plain values and every data value, each in offset order.
    Producer A's aborted transaction is followed by a committed one of A (its
    ABORT marker must end the aborted set), and A's aborted transaction
    interleaves with B's committed one batch by batch."""
    a, b = Txn(bootstrap, "a"), Txn(bootstrap, "b")
    written: dict[bytes, int] = {}
    try:
        plain_write(bootstrap, topic, values("plain", 3))
        a.begin()
        written |= a.write(topic, values("a-commit", 4))
        a.commit()
        a.begin()
        written |= a.write(topic, values("a-abort", 4))
        a.abort()
        a.begin()
        written |= a.write(topic, values("a-commit2", 3))
        a.commit()
        a.begin()
        b.begin()
        for i in range(3):
            written |= a.write(topic, values(f"a-abort2.{i}", 2))
            written |= b.write(topic, values(f"b-commit.{i}", 2))
        a.abort()
        b.commit()
        plain_write(bootstrap, topic, values("tail", 2))
    finally:
        a.producer.flush(5)
        b.producer.flush(5)
    everything = values("plain", 3) + sorted(written, key=written.__getitem__)
    everything += values("tail", 2)
    committed = [v for v in everything if b"abort" not in v]
    return committed, everything


@pytest.mark.parametrize("fetch_bytes", [1_048_576, 150], ids=["one-answer", "many-answers"])
def test_read_committed_gets_committed_records_read_uncommitted_all(
    muster_broker: Any, topic_name: str, fetch_bytes: int
) -> None:
    bootstrap = muster_broker.bootstrap
    create_topic(bootstrap, topic_name, 1)
    committed, everything = write_log(bootstrap, topic_name)
    tp = TopicPartition(topic_name, 0)
    end = high_watermark(bootstrap, tp)  # past the last marker: no transaction open
    # 3 + 4 + 4 + 3 + 12 + 2 data records and 5 markers
    assert len(everything) == 28 and end == 33

    for isolation, expected in (("read_committed", committed), ("read_uncommitted", everything)):
        # many-answers: ~one batch per Fetch, so aborted transactions begun
        # before an answer's fetch offset reach into it
        c = consumer(bootstrap, isolation, **{"max.partition.fetch.bytes": fetch_bytes})
        try:
            c.assign([tp])
            c.seek(tp, 0)
            got = read_until(c, tp, end)
            got += settle(c, 0.5)
            assert [r.value for r in got] == expected, isolation
            offsets = [r.offset for r in got]
            assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)
            assert c.position(tp) == end  # past the markers and aborted batches
            assert c.lag(tp) == 0
        finally:
            c.close()


def test_default_isolation_level_is_read_committed(muster_broker: Any, topic_name: str) -> None:
    bootstrap = muster_broker.bootstrap
    create_topic(bootstrap, topic_name, 1)
    committed, _ = write_log(bootstrap, topic_name)
    tp = TopicPartition(topic_name, 0)
    c = consumer(bootstrap, None)
    try:
        c.assign([tp])
        c.seek(tp, 0)
        got = read_until(c, tp, high_watermark(bootstrap, tp))
        assert [r.value for r in got] == committed
    finally:
        c.close()


def test_open_transaction_holds_read_committed_back_until_commit(
    muster_broker: Any, topic_name: str
) -> None:
    bootstrap = muster_broker.bootstrap
    create_topic(bootstrap, topic_name, 1)
    tp = TopicPartition(topic_name, 0)
    plain_write(bootstrap, topic_name, values("before", 3))  # offsets 0..2
    txn = Txn(bootstrap, "open").begin()
    rc = consumer(bootstrap, "read_committed", **{"group.id": f"rc-{topic_name}"})
    ru = consumer(bootstrap, "read_uncommitted")
    latest_rc = consumer(bootstrap, "read_committed", **{"auto.offset.reset": "latest"})
    admin = Admin({"bootstrap.servers": bootstrap})
    try:
        assert txn.write(topic_name, values("open", 3)) == {
            b"open-0": 3,
            b"open-1": 4,
            b"open-2": 5,
        }
        plain_write(bootstrap, topic_name, values("after", 2))  # 6, 7: behind the open one
        for c in (rc, ru):
            c.assign([tp])
            c.seek(tp, 0)

        # read_committed: what precedes the open transaction, then nothing
        got = read_until(rc, tp, 3)
        got += settle(rc)
        assert [r.value for r in got] == values("before", 3)
        assert rc.position(tp) == 3  # the open transaction's first offset
        assert rc.lag(tp) == 0  # the last stable offset is 3, the high watermark 8
        assert rc.list_offsets({tp: LATEST}) == {tp: 3}
        assert admin.list_offsets({tp: "latest"}, isolation_level="read_committed") == {tp: 3}
        latest_rc.assign([tp])  # a reset to latest lands on the LSO
        settle(latest_rc, 0.5)
        assert latest_rc.position(tp) == 3
        rc.commit()
        assert rc.committed([tp]) == {tp: 3}

        # read_uncommitted reads on, up to the high watermark
        got = read_until(ru, tp, 8)
        assert [r.value for r in got] == values("before", 3) + values("open", 3) + values(
            "after", 2
        )
        assert ru.list_offsets({tp: LATEST}) == {tp: 8}
        assert admin.list_offsets({tp: "latest"}) == {tp: 8}
        assert ru.lag(tp) == 0

        txn.commit()  # marker at 8, high watermark 9
        got = read_until(rc, tp, 9)
        assert [r.value for r in got] == values("open", 3) + values("after", 2)
        assert rc.position(tp) == 9 and rc.lag(tp) == 0
        assert rc.list_offsets({tp: LATEST}) == {tp: 9}
        got = read_until(latest_rc, tp, 9)
        assert [r.value for r in got] == values("open", 3) + values("after", 2)
    finally:
        admin.close()
        for c in (rc, ru, latest_rc):
            c.close()
        txn.producer.flush(5)


def test_read_committed_group_consumer_skips_an_aborted_tail(
    muster_broker: Any, topic_name: str
) -> None:
    """A subscribed consumer whose partition ends with an aborted transaction:
    it gets nothing of it, and commits the offset past its marker."""
    bootstrap = muster_broker.bootstrap
    create_topic(bootstrap, topic_name, 1)
    tp = TopicPartition(topic_name, 0)
    plain_write(bootstrap, topic_name, values("kept", 2))  # 0, 1
    txn = Txn(bootstrap, "tail").begin()
    txn.write(topic_name, values("dropped", 3))  # 2..4
    txn.abort()  # marker at 5
    c = consumer(
        bootstrap,
        "read_committed",
        **{
            "group.id": f"g-{topic_name}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 10000,
            "heartbeat.interval.ms": 500,
        },
    )
    try:
        c.subscribe([topic_name])
        got: list[Any] = []
        deadline = time.monotonic() + 20
        while c.assignment() != {tp} or (c.position(tp) or 0) < 6:
            assert time.monotonic() < deadline, (c.assignment(), c.position(tp), got)
            got += c.poll(0.2)
        assert [r.value for r in got] == values("kept", 2)
        c.commit()
        assert c.committed([tp]) == {tp: 6}
    finally:
        c.close()
