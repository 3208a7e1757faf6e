"""InitProducerId for idempotent producers (no transactions)."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from muster.server.state import RequestContext


async def handle_init_producer_id(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if getattr(req, "transactional_id", None):
        # Transactions are not implemented: say so instead of pretending.
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.transactional_id_authorization_failed,
            "producer_id": -1,
            "producer_epoch": -1,
        }
    return {
        "throttle_time": 0,
        "error_code": ErrorCode.none,
        "producer_id": ctx.state.producer_ids.allocate(),
        "producer_epoch": 0,
    }
