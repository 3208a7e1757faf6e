"""DescribeClientQuotas (48) and AlterClientQuotas (49) for a broker that keeps
no client quotas, as issue #24 asks: muster does not throttle clients, so a
quota it stored would be a promise it does not keep (conformance/DIFFERENCES.md
D12).

AlterClientQuotas checks every entry as Kafka 4.4 does and refuses what Kafka
refuses with Kafka's code and words (kafka-diff `quotas.refused`); an entry
Kafka would accept is refused with INVALID_REQUEST and NOT_KEPT, validate_only
too (the honest answer to "would this be accepted" is no). DescribeClientQuotas
checks the filter as Kafka does and lists no entries."""

from __future__ import annotations

import asyncio
from typing import Any

from kio.schema.errors import ErrorCode

from muster.security.acl import Operation
from muster.server import authz
from muster.server.quotas import (
    IP,
    Entity,
    QuotaError,
    check_entity,
    check_filter,
    check_ops,
    describe,
    entity_of,
)
from muster.server.state import RequestContext

# Kafka's message for the refusal (ClusterAuthorizationException)
CLUSTER_DENIED = "Cluster authorization failed."
NOT_KEPT = (
    "muster does not throttle clients, so it keeps no client quotas"
    " (conformance/DIFFERENCES.md D12)"
)


async def handle_describe_client_quotas(ctx: RequestContext, req: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"throttle_time": 0, "error_code": ErrorCode.none}
    if not authz.cluster(ctx, Operation.DESCRIBE_CONFIGS):
        # Kafka refuses the whole request without DESCRIBE_CONFIGS on the cluster
        return out | {
            "error_code": ErrorCode.cluster_authorization_failed,
            "error_message": CLUSTER_DENIED,
            "entries": None,
        }
    components = [(c.entity_type, int(c.match_type), c.match) for c in req.components]
    try:
        check_filter(components)
    except QuotaError as e:
        return out | {"error_code": ErrorCode(e.code), "error_message": e.message, "entries": None}
    return out | {"error_message": "", "entries": []}


def _check(entity: Entity, ops: list[tuple[str, float, bool]]) -> None:
    check_entity(entity)
    check_ops(entity, ops)


async def _refusal(entity: Entity, ops: list[tuple[str, float, bool]]) -> QuotaError:
    """Kafka's refusal of the entry, or muster's when Kafka would accept it."""
    try:
        if any(t == IP and n is not None for t, n in entity):
            await asyncio.to_thread(_check, entity, ops)  # may resolve a host name
        else:
            _check(entity, ops)
    except QuotaError as e:
        return e
    return QuotaError(ErrorCode.invalid_request, NOT_KEPT)


async def handle_alter_client_quotas(ctx: RequestContext, req: Any) -> dict[str, Any]:
    allowed = authz.cluster(ctx, Operation.ALTER_CONFIGS)
    # one result per entity, in the order entities first appear
    results: dict[Entity, tuple[ErrorCode, str]] = {}
    for entry in req.entries:
        entity = entity_of([(e.entity_type, e.entity_name) for e in entry.entity])
        if not allowed:
            results[entity] = (ErrorCode.cluster_authorization_failed, CLUSTER_DENIED)
        elif entity in results:  # Kafka answers an entity named twice once, and says so
            message = f"Ignoring duplicate entity {describe(entity)}"
            results[entity] = (ErrorCode.invalid_request, message)
        else:
            ops = [(o.key, float(o.value), bool(o.remove)) for o in entry.ops]
            refused = await _refusal(entity, ops)
            results[entity] = (ErrorCode(refused.code), refused.message)
    entries = [
        {
            "error_code": code,
            "error_message": message,
            "entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
        }
        for entity, (code, message) in results.items()
    ]
    return {"throttle_time": 0, "entries": entries}
