"""Authorization checks for handlers, as Kafka's AuthHelper makes them.

Every check names the principal and host of the request; a denial the client
asked for by name is logged on `muster.audit` (Kafka's authorizer log), one
line per denial; filtering (a Metadata listing, ListGroups) is not logged.
Without `authorizer.class.name` everything is allowed and authorized
operations are every operation the resource supports, as in Kafka.
"""

from __future__ import annotations

from collections.abc import Iterable

from muster.security.acl import (
    CLUSTER_NAME,
    Operation,
    ResourceType,
    all_operations_bits,
)
from muster.server.state import RequestContext

TOPIC, GROUP, CLUSTER, TXN = (
    ResourceType.TOPIC,
    ResourceType.GROUP,
    ResourceType.CLUSTER,
    ResourceType.TRANSACTIONAL_ID,
)


def enabled(ctx: RequestContext) -> bool:
    security = ctx.state.services.security
    return security is not None and security.authorizer is not None


def allowed(
    ctx: RequestContext, op: Operation, rtype: ResourceType, name: str, log: bool = True
) -> bool:
    security = ctx.state.services.security
    if security is None or security.authorizer is None:
        return True  # before the request's api name is looked up for a denial's log line
    return bool(
        security.allowed(ctx.principal, ctx.client_host, op, rtype, name, ctx.api_name, log)
    )


def cluster(ctx: RequestContext, op: Operation, log: bool = True) -> bool:
    return allowed(ctx, op, CLUSTER, CLUSTER_NAME, log)


def topic(ctx: RequestContext, op: Operation, name: str, log: bool = True) -> bool:
    return allowed(ctx, op, TOPIC, name, log)


def group(ctx: RequestContext, op: Operation, name: str) -> bool:
    return allowed(ctx, op, GROUP, name)


def transactional_id(ctx: RequestContext, op: Operation, name: str) -> bool:
    return allowed(ctx, op, TXN, name)


def denied_topics(ctx: RequestContext, op: Operation, names: Iterable[str]) -> set[str]:
    """The names (each checked once) on which `op` is denied."""
    if not enabled(ctx):
        return set()
    return {n for n in set(names) if not topic(ctx, op, n)}


def may_create_topic(ctx: RequestContext, name: str) -> bool:
    """Create on the cluster or on the topic (Kafka checks the cluster quietly)."""
    return cluster(ctx, Operation.CREATE, log=False) or topic(ctx, Operation.CREATE, name)


def any_topic_writable(ctx: RequestContext) -> bool:
    """KIP-679: an idempotent producer needs IdempotentWrite on the cluster or
    Write on some topic."""
    security = ctx.state.services.security
    if security is None or security.authorizer is None:
        return True
    if cluster(ctx, Operation.IDEMPOTENT_WRITE, log=False):
        return True
    return bool(
        security.authorizer.any_allowed(ctx.principal, ctx.client_host, Operation.WRITE, TOPIC)
    )


def operations(ctx: RequestContext, rtype: ResourceType, name: str) -> int:
    """The authorized-operations bit field of a Metadata/DescribeGroups answer."""
    security = ctx.state.services.security
    if security is None or security.authorizer is None:
        return all_operations_bits(rtype)
    return int(
        security.authorizer.authorized_operations(ctx.principal, ctx.client_host, rtype, name)
    )
