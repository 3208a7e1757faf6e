"""Kafka's `__transaction_state` record schemas (TransactionLogKey v0,
TransactionLogValue v0), declared in the one schema table of
`offsets_topic` and encoded by its codec.

The value's partition list is written as an empty array for a transaction in
state Empty, where Kafka writes null; Kafka's reader accepts both.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from muster.records.offsets_topic import SCHEMAS, RecordFormatError, Schema, decode, encode

KEY_VERSION = 0
VALUE_VERSION = 0


@dataclass(slots=True)
class TransactionLogKey:
    transactional_id: str


@dataclass(slots=True)
class TxnPartitionId:
    # an array of this one-int32 struct is byte-for-byte Kafka's [int32]
    partition: int


@dataclass(slots=True)
class TxnTopicPartitions:
    topic: str
    partition_ids: tuple[TxnPartitionId, ...] = ()


@dataclass(slots=True)
class TransactionLogValue:
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_status: int
    transaction_partitions: tuple[TxnTopicPartitions, ...] = field(default_factory=tuple)
    transaction_last_update_timestamp_ms: int = -1
    transaction_start_timestamp_ms: int = -1


SCHEMAS.update(
    {
        s.name: s
        for s in (
            Schema(
                "TransactionLogKey",
                TransactionLogKey,
                0,
                0,
                (("transactional_id", "string", 0, None, ""),),
            ),
            Schema("TxnPartitionId", TxnPartitionId, 0, 0, (("partition", "int32", 0, None, 0),)),
            Schema(
                "TxnTopicPartitions",
                TxnTopicPartitions,
                0,
                0,
                (
                    ("topic", "string", 0, None, ""),
                    ("partition_ids", "[TxnPartitionId]", 0, None, ()),
                ),
            ),
            Schema(
                "TransactionLogValue",
                TransactionLogValue,
                0,
                0,
                (
                    ("producer_id", "int64", 0, None, -1),
                    ("producer_epoch", "int16", 0, None, -1),
                    ("transaction_timeout_ms", "int32", 0, None, 0),
                    ("transaction_status", "int8", 0, None, 0),
                    ("transaction_partitions", "[TxnTopicPartitions]", 0, None, ()),
                    ("transaction_last_update_timestamp_ms", "int64", 0, None, -1),
                    ("transaction_start_timestamp_ms", "int64", 0, None, -1),
                ),
            ),
        )
    }
)


def encode_txn_key(transactional_id: str) -> bytes:
    return encode("TransactionLogKey", TransactionLogKey(transactional_id), KEY_VERSION)


def decode_txn_key(data: bytes) -> str | None:
    """The transactional id, or None for a key version we do not know."""
    try:
        return str(decode("TransactionLogKey", data)[1].transactional_id)
    except RecordFormatError:
        return None


def encode_txn_value(
    producer_id: int,
    producer_epoch: int,
    timeout_ms: int,
    status: int,
    partitions: set[tuple[str, int]] | frozenset[tuple[str, int]],
    last_update_ms: int,
    start_ms: int,
) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for topic, p in sorted(partitions):
        by_topic.setdefault(topic, []).append(p)
    value = TransactionLogValue(
        producer_id,
        producer_epoch,
        timeout_ms,
        status,
        tuple(
            TxnTopicPartitions(t, tuple(TxnPartitionId(p) for p in ps))
            for t, ps in by_topic.items()
        ),
        last_update_ms,
        start_ms,
    )
    return encode("TransactionLogValue", value, VALUE_VERSION)


def decode_txn_value(data: bytes) -> TransactionLogValue:
    return decode("TransactionLogValue", data)[1]  # type: ignore[no-any-return]


def value_partitions(value: TransactionLogValue) -> set[tuple[str, int]]:
    return {(t.topic, p.partition) for t in value.transaction_partitions for p in t.partition_ids}
