"""Idempotent and transactional producers on the data path: sequences,
duplicates, unknown producer ids, a transactional batch outside a transaction,
read_committed fetches around an open, then aborted, transaction; DeleteRecords."""

from __future__ import annotations

from typing import Any

from conformance.kafka_diff.helpers import create_topic, init_producer_id
from conformance.kafka_diff.registry import register
from conformance.kafka_diff.scenarios.data import (
    FETCH,
    LIST_OFFSETS,
    PRODUCE,
    batch,
    fetch_body,
    fetched,
    listed,
    lo_body,
    produce_body,
    produced,
    topic_id,
)
from conformance.kafka_diff.session import Session

ADD_PARTITIONS, END_TXN, DELETE_RECORDS = 24, 26, 21


def _pid(s: Session, txn: str | None) -> tuple[int, int]:
    a = init_producer_id(s, txn)
    return a["producer_id"], a["producer_epoch"]


def idempotent_sequences(s: Session) -> None:
    t = s.name("t")
    create_topic(s, t, 1)
    tid = topic_id(s, t)
    pid, epoch = _pid(s, None)

    def send(label: str, seq: int, p: int = pid, e: int = epoch, n: int = 2) -> None:
        records = batch(
            [b"v%d" % i for i in range(n)], producer_id=p, producer_epoch=e, base_sequence=seq
        )
        s.record(label, produced(s.call(PRODUCE, 9, produce_body(t, tid, records), record=False)))

    send("first", 0)
    send("duplicate", 0)
    send("next", 2)
    send("gap", 9)
    send("old_epoch", 4, e=epoch - 1 if epoch > 0 else 32767)
    send("unknown_producer", 0, p=pid + 1000)
    send("new_producer_nonzero_seq", 5, p=pid + 2000)
    s.record("end", listed(s.call(LIST_OFFSETS, 7, lo_body(t, 0, -1), record=False)))


def transactional_outside_transaction(s: Session) -> None:
    t = s.name("t")
    create_topic(s, t, 1)
    tid = topic_id(s, t)
    txn = s.name("tx")
    pid, epoch = _pid(s, txn)
    records = batch(
        [b"x"], producer_id=pid, producer_epoch=epoch, base_sequence=0, transactional=True
    )
    body = produce_body(t, tid, records)
    s.record("no_txn_id", produced(s.call(PRODUCE, 9, body, record=False)))
    body["transactional_id"] = txn
    s.record("not_added", produced(s.call(PRODUCE, 9, body, record=False)))


def read_committed_around_transaction(s: Session) -> None:
    t = s.name("t")
    create_topic(s, t, 1)
    tid = topic_id(s, t)
    s.call(PRODUCE, 9, produce_body(t, tid, batch([b"plain"])), record=False)
    txn = s.name("tx")
    pid, epoch = _pid(s, txn)
    s.call(
        ADD_PARTITIONS,
        3,
        {
            "v3_and_below_transactional_id": txn,
            "v3_and_below_producer_id": pid,
            "v3_and_below_producer_epoch": epoch,
            "v3_and_below_topics": [{"name": t, "partitions": [0]}],
        },
        "add_partitions",
    )
    body = produce_body(
        t,
        tid,
        batch(
            [b"t1", b"t2"],
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=0,
            transactional=True,
        ),
    )
    body["transactional_id"] = txn
    s.record("txn_produce", produced(s.call(PRODUCE, 9, body, record=False)))
    for iso, label in ((0, "uncommitted"), (1, "committed")):
        s.record(
            f"open_{label}",
            fetched(s.call(FETCH, 11, fetch_body(t, tid, 0, isolation=iso), record=False)),
        )
        s.record(
            f"open_latest_{label}",
            listed(s.call(LIST_OFFSETS, 7, lo_body(t, 0, -1, isolation=iso), record=False)),
        )
    s.call(
        END_TXN,
        3,
        {"transactional_id": txn, "producer_id": pid, "producer_epoch": epoch, "committed": False},
        "abort",
    )

    def closed() -> Any:
        a = s.call(LIST_OFFSETS, 7, lo_body(t, 0, -1, isolation=1), record=False)
        return isinstance(a, dict) and listed(a)[0]["offset"] == 4

    s.wait(closed, 10)  # the abort marker is written asynchronously by Kafka
    for iso, label in ((0, "uncommitted"), (1, "committed")):
        a = s.call(FETCH, 11, fetch_body(t, tid, 0, isolation=iso), record=False)
        s.record(f"aborted_{label}", fetched(a))
        if isinstance(a, dict):
            p = a["responses"][0]["partitions"][0]
            s.record(f"aborted_list_{label}", p.get("aborted_transactions"))


def delete_records(s: Session) -> None:
    t = s.name("t")
    create_topic(s, t, 2)
    tid = topic_id(s, t)
    s.call(PRODUCE, 9, produce_body(t, tid, batch([b"a", b"b", b"c"])), record=False)

    def delete(label: str, topic: str, parts: dict[int, int], v: int = 2) -> None:
        body = {
            "topics": [
                {
                    "name": topic,
                    "partitions": [{"partition_index": p, "offset": o} for p, o in parts.items()],
                }
            ],
            "timeout": 10000,
        }
        s.call(DELETE_RECORDS, v, body, label)

    delete("before_2", t, {0: 2})
    delete("high_watermark", t, {0: -1})
    delete("beyond", t, {0: 10})
    delete("empty_partition", t, {1: 0})
    delete("unknown_partition", t, {7: 0})
    delete("unknown_topic", s.name("missing"), {0: 0})
    for v in (0, 1):
        delete(f"v{v}", t, {0: 3}, v)
    s.record("earliest", listed(s.call(LIST_OFFSETS, 7, lo_body(t, 0, -2), record=False)))
    s.record("fetch_deleted", fetched(s.call(FETCH, 11, fetch_body(t, tid, 0), record=False)))


def fenced_producer(s: Session) -> None:
    """A transactional producer that a newer instance (same transactional id, epoch
    bumped by InitProducerId) fenced mid-transaction: its next Produce must be fatal
    to it (INVALID_PRODUCER_EPOCH), not the abortable INVALID_TXN_STATE."""
    t = s.name("t")
    create_topic(s, t, 1)
    tid = topic_id(s, t)
    txn = s.name("tx")
    pid, epoch = _pid(s, txn)

    def add(label: str, e: int) -> None:
        s.call(
            ADD_PARTITIONS,
            3,
            {
                "v3_and_below_transactional_id": txn,
                "v3_and_below_producer_id": pid,
                "v3_and_below_producer_epoch": e,
                "v3_and_below_topics": [{"name": t, "partitions": [0]}],
            },
            label,
        )

    def send(label: str, e: int, seq: int, p: int = pid) -> None:
        records = batch(
            [b"z"], producer_id=p, producer_epoch=e, base_sequence=seq, transactional=True
        )
        body = produce_body(t, tid, records)
        body["transactional_id"] = txn
        s.record(label, produced(s.call(PRODUCE, 9, body, record=False)))

    add("add_partitions", epoch)
    send("before_fence", epoch, 0)
    # Kafka answers CONCURRENT_TRANSACTIONS while it aborts the fenced transaction;
    # a client retries, and so does this
    fenced_pid: list[tuple[int, int]] = []

    def init_again() -> bool:
        a = init_producer_id(s, txn)
        if isinstance(a, dict) and a["error_code"] == 0:
            fenced_pid.append((a["producer_id"], a["producer_epoch"]))
        return bool(fenced_pid)

    s.record("init_again", s.wait(init_again, 15))
    if not fenced_pid:
        return
    new_pid, new_epoch = fenced_pid[0]
    s.record("same_producer_id", new_pid == pid)
    s.record("epoch_bumped", new_epoch > epoch)
    send("fenced", epoch, 1)
    send("new_epoch_not_added", new_epoch, 0)
    send("other_producer_id", new_epoch, 0, p=pid + 1000)
    add("add_partitions_new_epoch", new_epoch)
    send("new_epoch_added", new_epoch, 0)


register("producers", "idempotent_sequences", idempotent_sequences)
register("producers", "transactional_outside_transaction", transactional_outside_transaction)
register("producers", "read_committed_around_transaction", read_committed_around_transaction)
register("producers", "delete_records", delete_records)
register("producers", "fenced_producer", fenced_producer)
