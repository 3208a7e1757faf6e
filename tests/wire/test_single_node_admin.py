"""Requests a single-node Kafka answers without doing anything, answered the
same way by muster (raw frames; the Java Admin's view of them is in
tests/javacli/test_admin.py): ElectLeaders, ListPartitionReassignments,
ListTransactions, DescribeTransactions and DescribeProducers with nothing to
report, DescribeClientQuotas (none) and AlterClientQuotas (refused), and
DescribeGroups v6 on an unknown group."""

from __future__ import annotations

import datetime

from kio.schema.errors import ErrorCode

from tests.support.brokers import MusterProcess
from tests.wire.clients import create_topic
from tests.wire.test_read_committed import call

TIMEOUT = datetime.timedelta(seconds=5)


def test_elect_leaders_is_never_needed_on_one_node(shared_muster: MusterProcess) -> None:
    create_topic(shared_muster.bootstrap, "elect-t", partitions=2)
    for version in (0, 1, 2):
        body = {
            "election_type": 0,
            "topic_partitions": [
                {"topic": "elect-t", "partitions": [0, 1]},
                {"topic": "elect-nosuch", "partitions": [0]},
            ],
            "timeout": TIMEOUT,
        }
        if version == 0:
            del body["election_type"]
        answer = call(shared_muster.port, 43, version, body)
        results = {
            (r.topic, p.partition_id): p.error_code
            for r in answer.replica_election_results
            for p in r.partition_result
        }
        assert results == {
            ("elect-t", 0): ErrorCode.election_not_needed,
            ("elect-t", 1): ErrorCode.election_not_needed,
            ("elect-nosuch", 0): ErrorCode.unknown_topic_or_partition,
        }, version
    every = call(
        shared_muster.port,
        43,
        2,
        {"election_type": 1, "topic_partitions": None, "timeout": TIMEOUT},
    )
    assert every.error_code == ErrorCode.none and every.replica_election_results == ()


def test_nothing_is_reassigned(shared_muster: MusterProcess) -> None:
    answer = call(shared_muster.port, 46, 0, {"timeout": TIMEOUT, "topics": None})
    assert answer.error_code == ErrorCode.none and answer.topics == ()


def test_transactions_listed_and_described(shared_muster: MusterProcess) -> None:
    listed = call(
        shared_muster.port,
        66,
        1,
        {
            "state_filters": ["Ongoing", "NoSuchState"],
            "producer_id_filters": [],
            "duration_filter": -1,
        },
    )
    assert listed.error_code == ErrorCode.none
    assert listed.unknown_state_filters == ("NoSuchState",)
    assert listed.transaction_states == ()
    described = call(shared_muster.port, 65, 0, {"transactional_ids": ["nosuch"]})
    assert described.transaction_states[0].error_code == ErrorCode.transactional_id_not_found


def test_describe_groups_v6_unknown_group(shared_muster: MusterProcess) -> None:
    body = {"groups": ["nosuch-group"], "include_authorized_operations": False}
    v6 = call(shared_muster.port, 15, 6, body).groups[0]
    assert v6.error_code == ErrorCode.group_id_not_found
    assert v6.error_message == "Group nosuch-group not found."
    v5 = call(shared_muster.port, 15, 5, body).groups[0]
    assert (v5.error_code, v5.group_state) == (ErrorCode.none, "Dead")


def test_describe_producers(shared_muster: MusterProcess) -> None:
    create_topic(shared_muster.bootstrap, "producers-t")
    body = {
        "topics": [
            {"name": "producers-t", "partition_indexes": [0]},
            {"name": "producers-nosuch", "partition_indexes": [0]},
        ]
    }
    answer = call(shared_muster.port, 61, 0, body)
    known, unknown = (t.partitions[0] for t in answer.topics)
    assert (known.error_code, known.active_producers) == (ErrorCode.none, ())
    assert unknown.error_code == ErrorCode.unknown_topic_or_partition


def test_client_quotas_none_described_and_none_set(shared_muster: MusterProcess) -> None:
    """muster enforces no client quotas: every filter describes nothing (as a
    Kafka with none set), and an alteration is refused entry by entry rather
    than stored and not enforced (kafka-configs --entity-type clients)."""
    for version in (0, 1):
        described = call(
            shared_muster.port,
            48,
            version,
            {"components": [{"entity_type": "client-id", "match_type": 2}], "strict": False},
        )
        assert (described.error_code, described.entries) == (ErrorCode.none, ())
        entity = {"entity_type": "client-id", "entity_name": "app"}
        altered = call(
            shared_muster.port,
            49,
            version,
            {
                "entries": [
                    {"entity": [entity], "ops": [{"key": "producer_byte_rate", "value": 1024.0}]}
                ],
                "validate_only": False,
            },
        )
        [entry] = altered.entries
        assert entry.error_code == ErrorCode.invalid_request
        assert "does not enforce client quotas" in (entry.error_message or "")
        assert [(e.entity_type, e.entity_name) for e in entry.entity] == [("client-id", "app")]
    again = call(shared_muster.port, 48, 1, {"components": [], "strict": False})
    assert again.entries == ()


def test_api_versions_tells_the_finalized_feature_levels(shared_muster: MusterProcess) -> None:
    """ApiVersions v3 finalizes Kafka 4.4's metadata.version (UIs read the
    version from it), group.version 1 (KIP-848) and share.version 1 (KIP-932,
    served by default as in Kafka 4.4; without Kafka's dead-letter queue, its
    level 2), and not transaction.version, which would make a Java producer
    speak EndTxn v5; v0 has no such fields."""
    answer = call(
        shared_muster.port,
        18,
        3,
        {"client_software_name": "ui", "client_software_version": "1"},
    )
    finalized = {
        f.name: (f.min_version_level, f.max_version_level) for f in answer.finalized_features
    }
    assert finalized == {
        "metadata.version": (33, 33),
        "group.version": (1, 1),
        "share.version": (1, 1),
    }
    assert answer.finalized_features_epoch >= 0
    supported = {f.name: (f.min_version, f.max_version) for f in answer.supported_features}
    assert supported["metadata.version"][1] == 33
    old = call(shared_muster.port, 18, 0, {})
    assert old.error_code == ErrorCode.none and old.api_keys
