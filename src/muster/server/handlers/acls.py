"""CreateAcls, DescribeAcls, DeleteAcls: the durable ACL set behind the authorizer."""

from __future__ import annotations

import asyncio
from typing import Any

from kio.schema.errors import ErrorCode

from muster.security.acl import AclBinding, AclFilter, InvalidAcl, Operation
from muster.server import authz
from muster.server.security import BrokerSecurity
from muster.server.state import RequestContext

_DISABLED = "No Authorizer is configured on the broker"


def _security(ctx: RequestContext) -> BrokerSecurity:
    security = ctx.state.services.security
    assert security is not None, "the broker sets it before it listens"
    return security


def _filter(f: Any) -> AclFilter:
    return AclFilter(
        int(f.resource_type_filter),
        f.resource_name_filter,
        int(getattr(f, "pattern_type_filter", 3)),  # v0 knows LITERAL only
        f.principal_filter,
        f.host_filter,
        int(f.operation),
        int(f.permission_type),
    )


def _invalid_filter(f: AclFilter) -> bool:
    """Kafka refuses filters naming UNKNOWN anything (INVALID_REQUEST)."""
    return 0 in (f.resource_type, f.pattern_type, f.operation, f.permission)


async def _save(security: BrokerSecurity, bindings: list[AclBinding]) -> None:
    await asyncio.to_thread(security.acls.replace, bindings)
    assert security.authorizer is not None
    security.authorizer.set_bindings(bindings)


async def handle_create_acls(ctx: RequestContext, req: Any) -> dict[str, Any]:
    security = _security(ctx)
    if security.authorizer is None:
        error, message = ErrorCode.security_disabled, _DISABLED
        return {"results": [{"error_code": error, "error_message": message}] * len(req.creations)}
    if not authz.cluster(ctx, Operation.ALTER):
        error = ErrorCode.cluster_authorization_failed
        return {"results": [{"error_code": error, "error_message": None}] * len(req.creations)}
    results, bindings = [], list(security.acls.bindings)
    for c in req.creations:
        acl = AclBinding(
            int(c.resource_type),
            c.resource_name,
            int(getattr(c, "resource_pattern_type", 3)),
            c.principal,
            c.host,
            int(c.operation),
            int(c.permission_type),
        )
        try:
            acl.validate()
        except InvalidAcl as exc:
            results.append({"error_code": ErrorCode.invalid_request, "error_message": str(exc)})
            continue
        if acl not in bindings:
            bindings.append(acl)
        results.append({"error_code": ErrorCode.none, "error_message": None})
    if bindings != security.acls.bindings:
        await _save(security, bindings)
    return {"results": results}


async def handle_describe_acls(ctx: RequestContext, req: Any) -> dict[str, Any]:
    security = _security(ctx)
    if security.authorizer is None:
        return {"error_code": ErrorCode.security_disabled, "error_message": _DISABLED}
    if not authz.cluster(ctx, Operation.DESCRIBE):
        return {
            "error_code": ErrorCode.cluster_authorization_failed,
            "error_message": "Cluster authorization failed.",
        }
    f = _filter(req)
    if _invalid_filter(f):
        return {"error_code": ErrorCode.invalid_request, "error_message": "invalid filter"}
    grouped: dict[tuple[int, str, int], list[dict[str, Any]]] = {}
    for acl in security.acls.bindings:
        if f.matches(acl):
            grouped.setdefault((acl.resource_type, acl.resource_name, acl.pattern_type), []).append(
                {
                    "principal": acl.principal,
                    "host": acl.host,
                    "operation": acl.operation,
                    "permission_type": acl.permission,
                }
            )
    resources = [
        {"resource_type": t, "resource_name": n, "pattern_type": p, "acls": acls}
        for (t, n, p), acls in grouped.items()
    ]
    return {"error_code": ErrorCode.none, "error_message": None, "resources": resources}


async def handle_delete_acls(ctx: RequestContext, req: Any) -> dict[str, Any]:
    security = _security(ctx)
    if security.authorizer is None:
        error, message = ErrorCode.security_disabled, _DISABLED
        return {
            "filter_results": [{"error_code": error, "error_message": message}] * len(req.filters)
        }
    if not authz.cluster(ctx, Operation.ALTER):
        error = ErrorCode.cluster_authorization_failed
        return {"filter_results": [{"error_code": error}] * len(req.filters)}
    remaining, results = list(security.acls.bindings), []
    for raw in req.filters:
        f = _filter(raw)
        if _invalid_filter(f):
            results.append({"error_code": ErrorCode.invalid_request, "matching_acls": []})
            continue
        matched = [a for a in security.acls.bindings if f.matches(a)]
        remaining = [a for a in remaining if a not in matched]
        results.append(
            {
                "error_code": ErrorCode.none,
                "matching_acls": [
                    {
                        "error_code": ErrorCode.none,
                        "resource_type": a.resource_type,
                        "resource_name": a.resource_name,
                        "pattern_type": a.pattern_type,
                        "principal": a.principal,
                        "host": a.host,
                        "operation": a.operation,
                        "permission_type": a.permission,
                    }
                    for a in matched
                ],
            }
        )
    if remaining != security.acls.bindings:
        await _save(security, remaining)
    return {"filter_results": results}
