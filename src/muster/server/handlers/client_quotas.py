"""DescribeClientQuotas (48) and AlterClientQuotas (49) as a one-node Kafka 4.4
answers them (kafka-diff `quotas.*`): quotas are stored and described, entries
Kafka refuses are refused with its error codes, validate_only keeps nothing."""

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
    QuotaStore,
    check_entity,
    check_filter,
    check_ops,
    describe,
    entity_of,
    matches,
)
from muster.server.state import BrokerState, RequestContext

# Kafka's message for the refusal (ClusterAuthorizationException)
CLUSTER_DENIED = "Cluster authorization failed."


def _store(state: BrokerState) -> QuotaStore:
    services = state.services
    if services.quotas is None:
        config = state.config
        path = None if config.in_memory else config.data_dir / "client-quotas.json"
        services.quotas = QuotaStore(path)
    store: QuotaStore = services.quotas
    return store


def _components(entity: Entity) -> list[dict[str, Any]]:
    return [{"entity_type": t, "entity_name": n} for t, n in entity]


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
    entries = [
        {
            "entity": _components(entity),
            "values": [{"key": k, "value": v} for k, v in sorted(values.items())],
        }
        for entity, values in _store(ctx.state).quotas.items()
        if matches(entity, components, bool(req.strict))
    ]
    return out | {"error_message": "", "entries": entries}


def _check(entity: Entity, ops: list[tuple[str, float, bool]]) -> None:
    check_entity(entity)
    check_ops(entity, ops)


async def handle_alter_client_quotas(ctx: RequestContext, req: Any) -> dict[str, Any]:
    allowed = authz.cluster(ctx, Operation.ALTER_CONFIGS)
    # one result per entity, in the order entities first appear
    results: dict[Entity, tuple[ErrorCode, str | None]] = {}
    changes: list[tuple[Entity, list[tuple[str, float, bool]]]] = []
    for entry in req.entries:
        entity = entity_of([(e.entity_type, e.entity_name) for e in entry.entity])
        if not allowed:
            results[entity] = (ErrorCode.cluster_authorization_failed, CLUSTER_DENIED)
            continue
        if entity in results:  # Kafka keeps the first entry's change and says so
            message = f"Ignoring duplicate entity {describe(entity)}"
            results[entity] = (ErrorCode.invalid_request, message)
            continue
        ops = [(o.key, float(o.value), bool(o.remove)) for o in entry.ops]
        try:
            if any(t == IP and n is not None for t, n in entity):
                await asyncio.to_thread(_check, entity, ops)  # may resolve a host name
            else:
                _check(entity, ops)
        except QuotaError as e:
            results[entity] = (ErrorCode(e.code), e.message)
            continue
        results[entity] = (ErrorCode.none, None)
        changes.append((entity, ops))
    if changes and not req.validate_only:
        store = _store(ctx.state)
        async with store.lock:  # one read-modify-write at a time
            await asyncio.to_thread(store.replace, store.applied(changes))
    entries = [
        {"error_code": code, "error_message": message, "entity": _components(entity)}
        for entity, (code, message) in results.items()
    ]
    return {"throttle_time": 0, "entries": entries}
