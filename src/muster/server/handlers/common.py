"""Small helpers shared by the data-plane handlers."""

from __future__ import annotations

import logging

from kio.schema.errors import ErrorCode

from muster.log.manager import LogManager, valid_topic_name
from muster.log.port import LogError
from muster.server.state import BrokerState, RequestContext

log = logging.getLogger(__name__)

SLICE = 1000  # entries a handler works through between two turns of the loop


class Slices:
    """Lets a handler working through a huge request (ListOffsets or Fetch of
    100,000 partitions, Metadata of 100,000 topics: seconds of work) give the
    event loop back every SLICE entries, so other connections' requests are
    answered meanwhile, as Kafka's other I/O threads would answer them. A
    request that reaches a slice also gets its answer encoded off the loop.

        if slices.due():
            await asyncio.sleep(0)
    """

    __slots__ = ("ctx", "n")

    def __init__(self, ctx: RequestContext) -> None:
        self.ctx = ctx
        self.n = 0

    def due(self) -> bool:
        self.n += 1
        if self.n % SLICE:
            return False
        self.ctx.large_answer = True
        return True


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
