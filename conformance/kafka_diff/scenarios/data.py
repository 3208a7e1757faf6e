"""Produce, Fetch and ListOffsets (error paths: unknown topic or partition,
CRC mismatch, message too large, offset out of range, isolation levels),
Metadata, InitProducerId / AddPartitionsToTxn / EndTxn error paths."""

from __future__ import annotations

import uuid
from typing import Any

from conformance.kafka_diff.helpers import METADATA, create_topic, init_producer_id
from conformance.kafka_diff.registry import register
from conformance.kafka_diff.session import Session
from muster.records.batch import build_batch

PRODUCE, FETCH, LIST_OFFSETS = 0, 1, 2
INIT_PID, ADD_PARTITIONS, END_TXN, ADD_OFFSETS = 22, 24, 26, 25
T0 = 1_700_000_000_000


def topic_id(s: Session, topic: str) -> uuid.UUID:
    a = s.call(METADATA, 12, {"topics": [{"name": topic}]}, record=False)
    return uuid.UUID(a["topics"][0]["topic_id"])


def batch(values: list[bytes], ts: int = T0, **kw: Any) -> bytes:
    from muster.records.batch import Record

    recs = [Record(None, v, timestamp=ts + i * 1000) for i, v in enumerate(values)]
    return build_batch(recs, timestamp_ms=ts, **kw)


def produce_body(
    topic: str, tid: uuid.UUID | None, records: bytes, partition: int = 0, acks: int = -1
) -> dict[str, Any]:
    return {
        "transactional_id": None,
        "acks": acks,
        "timeout": 10000,
        "topic_data": [
            {
                "name": topic,
                "topic_id": tid,
                "partition_data": [{"index": partition, "records": records}],
            }
        ],
    }


def produced(answer: Any) -> Any:
    """A Produce answer's per-partition errors and offsets."""
    if not isinstance(answer, dict):
        return answer
    return [
        {
            k: p[k]
            for k in ("index", "error_code", "base_offset", "log_start_offset", "record_errors")
            if k in p
        }
        for t in answer["responses"]
        for p in t["partition_responses"]
    ]


def _produce(v: int):
    def run(s: Session) -> None:
        if not s.supports(PRODUCE, v):
            return
        t = s.name("t")
        create_topic(s, t, 1, configs={"max.message.bytes": "2000"})
        tid = topic_id(s, t)
        ok = batch([b"a", b"b"])
        s.record("ok", produced(s.call(PRODUCE, v, produce_body(t, tid, ok), record=False)))
        s.record(
            "acks1", produced(s.call(PRODUCE, v, produce_body(t, tid, ok, acks=1), record=False))
        )
        s.record(
            "bad_acks", produced(s.call(PRODUCE, v, produce_body(t, tid, ok, acks=2), record=False))
        )
        missing = s.name("missing")
        s.record(
            "unknown_topic",
            produced(s.call(PRODUCE, v, produce_body(missing, uuid.uuid4(), ok), record=False)),
        )
        s.record(
            "unknown_partition",
            produced(s.call(PRODUCE, v, produce_body(t, tid, ok, partition=3), record=False)),
        )
        bad = bytearray(ok)
        bad[-1] ^= 0xFF  # the last record's bytes: the CRC no longer matches
        s.record(
            "crc_mismatch",
            produced(s.call(PRODUCE, v, produce_body(t, tid, bytes(bad)), record=False)),
        )
        big = batch([b"x" * 3000])
        s.record("too_large", produced(s.call(PRODUCE, v, produce_body(t, tid, big), record=False)))
        s.record(
            "empty_records", produced(s.call(PRODUCE, v, produce_body(t, tid, b""), record=False))
        )
        s.record(
            "garbage_records",
            produced(s.call(PRODUCE, v, produce_body(t, tid, b"\x00" * 70), record=False)),
        )
        s.record(
            "acks0_no_answer_then",
            produced(s.call(PRODUCE, v, produce_body(t, tid, ok, acks=1), record=False)),
        )

    return run


for _v in range(3, 14):
    register("data", f"produce_v{_v}", _produce(_v))


def fetch_body(
    topic: str, tid: uuid.UUID, offset: int, partition: int = 0, isolation: int = 0
) -> dict[str, Any]:
    return {
        "replica_id": -1,
        "max_wait": 0,
        "min_bytes": 0,
        "max_bytes": 1 << 20,
        "isolation_level": isolation,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": topic,
                "topic_id": tid,
                "partitions": [
                    {
                        "partition": partition,
                        "current_leader_epoch": -1,
                        "fetch_offset": offset,
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1 << 20,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }


def fetched(answer: Any) -> Any:
    if not isinstance(answer, dict):
        return answer
    out: dict[str, Any] = {"error_code": answer.get("error_code")}
    out["partitions"] = [
        {
            k: p[k]
            for k in (
                "partition_index",
                "error_code",
                "high_watermark",
                "last_stable_offset",
                "log_start_offset",
                "aborted_transactions",
            )
            if k in p
        }
        | {"records": len(p.get("records") or "") > 0}
        for r in answer["responses"]
        for p in r["partitions"]
    ]
    return out


def _fetch(v: int):
    def run(s: Session) -> None:
        if not s.supports(FETCH, v):
            return
        t = s.name("t")
        create_topic(s, t, 1)
        tid = topic_id(s, t)
        s.call(PRODUCE, 9, produce_body(t, tid, batch([b"a", b"b", b"c"])), record=False)
        for label, body in (
            ("from_0", fetch_body(t, tid, 0)),
            ("at_end", fetch_body(t, tid, 3)),
            ("out_of_range", fetch_body(t, tid, 100)),
            ("negative_offset", fetch_body(t, tid, -5)),
            ("unknown_partition", fetch_body(t, tid, 0, partition=4)),
            ("unknown_topic", fetch_body(s.name("missing"), uuid.uuid4(), 0)),
            ("read_committed", fetch_body(t, tid, 0, isolation=1)),
            ("bad_isolation", fetch_body(t, tid, 0, isolation=7)),
        ):
            s.record(label, fetched(s.call(FETCH, v, body, record=False)))

    return run


for _v in range(4, 19):
    register("data", f"fetch_v{_v}", _fetch(_v))


def lo_body(topic: str, partition: int, ts: int, isolation: int = 0) -> dict[str, Any]:
    return {
        "replica_id": -1,
        "isolation_level": isolation,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {
                        "partition_index": partition,
                        "current_leader_epoch": -1,
                        "timestamp": ts,
                        "max_num_offsets": 1,
                    }
                ],
            }
        ],
        "timeout_ms": 10000,
    }


def listed(answer: Any) -> Any:
    if not isinstance(answer, dict):
        return answer
    return [
        {
            k: p[k]
            for k in ("partition_index", "error_code", "offset", "old_style_offsets")
            if k in p
        }
        for t in answer["topics"]
        for p in t["partitions"]
    ]


def _list_offsets(v: int):
    def run(s: Session) -> None:
        if not s.supports(LIST_OFFSETS, v):
            return
        t = s.name("t")
        create_topic(s, t, 1)
        tid = topic_id(s, t)
        s.call(PRODUCE, 9, produce_body(t, tid, batch([b"a", b"b", b"c"])), record=False)
        for label, (part, ts) in {
            "earliest": (0, -2),
            "latest": (0, -1),
            "max_timestamp": (0, -3),
            "earliest_local": (0, -4),
            "earliest_pending_upload": (0, -5),
            "by_timestamp": (0, T0 + 1500),
            "after_last": (0, T0 + 10_000),
            "at_first": (0, T0),
            "unknown_partition": (3, -1),
            "bad_spec": (0, -9),
        }.items():
            s.record(label, listed(s.call(LIST_OFFSETS, v, lo_body(t, part, ts), record=False)))
        s.record(
            "read_committed",
            listed(s.call(LIST_OFFSETS, v, lo_body(t, 0, -1, isolation=1), record=False)),
        )
        s.record(
            "unknown_topic",
            listed(s.call(LIST_OFFSETS, v, lo_body(s.name("missing"), 0, -1), record=False)),
        )

    return run


for _v in range(12):
    register("data", f"list_offsets_v{_v}", _list_offsets(_v))


def _metadata(v: int):
    def run(s: Session) -> None:
        if not s.supports(METADATA, v):
            return
        t = s.name("t")
        create_topic(s, t, 2)
        for label, topics in (
            ("one", [t]),
            ("unknown", [s.name("missing")]),
            ("bad_name", ["bad name!"]),
        ):
            body = {
                "topics": [{"name": n, "topic_id": None} for n in topics],
                "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False,
            }
            a = s.call(METADATA, v, body, record=False)
            s.record(label, a["topics"] if isinstance(a, dict) else a)

    return run


for _v in range(14):
    register("data", f"metadata_v{_v}", _metadata(_v))


def _init_pid(v: int):
    def run(s: Session) -> None:
        if not s.supports(INIT_PID, v):
            return
        base = {
            "transaction_timeout": 60000,
            "producer_id": -1,
            "producer_epoch": -1,
            "enable_2pc": False,
            "keep_prepared_txn": False,
        }
        s.call(INIT_PID, v, {**base, "transactional_id": None}, "idempotent")
        s.call(INIT_PID, v, {**base, "transactional_id": s.name("tx")}, "transactional")
        s.call(INIT_PID, v, {**base, "transactional_id": s.name("tx")}, "again_bumps_epoch")
        s.call(
            INIT_PID,
            v,
            {**base, "transactional_id": s.name("tx2"), "transaction_timeout": 10**9},
            "timeout_too_large",
        )
        s.call(INIT_PID, v, {**base, "transactional_id": ""}, "empty_id")
        if v >= 3:
            s.call(
                INIT_PID,
                v,
                {
                    **base,
                    "transactional_id": s.name("tx"),
                    "producer_id": 424242,
                    "producer_epoch": 0,
                },
                "wrong_producer_id",
            )

    return run


for _v in range(6):
    register("txn", f"init_producer_id_v{_v}", _init_pid(_v))


def _init(s: Session, txn: str) -> tuple[int, int]:
    a = init_producer_id(s, txn)
    return a["producer_id"], a["producer_epoch"]


def _add_partitions(v: int):
    def run(s: Session) -> None:
        if not s.supports(ADD_PARTITIONS, v):
            return
        t = s.name("t")
        create_topic(s, t, 1)
        txn = s.name("tx")
        pid, epoch = _init(s, txn)

        def add(label: str, txn_id: str, p: int, e: int, topic: str, parts: list[int]) -> None:
            body = {
                "v3_and_below_transactional_id": txn_id,
                "v3_and_below_producer_id": p,
                "v3_and_below_producer_epoch": e,
                "v3_and_below_topics": [{"name": topic, "partitions": parts}],
                "transactions": [
                    {
                        "transactional_id": txn_id,
                        "producer_id": p,
                        "producer_epoch": e,
                        "verify_only": False,
                        "topics": [{"name": topic, "partitions": parts}],
                    }
                ],
            }
            s.call(ADD_PARTITIONS, v, body, label)

        add("ok", txn, pid, epoch, t, [0])
        add("again", txn, pid, epoch, t, [0])
        add("unknown_partition", txn, pid, epoch, t, [5])
        add("unknown_topic", txn, pid, epoch, s.name("missing"), [0])
        add("wrong_epoch", txn, pid, epoch + 1, t, [0])
        add("wrong_producer", txn, pid + 1, epoch, t, [0])
        add("unknown_txn", s.name("never"), pid, epoch, t, [0])

    return run


for _v in range(6):
    register("txn", f"add_partitions_v{_v}", _add_partitions(_v))


def _end_txn(v: int):
    def run(s: Session) -> None:
        if not s.supports(END_TXN, v):
            return
        t = s.name("t")
        create_topic(s, t, 1)
        txn = s.name("tx")
        pid, epoch = _init(s, txn)

        def end(label: str, txn_id: str, p: int, e: int, commit: bool) -> None:
            s.call(
                END_TXN,
                v,
                {
                    "transactional_id": txn_id,
                    "producer_id": p,
                    "producer_epoch": e,
                    "committed": commit,
                },
                label,
            )

        end("nothing_to_commit", txn, pid, epoch, True)
        end("unknown_txn", s.name("never"), pid, epoch, True)
        end("wrong_epoch", txn, pid, epoch + 3, False)
        end("wrong_producer", txn, pid + 1, epoch, False)
        s.call(
            ADD_PARTITIONS,
            3,
            {
                "v3_and_below_transactional_id": txn,
                "v3_and_below_producer_id": pid,
                "v3_and_below_producer_epoch": epoch,
                "v3_and_below_topics": [{"name": t, "partitions": [0]}],
            },
            record=False,
        )
        end("abort_open", txn, pid, epoch, False)

    return run


for _v in range(6):
    register("txn", f"end_txn_v{_v}", _end_txn(_v))


def add_offsets(s: Session) -> None:
    txn = s.name("tx")
    pid, epoch = _init(s, txn)
    for v in range(5):
        if not s.supports(ADD_OFFSETS, v, f"v{v}"):
            continue
        body = {
            "transactional_id": txn,
            "producer_id": pid,
            "producer_epoch": epoch,
            "group_id": s.name("g"),
        }
        s.call(ADD_OFFSETS, v, body, f"ok_v{v}")
        s.call(ADD_OFFSETS, v, {**body, "producer_epoch": epoch + 1}, f"wrong_epoch_v{v}")


register("txn", "add_offsets_to_txn", add_offsets)
