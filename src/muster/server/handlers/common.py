"""Small helpers shared by the data-plane handlers."""

from __future__ import annotations

import logging

from kio.schema.errors import ErrorCode

from muster.log.manager import LogManager, valid_topic_name
from muster.log.port import LogError
from muster.server.state import BrokerState

log = logging.getLogger(__name__)


def resolve_topic(state: BrokerState, name: str, auto_create: bool) -> ErrorCode:
    """NONE if the topic exists (auto-creating it when allowed), else the error to send."""
    logs: LogManager = state.logs
    if logs.topic(name) is not None:
        return ErrorCode.none
    if not valid_topic_name(name):
        return ErrorCode.invalid_topic_exception
    if auto_create and state.config["auto.create.topics.enable"] and not name.startswith("__"):
        try:
            logs.create_topic(name, int(state.config["num.partitions"]), {})
        except LogError as exc:  # e.g. 'a.b' when 'a_b' exists: Kafka refuses it too
            log.info("topic %s not auto-created: %s", shown(name), exc)
            return ErrorCode(exc.error_code)
        return ErrorCode.none
    return ErrorCode.unknown_topic_or_partition


def shown(name: str, limit: int = 255) -> str:
    """A client-chosen name for a log line or an error message: a 1 MiB topic
    name must not become a 1 MiB log line per request."""
    if len(name) <= limit:
        return repr(name)
    return f"{name[:limit]!r}... ({len(name):,} characters)"
