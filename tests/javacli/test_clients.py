"""Kafka's Java clients (kafka-clients 4.4.0) against muster and Kafka 4.4:
KafkaConsumer in a group with the classic protocol and the eager range
assignor, with cooperative-sticky, and with group.protocol=consumer (KIP-848);
KafkaProducer idempotent, and transactional with sendOffsetsToTransaction read
back by read_committed and read_uncommitted consumers
(tests/java/ClientChecks.java, one JVM per broker)."""

from __future__ import annotations

from tests.javacli.common import Pair, both
from tests.support.java import run_program

CHECKS = ("eager", "cooperative", "consumer", "idempotent", "transactional")


def checks(bootstrap: str) -> dict[str, dict[str, object]]:
    return {line.pop("check"): line for line in run_program("ClientChecks", bootstrap, *CHECKS)}


def test_java_clients_see_on_muster_what_they_see_on_kafka(pair: Pair) -> None:
    answers = both(pair, checks)
    muster, kafka = answers["muster"], answers["kafka"]
    # Kafka 4.4 runs transactions version 2 (KIP-890): the fenced producer's next
    # send fails with INVALID_PRODUCER_EPOCH; muster serves version 1, where
    # AddPartitionsToTxn answers PRODUCER_FENCED (conformance/DIFFERENCES.md)
    assert (
        kafka["transactional"].pop("fenced") == "ExecutionException/InvalidProducerEpochException"
    )
    assert muster["transactional"].pop("fenced") == "ExecutionException/ProducerFencedException"
    assert muster == kafka, f"muster {muster}\nkafka  {kafka}"
    for protocol in ("eager", "cooperative", "consumer"):
        seen = muster[protocol]
        assert seen == {
            "one_alone": "[0,1,2,3]",
            "overlap_seen": False,
            "sizes_shared": [2, 2],
            "union_shared": "[0,1,2,3]",
            "two_after_one_left": "[0,1,2,3]",
            "distinct_consumed": 200,
            "one_revoked_all_on_join": protocol == "eager",
            "committed_total": 200,
            "group_protocol_metadata": True,
        }, protocol
    assert muster["idempotent"] == {"acked": 2000, "offsets_consecutive": True, "read_back": 2000}
    assert muster["transactional"] == {
        "input_read": 10,
        "committed_after_abort": None,
        "committed_after_commit": 10,
        "read_committed": 10,
        "read_committed_all_out": True,
        "read_uncommitted": 15,
    }
