"""Answers shaped like Kafka 4.4's where kafka-diff (conformance/kafka_diff) found
muster's different: DescribeConfigs synonyms and types, CreateTopics duplicates,
CreatePartitions assignments, Produce without records."""

from __future__ import annotations

from typing import Any

from tests.support.brokers import MusterProcess
from tests.support.security import RawClient
from tests.wire.clients import create_topic


def _describe(port: int, rtype: int, name: str, keys: list[str], synonyms: bool) -> dict:
    raw = RawClient(port)
    try:
        body = {
            "resources": [
                {"resource_type": rtype, "resource_name": name, "configuration_keys": keys}
            ],
            "include_synonyms": synonyms,
        }
        answer = raw.call(32, 4, body)
    finally:
        raw.close()
    return {c.name: c for c in answer.results[0].configs}


def test_topic_configs_have_synonyms_and_kafka_types(shared_muster: MusterProcess) -> None:
    create_topic(shared_muster.bootstrap, "cfg-synonyms", **{"retention.ms": "3600000"})
    keys = ["retention.ms", "cleanup.policy", "segment.bytes"]
    got = _describe(shared_muster.port, 2, "cfg-synonyms", keys, True)
    assert [(s.name, s.value, s.source) for s in got["retention.ms"].synonyms] == [
        ("retention.ms", "3600000", 1)
    ]
    assert [(s.name, s.source) for s in got["cleanup.policy"].synonyms] == [
        ("log.cleanup.policy", 5)
    ]
    assert got["cleanup.policy"].config_type == 7  # LIST
    assert got["segment.bytes"].config_type == 3  # INT
    assert got["retention.ms"].config_type == 5  # LONG
    plain = _describe(shared_muster.port, 2, "cfg-synonyms", keys, False)
    assert all(not c.synonyms for c in plain.values())


def test_a_statically_set_broker_property_lists_its_default(shared_muster: MusterProcess) -> None:
    # MusterProcess sets group.initial.rebalance.delay.ms=0 (Kafka's default: 3000)
    got = _describe(shared_muster.port, 4, "0", ["group.initial.rebalance.delay.ms"], True)
    entry = got["group.initial.rebalance.delay.ms"]
    assert [(s.value, s.source) for s in entry.synonyms] == [("0", 4), ("3000", 5)]


def test_create_topics_names_a_duplicate_once_and_create_partitions_checks_brokers(
    shared_muster: MusterProcess,
) -> None:
    """Kafka 4.4's answers (kafka-diff): a topic named twice in one CreateTopics is
    INVALID_REQUEST, once, and not created; CreatePartitions onto a broker that
    does not exist is INVALID_REPLICA_ASSIGNMENT."""
    raw = RawClient(shared_muster.port)
    try:
        spec = {"name": "twice", "num_partitions": 1, "replication_factor": 1}
        answer = raw.call(19, 7, {"topics": [spec, spec], "timeout": 5000})
        assert [(t.name, t.error_code) for t in answer.topics] == [("twice", 42)]
        # v5+: a created topic's configs come back (KIP-525)
        once = {**spec, "name": "once"}
        created = raw.call(19, 7, {"topics": [once], "timeout": 5000}).topics[0]
        assert {c.name: c.value for c in created.configs}["cleanup.policy"] == "delete"
        create_topic(shared_muster.bootstrap, "grow-me")
        body = {"topics": [{"name": "grow-me", "count": 2, "assignments": [{"broker_ids": [7]}]}]}
        answer = raw.call(37, 3, {**body, "timeout": 5000})
        assert answer.results[0].error_code == 39
        body = {"topics": [{"name": "grow-me", "count": 2, "assignments": [{"broker_ids": [0]}]}]}
        answer = raw.call(37, 3, {**body, "timeout": 5000})
        assert answer.results[0].error_code == 0
    finally:
        raw.close()


def test_produce_without_records_is_invalid_record(shared_muster: MusterProcess) -> None:
    create_topic(shared_muster.bootstrap, "no-records")
    raw = RawClient(shared_muster.port)
    try:
        body = {
            "acks": -1,
            "timeout": 5000,
            "topic_data": [
                {"name": "no-records", "partition_data": [{"index": 0, "records": b""}]}
            ],
        }
        answer = raw.call(0, 9, body)
    finally:
        raw.close()
    assert answer.responses[0].partition_responses[0].error_code == 87


def test_fetch_out_of_range_and_list_offsets_versions(shared_muster: MusterProcess) -> None:
    """An out-of-range fetch answers the error alone (offsets -1, no aborted list);
    ListOffsets takes MAX_TIMESTAMP from v7 and EARLIEST_LOCAL from v8."""
    create_topic(shared_muster.bootstrap, "ranges")
    raw = RawClient(shared_muster.port)
    try:
        part = {"partition": 0, "fetch_offset": 100, "partition_max_bytes": 1 << 20}
        body = {
            "max_wait": 0,
            "max_bytes": 1 << 20,
            "topics": [{"topic": "ranges", "partitions": [part]}],
        }
        p = raw.call(1, 11, body).responses[0].partitions[0]
        assert (p.error_code, p.high_watermark, p.log_start_offset) == (1, -1, -1)
        assert p.aborted_transactions is None

        def list_offsets(version: int, ts: int) -> tuple[int, int]:
            body = {
                "replica_id": -1,
                "topics": [
                    {"name": "ranges", "partitions": [{"partition_index": 0, "timestamp": ts}]}
                ],
            }
            got = raw.call(2, version, body).topics[0].partitions[0]
            return got.error_code, got.offset

        assert list_offsets(6, -3) == (35, -1)
        assert list_offsets(7, -3)[0] == 0
        assert list_offsets(7, -4) == (35, -1)
        assert list_offsets(8, -4) == (0, 0)
    finally:
        raw.close()


def test_transactions_start_when_a_client_created_their_topic(muster: MusterProcess) -> None:
    """A client's CreateTopics of __transaction_state before the first transaction
    (Kafka allows it): the coordinator adopts the topic instead of failing every
    InitProducerId with COORDINATOR_NOT_AVAILABLE."""
    raw = RawClient(muster.port)
    try:
        spec = {"name": "__transaction_state", "num_partitions": 2, "replication_factor": 1}
        assert raw.call(19, 7, {"topics": [spec], "timeout": 5000}).topics[0].error_code == 0
        raw.call(10, 4, {"key_type": 1, "coordinator_keys": ["tx"]})
        body = {
            "transactional_id": "tx",
            "transaction_timeout": 60000,
            "producer_id": -1,
            "producer_epoch": -1,
        }
        answer = raw.call(22, 4, body)
    finally:
        raw.close()
    assert answer.error_code == 0 and answer.producer_id >= 0


def test_incremental_alter_configs_like_kafka(shared_muster: MusterProcess) -> None:
    """APPEND/SUBTRACT work on the value in effect (the default included) and only
    on list configs; a config named twice or an unknown operation is refused."""
    create_topic(shared_muster.bootstrap, "incremental")
    raw = RawClient(shared_muster.port)

    def alter(*ops: tuple[str, int, str | None]) -> int:
        configs = [{"name": n, "config_operation": op, "value": v} for n, op, v in ops]
        body = {
            "resources": [{"resource_type": 2, "resource_name": "incremental", "configs": configs}]
        }
        return int(raw.call(44, 1, body).responses[0].error_code)

    try:
        assert alter(("cleanup.policy", 2, "compact")) == 0
        got = _describe(shared_muster.port, 2, "incremental", ["cleanup.policy"], False)
        assert got["cleanup.policy"].value == "delete,compact"
        assert alter(("cleanup.policy", 3, "compact")) == 0
        got = _describe(shared_muster.port, 2, "incremental", ["cleanup.policy"], False)
        assert got["cleanup.policy"].value == "delete"
        assert alter(("retention.ms", 2, "1")) == 40  # not a list
        assert alter(("retention.ms", 0, "1"), ("retention.ms", 1, None)) == 42
        assert alter(("retention.ms", 9, "1")) == 42
    finally:
        raw.close()


def test_describe_configs_of_another_broker_is_invalid(shared_muster: MusterProcess) -> None:
    raw = RawClient(shared_muster.port)
    try:
        for name, error in (("999", 42), ("x", 42), ("0", 0), ("", 0)):
            body = {
                "resources": [
                    {
                        "resource_type": 4,
                        "resource_name": name,
                        "configuration_keys": ["num.partitions"],
                    }
                ]
            }
            assert raw.call(32, 4, body).results[0].error_code == error, name
    finally:
        raw.close()


def test_transactional_batches_outside_a_transaction_are_refused(
    shared_muster: MusterProcess,
) -> None:
    """Kafka 4.4: a transactional batch without a transactional id is
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED, one for a partition not added to the
    ongoing transaction INVALID_TXN_STATE; an out-of-order error carries the
    partition's log start offset."""
    from muster.records.batch import build_batch

    create_topic(shared_muster.bootstrap, "txn-outside")
    raw = RawClient(shared_muster.port)
    try:
        raw.call(10, 4, {"key_type": 1, "coordinator_keys": ["outside"]})
        init = {
            "transactional_id": "outside",
            "transaction_timeout": 60000,
            "producer_id": -1,
            "producer_epoch": -1,
        }
        pid = raw.call(22, 4, init)
        records = build_batch(
            [(None, b"x")],
            producer_id=pid.producer_id,
            producer_epoch=pid.producer_epoch,
            base_sequence=0,
            transactional=True,
        )

        def produce(txn: str | None, data: bytes) -> Any:
            body = {
                "transactional_id": txn,
                "acks": -1,
                "timeout": 5000,
                "topic_data": [
                    {"name": "txn-outside", "partition_data": [{"index": 0, "records": data}]}
                ],
            }
            return raw.call(0, 9, body).responses[0].partition_responses[0]

        assert produce(None, records).error_code == 53
        assert produce("outside", records).error_code == 48
        raw.call(
            24,
            3,
            {
                "v3_and_below_transactional_id": "outside",
                "v3_and_below_producer_id": pid.producer_id,
                "v3_and_below_producer_epoch": pid.producer_epoch,
                "v3_and_below_topics": [{"name": "txn-outside", "partitions": [0]}],
            },
        )
        assert produce("outside", records).error_code == 0
        gap = build_batch(
            [(None, b"y")],
            producer_id=pid.producer_id,
            producer_epoch=pid.producer_epoch,
            base_sequence=7,
            transactional=True,
        )
        answer = produce("outside", gap)
        assert (answer.error_code, answer.log_start_offset) == (45, 0)
    finally:
        raw.close()
