"""Kafka's Java Admin client (kafka-clients 4.4.0) against muster and Kafka
4.4: every call of tests/java/AdminChecks.java answered on muster as on a
single-node Kafka, or, where muster does not serve the call, the error listed
in MUSTER_ONLY (conformance/DIFFERENCES.md, "Java Admin and tools")."""

from __future__ import annotations

from typing import Any

from tests.javacli.common import Pair, both
from tests.support.java import run_program

# call -> muster's own answer, where it is not Kafka's
MUSTER_ONLY: dict[str, dict[str, Any]] = {}
# muster finalizes only what it serves: Kafka 4.4's metadata.version (what UIs
# read the version from), group.version (KIP-848) and share.version (KIP-932);
# not transaction.version 2 (EndTxn v5), streams or ELR (api_versions.py)
MUSTER_ONLY["describeFeatures"] = {"result": ["group.version", "metadata.version", "share.version"]}
# muster does not throttle clients, so it keeps no client quotas: a quota Kafka
# would set (or remove) is refused with words that say so, and describe stays
# empty; a quota Kafka refuses (alterClientQuotas-refused) is answered as Kafka
# does (DIFFERENCES.md D12)
NOT_KEPT = {
    "error": "InvalidRequestException",
    "message": "muster does not throttle clients, so it keeps no client quotas"
    " (conformance/DIFFERENCES.md D12)",
}
MUSTER_ONLY["alterClientQuotas"] = NOT_KEPT
MUSTER_ONLY["describeClientQuotas-after"] = {"result": {"users-only": "[]"}}
MUSTER_ONLY["alterClientQuotas-remove"] = NOT_KEPT
MUSTER_ONLY["alterClientQuotas-cleanup"] = NOT_KEPT


def calls(bootstrap: str) -> dict[str, dict[str, Any]]:
    return {line.pop("call"): line for line in run_program("AdminChecks", bootstrap)}


def test_admin_calls_answer_on_muster_as_on_kafka(pair: Pair) -> None:
    answers = both(pair, calls)
    muster, kafka = answers["muster"], answers["kafka"]
    assert set(muster) == set(kafka)
    # Kafka's controller sets min.insync.replicas=1 cluster-wide, and its broker
    # reports log.retention.hours; muster reports neither
    assert kafka["describeConfigs-topic"]["result"].pop("min.insync.replicas") == (
        "1/DYNAMIC_DEFAULT_BROKER_CONFIG"
    )
    assert muster["describeConfigs-topic"]["result"].pop("min.insync.replicas") is None
    assert kafka["describeConfigs-broker"]["result"].pop("log.retention.hours") == "168"
    assert muster["describeConfigs-broker"]["result"].pop("log.retention.hours") is None
    differ = []
    for call, got in muster.items():
        expected = MUSTER_ONLY.get(call, kafka[call])
        if got != expected:
            differ.append(f"{call}:\n  muster {got}\n  kafka  {kafka[call]}")
    assert not differ, "\n".join(differ)
    assert muster["describeConsumerGroups"]["result"]["members"] == ["static-1:2"]
    assert muster["deleteConsumerGroupOffsets"]["result"] == {"admin-t-0": "1/meta"}
    assert kafka["describeFeatures"]["result"]  # Kafka does finalize some
    assert kafka["describeClientQuotas-after"]["result"]["users-only"] != "[]"
