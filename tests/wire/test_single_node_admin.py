"""Requests a single-node Kafka answers without doing anything, answered the
same way by muster (raw frames; the Java Admin's view of them is in
tests/javacli/test_admin.py): ElectLeaders, ListPartitionReassignments,
ListTransactions, DescribeTransactions and DescribeProducers with nothing to
report, client quotas refused (muster keeps none), and DescribeGroups v6 on an
unknown group."""

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


def _alter(port: int, entity: list[tuple[str, str | None]], key: str, value: float, **kw: bool):
    body = {
        "entries": [
            {
                "entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
                "ops": [{"key": key, "value": value, "remove": kw.get("remove", False)}],
            }
        ],
        "validate_only": kw.get("validate_only", False),
    }
    [entry] = call(port, 49, 1, body).entries
    return entry.error_code, entry.error_message


def test_client_quotas_are_refused_not_kept(shared_muster: MusterProcess) -> None:
    """muster does not throttle, so a quota Kafka would accept is refused with
    words that say so (validate_only too: it would not be accepted), a quota
    Kafka refuses gets Kafka's answer, and describe lists nothing: a user never
    believes a client is throttled when it is not."""
    port = shared_muster.port
    refused = (
        ErrorCode.invalid_request,
        "muster does not throttle clients, so it keeps no client quotas"
        " (conformance/DIFFERENCES.md D12)",
    )
    assert _alter(port, [("client-id", "app")], "producer_byte_rate", 1024.0) == refused
    assert _alter(port, [("user", None)], "request_percentage", 12.5) == refused
    assert _alter(port, [("user", "bob"), ("client-id", "app")], "consumer_byte_rate", 7) == (
        refused
    )
    assert _alter(port, [("ip", "127.0.0.1")], "connection_creation_rate", 5.0) == refused
    assert _alter(port, [("client-id", "dry")], "producer_byte_rate", 1.0, validate_only=True) == (
        refused
    )
    assert _alter(port, [("client-id", "app")], "producer_byte_rate", 0, remove=True) == refused
    # Kafka's own refusals, word for word
    assert _alter(port, [("client-id", "bad")], "producer_byte_rate", -1.0) == (
        ErrorCode.invalid_request,
        "Quota producer_byte_rate must be greater than 0",
    )
    assert _alter(port, [("client-id", "bad")], "consumer_byte_rate", 1.5) == (
        ErrorCode.invalid_request,
        "consumer_byte_rate cannot be a fractional value.",
    )
    for components, strict in (([], False), ([], True), ([("user", 2, None)], False)):
        body = {
            "components": [
                {"entity_type": t, "match_type": m, "match": n} for t, m, n in components
            ],
            "strict": strict,
        }
        answer = call(port, 48, 1, body)
        assert (answer.error_code, answer.entries) == (ErrorCode.none, ())
    bad_filter = {"components": [{"entity_type": "x", "match_type": 2, "match": None}]}
    answer = call(port, 48, 1, bad_filter | {"strict": False})
    assert answer.error_code == ErrorCode.unsupported_version


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


def test_describe_topic_partitions_pages_through_every_topic(shared_muster: MusterProcess) -> None:
    """An empty topic list describes every topic (what a UI lists): followed
    cursor by cursor at 3 partitions an answer, each partition of each topic
    comes exactly once, in name order, internal topics flagged as such."""
    create_topic(shared_muster.bootstrap, "dtp-all-a", partitions=4)
    create_topic(shared_muster.bootstrap, "dtp-all-b", partitions=2)
    seen: list[tuple[str, int]] = []
    internal: dict[str, bool] = {}
    cursor = None
    for _ in range(1000):
        body = {"topics": [], "response_partition_limit": 3, "cursor": cursor}
        answer = call(shared_muster.port, 75, 0, body)
        parts = [(t.name, p.partition_index) for t in answer.topics for p in t.partitions]
        assert 0 < len(parts) <= 3 or answer.next_cursor is None
        seen += parts
        internal.update({t.name: t.is_internal for t in answer.topics})
        if answer.next_cursor is None:
            break
        cursor = {
            "topic_name": answer.next_cursor.topic_name,
            "partition_index": answer.next_cursor.partition_index,
        }
    assert seen == sorted(set(seen))
    assert [p for t, p in seen if t == "dtp-all-a"] == [0, 1, 2, 3]
    assert [p for t, p in seen if t == "dtp-all-b"] == [0, 1]
    assert internal.get("__consumer_offsets", True) and not internal["dtp-all-a"]
