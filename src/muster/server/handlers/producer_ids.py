"""InitProducerId: idempotent producers, and transactional ones through the
transaction coordinator."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from muster.security.acl import Operation
from muster.server import authz
from muster.server.handlers.transactions import fenced_for_version, transaction_coordinator
from muster.server.state import RequestContext

# Versions before KIP-588 (InitProducerId v4) know no PRODUCER_FENCED
_FENCED_SINCE = 4


async def handle_init_producer_id(ctx: RequestContext, req: Any) -> dict[str, Any]:
    txn_id = getattr(req, "transactional_id", None)
    denied = None
    if txn_id is None and not authz.any_topic_writable(ctx):
        authz.cluster(ctx, Operation.IDEMPOTENT_WRITE)  # the audit line
        denied = ErrorCode.cluster_authorization_failed
    elif txn_id is not None and not authz.transactional_id(ctx, Operation.WRITE, txn_id):
        denied = ErrorCode.transactional_id_authorization_failed
    if denied is not None:
        return {"throttle_time": 0, "error_code": denied, "producer_id": -1, "producer_epoch": -1}
    if txn_id is None:
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.none,
            "producer_id": ctx.state.producer_ids.allocate(),
            "producer_epoch": 0,
        }
    coordinator = transaction_coordinator(ctx)
    if coordinator is None or not coordinator.loaded:
        error, pid, epoch = int(ErrorCode.coordinator_load_in_progress), -1, -1
    else:
        expected = None
        given_pid = getattr(req, "producer_id", -1)
        if given_pid is not None and given_pid >= 0:
            expected = (int(given_pid), int(req.producer_epoch))
        timeout_ms = int(req.transaction_timeout.total_seconds() * 1000)
        error, pid, epoch = await coordinator.init_producer_id(txn_id, timeout_ms, expected)
    return {
        "throttle_time": 0,
        "error_code": ErrorCode(fenced_for_version(error, ctx.api_version, _FENCED_SINCE)),
        "producer_id": pid,
        "producer_epoch": epoch,
    }
