"""ApiVersions: answered from the one API table that also drives dispatch."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from muster.server.state import RequestContext


def supported_versions(table: dict[int, Any]) -> list[dict[str, int]]:
    return [
        {"api_key": key, "min_version": entry.min_version, "max_version": entry.max_version}
        for key, entry in sorted(table.items())
    ]


async def handle_api_versions(ctx: RequestContext, req: Any) -> dict[str, Any]:
    table = ctx.state.services.api_table
    return {"error_code": ErrorCode.none, "api_keys": supported_versions(table), "throttle_time": 0}
