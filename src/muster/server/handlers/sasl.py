"""SaslHandshake, SaslAuthenticate (answered from the connection's Session) and
the SCRAM credential APIs (Describe/AlterUserScramCredentials, KIP-554)."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from kio.schema.errors import ErrorCode

from muster.security import scram
from muster.security.acl import CLUSTER_NAME, Operation, ResourceType
from muster.server.clock import now_ms
from muster.server.security import BrokerSecurity
from muster.server.state import RequestContext


def _security(ctx: RequestContext) -> BrokerSecurity:
    security = ctx.state.services.security
    assert security is not None, "the broker sets it before it listens"
    return security


async def handle_sasl_handshake(ctx: RequestContext, req: Any) -> dict[str, Any]:
    session = ctx.session
    if session is None or not session.listener.sasl:
        return {"error_code": ErrorCode.illegal_sasl_state, "mechanisms": []}
    error, mechanisms = session.handshake(req.mechanism, ctx.api_version)
    return {"error_code": error, "mechanisms": mechanisms}


async def handle_sasl_authenticate(ctx: RequestContext, req: Any) -> dict[str, Any]:
    session = ctx.session
    if session is None or not session.listener.sasl:
        return {"error_code": ErrorCode.illegal_sasl_state, "error_message": "not a SASL listener"}
    error, message, reply, lifetime = session.authenticate(bytes(req.auth_bytes), now_ms())
    return {
        "error_code": error,
        "error_message": message,
        "auth_bytes": reply,
        "session_lifetime": lifetime,
    }


def _cluster_allowed(ctx: RequestContext, op: Operation) -> bool:
    return _security(ctx).allowed(
        ctx.principal, ctx.client_host, op, ResourceType.CLUSTER, CLUSTER_NAME, ctx.api_name
    )


async def handle_describe_user_scram_credentials(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if not _cluster_allowed(ctx, Operation.DESCRIBE):
        return {"error_code": ErrorCode.cluster_authorization_failed, "results": []}
    store = _security(ctx).credentials.users()
    names = [u.name for u in req.users] if req.users else sorted(store)
    counts = Counter(names)
    results = []
    for name in dict.fromkeys(names):
        if counts[name] > 1:
            error, message, infos = ErrorCode.duplicate_resource, "duplicate user", []
        elif name not in store:
            error, message, infos = (
                ErrorCode.resource_not_found,
                "Attempt to describe a user credential that does not exist",
                [],
            )
        else:
            error, message = ErrorCode.none, None
            infos = [
                {"mechanism": scram.MECHANISM_CODES[m], "iterations": c.iterations}
                for m, c in sorted(store[name].items())
            ]
        results.append(
            {"user": name, "error_code": error, "error_message": message, "credential_infos": infos}
        )
    return {"error_code": ErrorCode.none, "results": results}


async def handle_alter_user_scram_credentials(ctx: RequestContext, req: Any) -> dict[str, Any]:
    security = _security(ctx)
    users = list(dict.fromkeys([d.name for d in req.deletions] + [u.name for u in req.upsertions]))
    if not _cluster_allowed(ctx, Operation.ALTER):
        return {
            "results": [
                {"user": u, "error_code": ErrorCode.cluster_authorization_failed} for u in users
            ]
        }
    errors: dict[str, tuple[ErrorCode, str]] = {}
    seen: Counter[tuple[str, int]] = Counter(
        [(d.name, d.mechanism) for d in req.deletions]
        + [(u.name, u.mechanism) for u in req.upsertions]
    )
    for (name, _mech), n in seen.items():
        if n > 1:
            errors.setdefault(name, (ErrorCode.duplicate_resource, "a credential named twice"))
    deletions, upserts = [], []
    for d in req.deletions:
        mech = _mechanism(errors, d.name, d.mechanism)
        if mech is None:
            continue
        if security.credentials.get(d.name, mech) is None:
            missing = "Attempt to delete a user credential that does not exist"
            errors.setdefault(d.name, (ErrorCode.resource_not_found, missing))
        else:
            deletions.append((d.name, mech))
    for u in req.upsertions:
        mech = _mechanism(errors, u.name, u.mechanism)
        if mech is None:
            continue
        if not scram.MIN_ITERATIONS <= u.iterations <= scram.MAX_ITERATIONS:
            bounds = f"iterations must be {scram.MIN_ITERATIONS}..{scram.MAX_ITERATIONS}"
            errors.setdefault(u.name, (ErrorCode.unacceptable_credential, bounds))
        elif not u.salt or not u.salted_password:
            errors.setdefault(u.name, (ErrorCode.unacceptable_credential, "empty salt/password"))
        else:
            cred = scram.credential_from_salted(
                mech, bytes(u.salt), bytes(u.salted_password), u.iterations
            )
            upserts.append((u.name, mech, cred))
    # A user with any bad entry changes nothing, as Kafka validates per user.
    deletions = [d for d in deletions if d[0] not in errors]
    upserts = [u for u in upserts if u[0] not in errors]
    if deletions or upserts:
        await asyncio.to_thread(security.credentials.apply, upserts, deletions)
    return {
        "results": [
            {
                "user": u,
                "error_code": errors.get(u, (ErrorCode.none, None))[0],
                "error_message": errors.get(u, (ErrorCode.none, None))[1],
            }
            for u in users
        ]
    }


def _mechanism(errors: dict[str, tuple[ErrorCode, str]], name: str, code: int) -> str | None:
    """The mechanism's name, or None after recording why the entry is refused."""
    mech = scram.MECHANISM_NAMES.get(code)
    if not name:
        errors.setdefault(name, (ErrorCode.unacceptable_credential, "empty user name"))
    elif mech is None:
        errors.setdefault(name, (ErrorCode.unsupported_sasl_mechanism, "unknown mechanism"))
    else:
        return mech
    return None
