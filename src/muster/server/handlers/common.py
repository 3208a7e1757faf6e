"""Small helpers shared by the data-plane handlers."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from muster.log.manager import LogManager, valid_topic_name
from muster.server.state import BrokerState


def resolve_topic(state: BrokerState, name: str, auto_create: bool) -> ErrorCode:
    """NONE if the topic exists (auto-creating it when allowed), else the error to send."""
    logs: LogManager = state.logs
    if logs.topic(name) is not None:
        return ErrorCode.none
    if not valid_topic_name(name):
        return ErrorCode.invalid_topic_exception
    if auto_create and state.config["auto.create.topics.enable"] and not name.startswith("__"):
        logs.create_topic(name, int(state.config["num.partitions"]), {})
        return ErrorCode.none
    return ErrorCode.unknown_topic_or_partition
