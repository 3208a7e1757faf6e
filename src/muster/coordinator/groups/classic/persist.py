"""Writing a classic group's GroupMetadata record. The record becomes the
group's durable state when the shard replays it (once durable); what is kept
here is only the order of this group's writes (`store_seq` / `persisted_seq`)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from muster.coordinator import errors as E
from muster.coordinator.context import Effects
from muster.coordinator.groups.classic.group import ClassicGroup
from muster.records.offsets_topic import group_metadata_record

AfterStore = Callable[[int, Effects], None]  # (append error code, effects)


def store_error_to_client(error: int) -> int:
    """Kafka's mapping of a failed group store (GroupMetadataManager.storeGroup)."""
    if error in (
        E.UNKNOWN_TOPIC_OR_PARTITION,
        E.NOT_ENOUGH_REPLICAS,
        E.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    ):
        return E.COORDINATOR_NOT_AVAILABLE
    if error in (E.NOT_LEADER_OR_FOLLOWER, E.KAFKA_STORAGE_ERROR):
        return E.NOT_COORDINATOR
    if error == E.REQUEST_TIMED_OUT:
        return E.REBALANCE_IN_PROGRESS
    if error in (E.MESSAGE_TOO_LARGE, E.RECORD_LIST_TOO_LARGE, E.INVALID_FETCH_SIZE):
        return E.UNKNOWN_SERVER_ERROR
    return error


def store_group(
    group: ClassicGroup,
    fx: Effects,
    assignment: dict[str, bytes] | None,
    then: AfterStore | None = None,
) -> None:
    """Append the group's metadata record; `then(error, fx)` runs once it is
    durable (and replayed) or failed."""
    fx.record(group_metadata_record(group.group_id, group.to_record(assignment)))
    group.store_seq += 1
    fx.after_durable(partial(_stored, group, group.store_seq, then))


def _stored(
    group: ClassicGroup, seq: int, then: AfterStore | None, error: int, fx: Effects
) -> None:
    if error == E.NONE and seq > group.persisted_seq:
        group.persisted_seq = seq
        group.has_record = True
    if then is not None:
        then(error, fx)
