"""commitToGroup: record a streaming query's progress as a consumer group's
committed offsets, so `muster groups describe` and Burrow show its lag.

The commits are simple commits (generation -1, member id "": OffsetCommit
without group membership), as Kafka's admin "alter offsets" does; Spark's
checkpoint stays the source of truth and nothing is ever read back from the
group. Spark reports a finished batch late (`commit(end)` arrives when the next
batch is planned, `stop()` is not reliably called), so the stream reader also
commits the `start` of every `latestOffset` call: that is the end of the last
batch Spark has finished.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from muster.client import Admin
from muster.client.errors import KafkaError
from muster.client.types import TopicPartition

log = logging.getLogger(__name__)


class GroupCommitter:
    def __init__(self, group: str) -> None:
        self.group = group
        self._last: dict[TopicPartition, int] = {}

    def commit(self, admin: Admin, offsets: Mapping[TopicPartition, int]) -> None:
        """Commits the offsets that moved since the last commit (never backwards:
        a late `commit(end)` must not undo a newer `latestOffset` commit)."""
        changed = {tp: o for tp, o in offsets.items() if o >= 0 and o > self._last.get(tp, -1)}
        if not changed:
            return
        try:
            admin.alter_group_offsets(self.group, changed)
        except KafkaError as exc:
            # Lag reporting must not fail the query; the next call commits again.
            log.warning("commitToGroup %s: offsets not committed: %s", self.group, exc)
            return
        self._last.update(changed)
