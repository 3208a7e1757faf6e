"""DescribeConfigs answers shaped like Kafka 4.4's (kafka-diff): synonyms when
asked for, Kafka's config types."""

from __future__ import annotations

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
        create_topic(shared_muster.bootstrap, "grow-me")
        body = {"topics": [{"name": "grow-me", "count": 2, "assignments": [{"broker_ids": [7]}]}]}
        answer = raw.call(37, 3, {**body, "timeout": 5000})
        assert answer.results[0].error_code == 39
        body = {"topics": [{"name": "grow-me", "count": 2, "assignments": [{"broker_ids": [0]}]}]}
        answer = raw.call(37, 3, {**body, "timeout": 5000})
        assert answer.results[0].error_code == 0
    finally:
        raw.close()
