"""A crash between a transaction's PrepareCommit/PrepareAbort record and its
markers: the broker finds the Prepare state in `__transaction_state` on start
and writes the markers before it serves, so read_committed consumers see the
commit (and never the abort) and the producer's next init_transactions works."""

from __future__ import annotations

from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

from muster.coordinator.partitioning import partition_for
from muster.log.manager import LogManager
from muster.records.batch import Record, build_batch
from muster.records.transaction_log import encode_txn_key, encode_txn_value
from muster.server.transactions import TXN_TOPIC, TXN_TOPIC_CONFIGS
from muster.transactions.core import TxnStatus
from tests.support.brokers import MusterProcess

TOPIC = "half-ended"
COMMITTING, ABORTING = ("tx-committing", 7001), ("tx-aborting", 7002)


def _txn_batch(pid: int, values: list[bytes]) -> bytes:
    return build_batch(
        [Record(None, v, (), 1_000) for v in values],
        producer_id=pid,
        producer_epoch=0,
        base_sequence=0,
        transactional=True,
    )


def _write_crashed_state(data_dir: Path) -> None:
    """Data of two transactions, both durably in a Prepare state, no markers."""
    mgr = LogManager(data_dir)
    mgr.load()
    mgr.create_topic(TOPIC, 1)
    mgr.create_topic(TXN_TOPIC, 50, TXN_TOPIC_CONFIGS)
    data = mgr.get(TOPIC, 0)
    assert data is not None
    data.append(_txn_batch(COMMITTING[1], [b"kept-0", b"kept-1"]), 0)  # 0-1
    data.append(_txn_batch(ABORTING[1], [b"dropped-0"]), 0)  # 2
    for (txn_id, pid), status in (
        (COMMITTING, TxnStatus.PREPARE_COMMIT),
        (ABORTING, TxnStatus.PREPARE_ABORT),
    ):
        state = mgr.get(TXN_TOPIC, partition_for(txn_id, 50))
        assert state is not None
        value = encode_txn_value(pid, 0, 60_000, int(status), {(TOPIC, 0)}, 1_500, 1_000)
        state.append(build_batch([(encode_txn_key(txn_id), value)]), 0)
    mgr.close()


def _read_committed(bootstrap: str) -> tuple[list[bytes], int]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "half-ended-reader",
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    values: list[bytes] = []
    try:
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        for _ in range(60):
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:  # end of partition
                break
            values.append(msg.value())
        position = consumer.position([TopicPartition(TOPIC, 0)])[0].offset
    finally:
        consumer.close()
    return values, position


def test_prepared_transactions_are_finished_on_start(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    _write_crashed_state(data_dir)
    broker = MusterProcess(data_dir).start()
    try:
        values, position = _read_committed(broker.bootstrap)
        assert values == [b"kept-0", b"kept-1"]
        assert position == 5  # 3 records + one marker per transaction
        producer = Producer(
            {"bootstrap.servers": broker.bootstrap, "transactional.id": COMMITTING[0]}
        )
        producer.init_transactions(30)
        producer.begin_transaction()
        producer.produce(TOPIC, b"next", partition=0)
        producer.commit_transaction(30)
        values, position = _read_committed(broker.bootstrap)
        assert values == [b"kept-0", b"kept-1", b"next"] and position == 7
    finally:
        broker.close()
