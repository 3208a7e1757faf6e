"""ApiVersions: answered from the one API table that also drives dispatch.

From v3 it also tells the feature levels (KIP-584), which UIs and
`kafka-features.sh describe` / Admin.describeFeatures read to name the
cluster's version. muster finalizes what it serves as a one-node Kafka 4.4 does:
`metadata.version` 33 (Kafka 4.4's level, the one UIs read the version from) and
`group.version` 1 (KIP-848 consumer groups) and, while it serves share groups
(`muster.share.enable`, on by default as in Kafka 4.4), `share.version` 1:
KIP-932 share groups. Kafka 4.4 finalizes `share.version` 2, which adds the
share groups' dead-letter queue; muster has none, so it says 1. Not
`transaction.version` 2: a Java producer would then speak KIP-890's EndTxn v5,
which muster does not serve; nor streams or ELR, which it does not implement
(conformance/DIFFERENCES.md D1.c)."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from muster.protocol.codec import SameAnswer
from muster.server.state import RequestContext

METADATA_VERSION = 33  # Kafka 4.4's (kafka-diff api_versions.request_v3)
# the range a Kafka 4.4 broker says it supports
SUPPORTED_FEATURES = ({"name": "metadata.version", "min_version": 7, "max_version": 33},)
FINALIZED_FEATURES = tuple(
    {"name": name, "min_version_level": level, "max_version_level": level}
    for name, level in (("group.version", 1), ("metadata.version", METADATA_VERSION))
)
SHARE_VERSION = 1  # KIP-932 share groups, no dead-letter queue (Kafka's SV_1)
# with share groups served, in Kafka 4.4's order (share.version before metadata.version)
FINALIZED_WITH_SHARE = (
    FINALIZED_FEATURES[0],
    {
        "name": "share.version",
        "min_version_level": SHARE_VERSION,
        "max_version_level": SHARE_VERSION,
    },
    FINALIZED_FEATURES[1],
)
SHARE_FETCH = 78
# the levels never change while muster runs: one epoch (Kafka's is a metadata offset)
FINALIZED_FEATURES_EPOCH = 1


def supported_versions(table: dict[int, Any]) -> list[dict[str, int]]:
    return [
        {"api_key": key, "min_version": entry.min_version, "max_version": entry.max_version}
        for key, entry in sorted(table.items())
    ]


async def handle_api_versions(ctx: RequestContext, req: Any) -> SameAnswer:
    services = ctx.state.services
    if services.api_versions is not None:  # the table never changes once serving
        return services.api_versions
    table = services.api_table
    answer = SameAnswer(
        {
            "error_code": ErrorCode.none,
            "api_keys": supported_versions(table),
            "throttle_time": 0,
            # v3's tagged fields; the schemas of v0-v2 have none and ignore them
            "supported_features": SUPPORTED_FEATURES,
            "finalized_features_epoch": FINALIZED_FEATURES_EPOCH,
            "finalized_features": (
                FINALIZED_WITH_SHARE if SHARE_FETCH in table else FINALIZED_FEATURES
            ),
        }
    )
    services.api_versions = answer
    return answer
