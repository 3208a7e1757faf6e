"""Kafka transactions through muster, as third-party clients use them.

What a user relies on (Apache Kafka is the oracle): a transactional producer's records
reach read_committed consumers only when its transaction commits, never when it is
aborted (by the producer, by a newer instance fencing it, by the transaction timeout or
after a broker crash); records behind an open transaction are held back (the last stable
offset); every commit or abort writes one control marker per partition, which takes an
offset but is never delivered; offsets sent to a transaction are committed with it.

Broker settings these tests pass (the broker refuses names it does not know):
`transaction.abort.timed.out.transaction.cleanup.interval.ms`. They also rely on
`transaction.max.timeout.ms` keeping Kafka's default, 900000.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.structs import TopicPartition as AioTP
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KpTP

from tests.support.brokers import MusterProcess
from tests.wire.clients import Msg, by_partition, create_topic
from tests.wire.group_helpers import committed_offsets, produce_values, wait_until

# init_transactions finds the transaction coordinator, waits for it to load and for any
# earlier transaction of the same transactional.id to complete: generous but bounded.
INIT_TIMEOUT = 20.0
TXN_TIMEOUT = 20.0  # commit / abort / send_offsets / flush
READ_TIMEOUT = 30.0

# A transactional.id's timed-out transactions are aborted by a periodic check
# (Kafka's default: every 10 s); the timeout test wants it prompt.
FAST_ABORT_SETTINGS = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": "500"}

# What librdkafka reports when a newer producer with the same transactional.id fenced
# this one: it normalises Kafka's PRODUCER_FENCED / INVALID_PRODUCER_EPOCH to _FENCED.
FENCED = {KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH}

READ_COMMITTED, READ_UNCOMMITTED = "read_committed", "read_uncommitted"


# ---- helpers ---------------------------------------------------------------


def _values(prefix: str, n: int) -> list[bytes]:
    return [f"{prefix}-{i}".encode() for i in range(n)]


def _txn_producer(bootstrap: str, txn_id: str, **conf: Any) -> Producer:
    """A confluent-kafka transactional producer, initialised (InitProducerId done)."""
    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 5, **conf}
    )
    producer.init_transactions(INIT_TIMEOUT)
    return producer


def _send(
    producer: Producer, topic: str, values: list[bytes], partitions: int = 1
) -> dict[bytes, tuple[int, int]]:
    """Produces values round-robin over partitions and flushes them (written, acked, but
    not committed); returns value -> (partition, offset) from the delivery reports."""
    acked: dict[bytes, tuple[int, int]] = {}
    errors: list[object] = []

    def on_delivery(err: object, msg: Any) -> None:
        if err is not None:
            errors.append(err)
        else:
            acked[msg.value()] = (msg.partition(), msg.offset())

    for i, value in enumerate(values):
        producer.produce(topic, value=value, partition=i % partitions, on_delivery=on_delivery)
        producer.poll(0)
    assert producer.flush(TXN_TIMEOUT) == 0, "transactional messages not delivered"
    assert not errors, errors
    assert len(acked) == len(values)
    return acked


def _consumer(bootstrap: str, isolation: str, **conf: Any) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{uuid.uuid4().hex[:8]}",  # assign mode: never joins
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
            "isolation.level": isolation,
            **conf,
        }
    )


def _read_to_end(
    bootstrap: str, topic: str, partitions: int, isolation: str, timeout: float = READ_TIMEOUT
) -> tuple[list[Msg], dict[int, int]]:
    """Everything a consumer with this isolation level gets from the start of every
    partition up to its end (the high watermark, or for read_committed the last stable
    offset), and its position there: librdkafka signals the end with _PARTITION_EOF."""
    consumer = _consumer(bootstrap, isolation)
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    out: list[Msg] = []
    at_end: set[int] = set()
    deadline = time.monotonic() + timeout
    try:
        while len(at_end) < partitions:
            assert time.monotonic() < deadline, (
                f"{isolation} consumer of {topic} reached the end of only {sorted(at_end)} "
                f"after {timeout}s; got {[(m.partition, m.offset, m.value) for m in out]}"
            )
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add(msg.partition())
                    continue
                raise KafkaException(msg.error())
            at_end.discard(msg.partition())
            out.append(Msg(msg.partition(), msg.offset(), msg.key(), msg.value(), ()))
        positions = consumer.position([TopicPartition(topic, p) for p in range(partitions)])
    finally:
        consumer.close()
    return out, {tp.partition: tp.offset for tp in positions}


def _values_by_partition(msgs: list[Msg]) -> dict[int, list[bytes | None]]:
    return {p: [m.value for m in ms] for p, ms in by_partition(msgs).items()}


def _end_offsets(bootstrap: str, topic: str, partitions: int, isolation: str) -> dict[int, int]:
    """ListOffsets(latest) at this isolation level: the high watermark for
    read_uncommitted, the last stable offset for read_committed."""
    consumer = _consumer(bootstrap, isolation)
    try:
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=15)[1]
            for p in range(partitions)
        }
    finally:
        consumer.close()


def _fails_with(call: Callable[[], Any]) -> KafkaError:
    with pytest.raises(KafkaException) as info:
        call()
    error = info.value.args[0]
    assert isinstance(error, KafkaError), error
    return error


def _wait_equal(fetch: Callable[[], Any], expected: Any, timeout: float, what: str) -> None:
    """Polls fetch() until it returns `expected`; a KafkaException (a coordinator still
    loading, an offset commit not yet stable) or a read that times out counts as not yet."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = fetch()
        except (KafkaException, AssertionError) as exc:
            last = exc
        if last == expected:
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}: {last!r} != {expected!r}")


def _assert_fenced(producer: Producer) -> None:
    """The producer, superseded by a newer one with its transactional.id, cannot commit:
    it ends in librdkafka's fatal 'fenced' state (Kafka answers the zombie's Produce with
    INVALID_PRODUCER_EPOCH and its EndTxn with PRODUCER_FENCED, both fatal to librdkafka).
    An abortable error first is tolerated if the abort that it asks for then fails fenced."""
    error = _fails_with(lambda: producer.commit_transaction(TXN_TIMEOUT))
    if not error.fatal():
        assert error.txn_requires_abort(), f"expected a fenced producer, got {error!r}"
        error = _fails_with(lambda: producer.abort_transaction(TXN_TIMEOUT))
    assert error.fatal(), f"expected a fatal error, got {error!r}"
    assert error.code() in FENCED, f"expected a 'fenced' error, got {error!r}"


def _consume_as_group(
    bootstrap: str, group: str, topic: str, count: int, timeout: float = 60.0
) -> tuple[Consumer, list[Any]]:
    """A subscribed, read_committed, non-auto-committing consumer that has consumed
    `count` messages (the caller closes it)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": READ_COMMITTED,
        }
    )
    consumer.subscribe([topic])
    got: list[Any] = []
    deadline = time.monotonic() + timeout
    while len(got) < count:
        assert time.monotonic() < deadline, f"consumed {len(got)} of {count} from {topic}"
        msg = consumer.poll(0.2)
        if msg is None:
            continue
        if msg.error():
            raise KafkaException(msg.error())
        got.append(msg)
    return consumer, got


def _transform(msgs: list[Any]) -> list[tuple[int, bytes]]:
    return [(m.partition(), b"out-" + m.value()) for m in msgs]


def _produce_transformed(producer: Producer, topic: str, out: list[tuple[int, bytes]]) -> None:
    for partition, value in out:
        producer.produce(topic, value=value, partition=partition)
    assert producer.flush(TXN_TIMEOUT) == 0


@pytest.fixture
def fast_abort_muster(tmp_path: Path) -> Iterator[MusterProcess]:
    """A broker of its own that aborts timed-out transactions within half a second."""
    broker = MusterProcess(tmp_path / "data", FAST_ABORT_SETTINGS)
    try:
        broker.start()
    except (RuntimeError, TimeoutError) as exc:
        broker.close()
        raise RuntimeError(f"{exc}\n{broker.log_text()[-2000:]}") from exc
    try:
        yield broker
    finally:
        broker.close()


# ---- confluent-kafka -------------------------------------------------------


def test_committed_visible_aborted_never_and_markers_take_offsets(
    shared_muster: MusterProcess,
) -> None:
    """read_committed gets exactly the committed records, in order; aborted ones only
    reach read_uncommitted; each commit/abort marker takes one offset per partition."""
    b = shared_muster.bootstrap
    topic = "txn-commit-abort"
    create_topic(b, topic, partitions=2)
    producer = _txn_producer(b, "txn-commit-abort")

    first, aborted, second = _values("c1", 20), _values("ab", 10), _values("c2", 6)
    producer.begin_transaction()
    acked_first = _send(producer, topic, first, partitions=2)
    producer.commit_transaction(TXN_TIMEOUT)

    got, positions = _read_to_end(b, topic, 2, READ_COMMITTED)
    assert _values_by_partition(got) == {0: first[0::2], 1: first[1::2]}
    assert [acked_first[m.value] for m in got if m.value] == [(m.partition, m.offset) for m in got]
    assert positions == {0: 11, 1: 11}  # 10 records + the commit marker

    producer.begin_transaction()
    _send(producer, topic, aborted, partitions=2)  # written to the log, then aborted
    producer.abort_transaction(TXN_TIMEOUT)
    producer.begin_transaction()
    acked_second = _send(producer, topic, second, partitions=2)
    producer.commit_transaction(TXN_TIMEOUT)

    got, positions = _read_to_end(b, topic, 2, READ_COMMITTED)
    assert _values_by_partition(got) == {
        0: first[0::2] + second[0::2],
        1: first[1::2] + second[1::2],
    }
    # per partition: c1 at 0..9, commit marker 10, ab at 11..15, abort marker 16,
    # c2 at 17..19, commit marker 20
    for p in range(2):
        offsets = [m.offset for m in got if m.partition == p]
        assert offsets == [*range(10), 17, 18, 19]
    assert {acked_second[v] for v in second} == {(p, o) for p in range(2) for o in (17, 18, 19)}
    assert positions == {0: 21, 1: 21}
    assert _end_offsets(b, topic, 2, READ_COMMITTED) == {0: 21, 1: 21}
    assert _end_offsets(b, topic, 2, READ_UNCOMMITTED) == {0: 21, 1: 21}

    everything, positions = _read_to_end(b, topic, 2, READ_UNCOMMITTED)
    assert _values_by_partition(everything) == {
        0: first[0::2] + aborted[0::2] + second[0::2],
        1: first[1::2] + aborted[1::2] + second[1::2],
    }
    for p in range(2):
        offsets = [m.offset for m in everything if m.partition == p]
        assert offsets == list(range(10)) + list(range(11, 16)) + [17, 18, 19]
    assert positions == {0: 21, 1: 21}


def test_open_transaction_holds_back_read_committed(shared_muster: MusterProcess) -> None:
    """An open transaction stops read_committed at its first offset (the last stable
    offset), even for non-transactional records written after it; commit releases all."""
    b = shared_muster.bootstrap
    topic = "txn-open"
    create_topic(b, topic, partitions=1)
    producer = _txn_producer(b, "txn-open")
    before, pending = _values("before", 5), _values("pending", 5)
    producer.begin_transaction()
    _send(producer, topic, before)  # offsets 0..4
    producer.commit_transaction(TXN_TIMEOUT)  # marker at 5

    producer.begin_transaction()
    acked = _send(producer, topic, pending)  # offsets 6..10, not committed
    assert sorted(o for _p, o in acked.values()) == list(range(6, 11))
    plain = Producer({"bootstrap.servers": b})
    plain.produce(topic, value=b"plain", partition=0)  # offset 11, outside any transaction
    assert plain.flush(TXN_TIMEOUT) == 0

    got, positions = _read_to_end(b, topic, 1, READ_COMMITTED)
    assert [m.value for m in got] == before
    assert positions == {0: 6}
    assert _end_offsets(b, topic, 1, READ_COMMITTED) == {0: 6}
    assert _end_offsets(b, topic, 1, READ_UNCOMMITTED) == {0: 12}
    everything, positions = _read_to_end(b, topic, 1, READ_UNCOMMITTED)
    assert [m.value for m in everything] == [*before, *pending, b"plain"]
    assert positions == {0: 12}

    producer.commit_transaction(TXN_TIMEOUT)  # marker at 12
    got, positions = _read_to_end(b, topic, 1, READ_COMMITTED)
    assert [m.value for m in got] == [*before, *pending, b"plain"]
    assert [m.offset for m in got] == [0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 11]
    assert positions == {0: 13}
    assert _end_offsets(b, topic, 1, READ_COMMITTED) == {0: 13}


def test_consume_transform_produce_commits_offsets_with_the_transaction(
    shared_muster: MusterProcess,
) -> None:
    """send_offsets_to_transaction: the group's offsets commit with the transaction's
    records, and an aborted transaction leaves both the offsets and the output as before."""
    b = shared_muster.bootstrap
    source, sink, group = "ctp-in", "ctp-out", "ctp-group"
    create_topic(b, source, partitions=2)
    create_topic(b, sink, partitions=2)
    tps = [(source, 0), (source, 1)]
    produce_values(b, source, _values("in", 20), 2)
    producer = _txn_producer(b, "ctp")

    consumer, msgs = _consume_as_group(b, group, source, 20)
    try:
        producer.begin_transaction()
        out = _transform(msgs)
        _produce_transformed(producer, sink, out)
        positions = consumer.position(consumer.assignment())
        assert {(tp.topic, tp.partition): tp.offset for tp in positions} == {
            (source, 0): 10,
            (source, 1): 10,
        }
        producer.send_offsets_to_transaction(
            positions, consumer.consumer_group_metadata(), TXN_TIMEOUT
        )
        producer.commit_transaction(TXN_TIMEOUT)

        _wait_equal(
            lambda: committed_offsets(b, group, tps),
            {(source, 0): 10, (source, 1): 10},
            30,
            "the group's offsets after commit",
        )
        got, _ = _read_to_end(b, sink, 2, READ_COMMITTED)
        assert sorted(m.value for m in got) == sorted(v for _p, v in out)

        # a second round, aborted: neither its offsets nor its output count
        produce_values(b, source, _values("in-again", 10), 2)
        more: list[Any] = []
        deadline = time.monotonic() + READ_TIMEOUT
        while len(more) < 10:
            assert time.monotonic() < deadline, f"consumed {len(more)} of 10 more"
            msg = consumer.poll(0.2)
            if msg is not None and not msg.error():
                more.append(msg)
        producer.begin_transaction()
        _produce_transformed(producer, sink, _transform(more))
        positions = consumer.position(consumer.assignment())
        assert sorted(tp.offset for tp in positions) == [15, 15]
        producer.send_offsets_to_transaction(
            positions, consumer.consumer_group_metadata(), TXN_TIMEOUT
        )
        producer.abort_transaction(TXN_TIMEOUT)
    finally:
        consumer.close()

    # the stable answer (librdkafka retries UNSTABLE_OFFSET_COMMIT): never committed
    assert committed_offsets(b, group, tps) == {(source, 0): 10, (source, 1): 10}
    got, _ = _read_to_end(b, sink, 2, READ_COMMITTED)
    assert sorted(m.value for m in got) == sorted(v for _p, v in out)


def test_newer_producer_fences_the_older_and_aborts_its_open_transaction(
    shared_muster: MusterProcess,
) -> None:
    """init_transactions by a second producer with the same transactional.id aborts the
    first one's open transaction and fences it: its further writes never land and its
    commit fails with a fatal 'fenced' error."""
    b = shared_muster.bootstrap
    topic = "txn-fence"
    create_topic(b, topic, partitions=1)
    old = _txn_producer(b, "txn-fence")
    old.begin_transaction()
    _send(old, topic, _values("old", 5))  # offsets 0..4, left open

    new = _txn_producer(b, "txn-fence")  # aborts old's transaction: marker at 5

    with contextlib.suppress(KafkaException):  # it may already know it is fenced
        old.produce(topic, value=b"old-late", partition=0)
        old.flush(TXN_TIMEOUT)
    _assert_fenced(old)

    new.begin_transaction()
    _send(new, topic, _values("new", 3))  # offsets 6..8
    new.commit_transaction(TXN_TIMEOUT)  # marker at 9

    got, positions = _read_to_end(b, topic, 1, READ_COMMITTED)
    assert [m.value for m in got] == _values("new", 3)
    assert [m.offset for m in got] == [6, 7, 8]
    assert positions == {0: 10}
    everything, _ = _read_to_end(b, topic, 1, READ_UNCOMMITTED)
    # the zombie's write after the fence was refused, even for read_uncommitted
    assert [m.value for m in everything] == _values("old", 5) + _values("new", 3)


def test_timed_out_transaction_is_aborted_by_the_broker(
    fast_abort_muster: MusterProcess,
) -> None:
    """A transaction left open past transaction.timeout.ms is aborted by the broker: the
    last stable offset moves past it, its records never become visible, and the
    producer's later commit fails."""
    b = fast_abort_muster.bootstrap
    topic = "txn-timeout"
    create_topic(b, topic, partitions=1)
    producer = _txn_producer(b, "txn-timeout", **{"transaction.timeout.ms": 2000})
    producer.begin_transaction()
    _send(producer, topic, _values("slow", 3))  # offsets 0..2

    # nothing is done with the transaction: within the timeout plus the cleanup interval
    # (and a margin) the broker writes the abort marker at 3 and the LSO reaches 4
    wait_until(
        lambda: _end_offsets(b, topic, 1, READ_COMMITTED) == {0: 4},
        20,
        "the broker to abort the timed-out transaction (read_committed end offset 4)",
        interval=0.25,
    )
    assert _end_offsets(b, topic, 1, READ_UNCOMMITTED) == {0: 4}
    got, positions = _read_to_end(b, topic, 1, READ_COMMITTED)
    assert got == []
    assert positions == {0: 4}
    everything, _ = _read_to_end(b, topic, 1, READ_UNCOMMITTED)
    assert [m.value for m in everything] == _values("slow", 3)

    _fails_with(lambda: producer.commit_transaction(TXN_TIMEOUT))
    got, _ = _read_to_end(b, topic, 1, READ_COMMITTED)
    assert got == []


def test_transaction_timeout_above_the_broker_maximum_is_refused(
    shared_muster: MusterProcess,
) -> None:
    """transaction.timeout.ms above the broker's transaction.max.timeout.ms (900000)
    fails init_transactions with INVALID_TRANSACTION_TIMEOUT."""
    producer = Producer(
        {
            "bootstrap.servers": shared_muster.bootstrap,
            "transactional.id": "txn-too-long",
            "transaction.timeout.ms": 900_001,
        }
    )
    error = _fails_with(lambda: producer.init_transactions(INIT_TIMEOUT))
    assert error.code() == KafkaError.INVALID_TRANSACTION_TIMEOUT, repr(error)


# ---- durability ------------------------------------------------------------


def test_committed_transaction_and_its_offsets_survive_kill_9(muster: MusterProcess) -> None:
    """Once commit_transaction returned, a kill -9 of the broker loses neither the
    records (for read_committed) nor the group offsets sent with them."""
    b = muster.bootstrap
    source, sink, group = "durable-txn-in", "durable-txn-out", "durable-txn-group"
    create_topic(b, source, partitions=2)
    create_topic(b, sink, partitions=2)
    tps = [(source, 0), (source, 1)]
    produce_values(b, source, _values("in", 8), 2)
    producer = _txn_producer(b, "durable-txn")
    consumer, msgs = _consume_as_group(b, group, source, 8)
    try:
        producer.begin_transaction()
        out = _transform(msgs)
        _produce_transformed(producer, sink, out)
        producer.send_offsets_to_transaction(
            consumer.position(consumer.assignment()),
            consumer.consumer_group_metadata(),
            TXN_TIMEOUT,
        )
        producer.commit_transaction(TXN_TIMEOUT)
    finally:
        consumer.close()

    muster.restart(hard=True)  # SIGKILL: no clean shutdown

    # the coordinator completes the commit (its markers) when it loads again
    _wait_equal(
        lambda: sorted(m.value for m in _read_to_end(b, sink, 2, READ_COMMITTED, 10)[0]),
        sorted(v for _p, v in out),
        60,
        "the committed records after restart",
    )
    _wait_equal(
        lambda: committed_offsets(b, group, tps),
        {(source, 0): 4, (source, 1): 4},
        60,
        "the group's offsets after restart",
    )

    # the same transactional.id carries on after the restart
    again = _txn_producer(b, "durable-txn")
    again.begin_transaction()
    _send(again, sink, _values("after", 2), partitions=2)
    again.commit_transaction(TXN_TIMEOUT)
    got, _ = _read_to_end(b, sink, 2, READ_COMMITTED)
    assert sorted(m.value for m in got) == sorted([v for _p, v in out] + _values("after", 2))


def test_transaction_open_at_kill_9_is_aborted_by_the_next_producer(
    muster: MusterProcess,
) -> None:
    """A transaction still open when the broker is killed never becomes visible: after
    the restart a producer with the same transactional.id initialises (aborting it), and
    what was committed before the crash survives."""
    b = muster.bootstrap
    topic = "crash-open"
    create_topic(b, topic, partitions=1)
    old = _txn_producer(b, "crash-open")
    old.begin_transaction()
    _send(old, topic, _values("before", 4))  # offsets 0..3
    old.commit_transaction(TXN_TIMEOUT)  # marker at 4
    old.begin_transaction()
    _send(old, topic, _values("open", 4))  # offsets 5..8, acked, never committed

    muster.restart(hard=True)  # SIGKILL with the transaction open

    new = _txn_producer(b, "crash-open")  # aborts the open transaction
    new.begin_transaction()
    _send(new, topic, _values("after", 2))
    new.commit_transaction(TXN_TIMEOUT)
    got, _ = _read_to_end(b, topic, 1, READ_COMMITTED)
    assert [m.value for m in got] == _values("before", 4) + _values("after", 2)
    everything, _ = _read_to_end(b, topic, 1, READ_UNCOMMITTED)
    assert [m.value for m in everything] == (
        _values("before", 4) + _values("open", 4) + _values("after", 2)
    )
    # the old instance is fenced: it cannot commit what it left open
    _assert_fenced(old)


# ---- kafka-python and aiokafka ---------------------------------------------


def _bounded(call: Callable[[], Any], timeout: float, what: str) -> Any:
    """Runs a client call that takes no timeout of its own (kafka-python's transactional
    calls wait forever) on a daemon thread: a broker that never answers fails the test
    instead of hanging the run."""
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()

    def run() -> None:
        try:
            future.set_result(call())
        except BaseException as exc:
            future.set_exception(exc)

    threading.Thread(target=run, name=what, daemon=True).start()
    try:
        return future.result(timeout)
    except concurrent.futures.TimeoutError:
        raise AssertionError(f"{what} did not finish within {timeout}s") from None


def _kp_read(bootstrap: str, topic: str, isolation: str, end: int) -> list[tuple[int, bytes]]:
    """(offset, value) of everything a kafka-python consumer gets until its position
    reaches `end`."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level=isolation,
    )
    tp = KpTP(topic, 0)
    got: list[tuple[int, bytes]] = []
    try:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        deadline = time.monotonic() + READ_TIMEOUT
        while consumer.position(tp) < end:
            assert time.monotonic() < deadline, f"{isolation}: {got} at {consumer.position(tp)}"
            for records in consumer.poll(timeout_ms=200).values():
                got += [(r.offset, r.value) for r in records]
    finally:
        consumer.close()
    return got


def test_kafka_python_transactions(shared_muster: MusterProcess) -> None:
    """kafka-python's transactional producer: committed records reach its read_committed
    consumer, aborted ones do not."""
    b = shared_muster.bootstrap
    topic = "kp-txn"
    create_topic(b, topic, partitions=1)
    producer = KafkaProducer(bootstrap_servers=b, transactional_id="kp-txn", max_block_ms=20000)
    committed, aborted = _values("kp-c", 5), _values("kp-a", 3)
    try:
        _bounded(producer.init_transactions, INIT_TIMEOUT + 5, "kafka-python init_transactions")
        producer.begin_transaction()
        for v in committed:
            producer.send(topic, value=v, partition=0)  # offsets 0..4
        _bounded(producer.commit_transaction, TXN_TIMEOUT, "kafka-python commit")  # marker 5
        producer.begin_transaction()
        for v in aborted:
            producer.send(topic, value=v, partition=0)  # offsets 6..8
        _bounded(lambda: producer.flush(timeout=TXN_TIMEOUT), TXN_TIMEOUT + 5, "flush")
        _bounded(producer.abort_transaction, TXN_TIMEOUT, "kafka-python abort")  # marker 9
    finally:
        producer.close(timeout=10)

    assert _kp_read(b, topic, "read_committed", 10) == list(enumerate(committed))
    assert [v for _o, v in _kp_read(b, topic, "read_uncommitted", 10)] == committed + aborted


class _Abort(Exception):
    pass


def test_aiokafka_transactions(shared_muster: MusterProcess) -> None:
    """aiokafka's `async with producer.transaction()`: committed on exit, aborted when the
    block raises; its read_committed consumer gets only the committed records."""
    b = shared_muster.bootstrap
    topic = "aio-txn"
    create_topic(b, topic, partitions=1)
    first, aborted, second = _values("aio-c1", 5), _values("aio-a", 3), _values("aio-c2", 2)
    end = 5 + 1 + 3 + 1 + 2 + 1  # records and one marker per transaction

    async def produce() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=b, transactional_id="aio-txn")
        await producer.start()
        try:
            async with producer.transaction():
                for v in first:
                    await producer.send_and_wait(topic, v, partition=0)
            with pytest.raises(_Abort):
                async with producer.transaction():
                    for v in aborted:
                        await producer.send_and_wait(topic, v, partition=0)
                    raise _Abort
            async with producer.transaction():
                for v in second:
                    await producer.send_and_wait(topic, v, partition=0)
        finally:
            await producer.stop()

    async def read(isolation: str) -> list[bytes]:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=b,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            isolation_level=isolation,
        )
        await consumer.start()
        got: list[bytes] = []
        try:
            tp = AioTP(topic, 0)
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            while await consumer.position(tp) < end:
                batch = await consumer.getmany(tp, timeout_ms=200)
                got += [m.value for m in batch.get(tp, [])]
        finally:
            await consumer.stop()
        return got

    asyncio.run(asyncio.wait_for(produce(), 60))
    assert asyncio.run(asyncio.wait_for(read("read_committed"), READ_TIMEOUT)) == first + second
    uncommitted = asyncio.run(asyncio.wait_for(read("read_uncommitted"), READ_TIMEOUT))
    assert uncommitted == first + aborted + second


def test_txn_offset_commit_of_an_unknown_producer_is_refused(
    shared_muster: MusterProcess,
) -> None:
    """A producer id its transactional id does not hold: INVALID_PRODUCER_ID_MAPPING
    for every partition, as Kafka 4.4 answers (kafka-diff)."""
    from tests.support.security import RawClient

    raw = RawClient(shared_muster.port)
    try:
        # the transaction coordinator loads on first use: find it first
        raw.call(10, 3, {"key": "never-initialised", "key_type": 1})
        body = {
            "transactional_id": "never-initialised",
            "group_id": "g-unknown-producer",
            "producer_id": 123456,
            "producer_epoch": 0,
            "topics": [
                {"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 1}]}
            ],
        }
        answer = raw.call(28, 3, body)
    finally:
        raw.close()
    assert [p.error_code for t in answer.topics for p in t.partitions] == [49]
