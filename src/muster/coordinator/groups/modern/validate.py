"""Validation of a ConsumerGroupHeartbeat (Kafka's
throwIfConsumerGroupHeartbeatRequestIsInvalid and
throwIfConsumerGroupMemberEpochIsInvalid), and `Reject`, how every consumer
group handler refuses a request with a Kafka error."""

from __future__ import annotations

import re

from muster.assignors.server.registry import ASSIGNORS
from muster.coordinator import errors as E
from muster.coordinator.groups.modern.api import ConsumerGroupHeartbeat, TopicPartitionList
from muster.coordinator.groups.modern.group import LEAVE_EPOCH, STATIC_LEAVE_EPOCH
from muster.coordinator.groups.modern.member import ConsumerMember, Partitions
from muster.coordinator.groups.store import GroupStore


class Reject(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def validate(store: GroupStore, req: ConsumerGroupHeartbeat) -> None:
    """Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid."""
    if req.instance_id == "":
        raise Reject(E.INVALID_REQUEST, "InstanceId can't be empty.")
    if req.rack_id == "":
        raise Reject(E.INVALID_REQUEST, "RackId can't be empty.")
    epoch = req.member_epoch
    if epoch > 0 or epoch == LEAVE_EPOCH or (epoch == 0 and req.api_version >= 1):
        if not req.member_id:
            raise Reject(E.INVALID_REQUEST, "MemberId can't be empty.")
    if epoch == 0:
        if req.rebalance_timeout_ms == -1:
            raise Reject(E.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
        if req.owned is None or req.owned:
            raise Reject(E.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining.")
        if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
            raise Reject(
                E.INVALID_REQUEST,
                "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.",
            )
    elif epoch == STATIC_LEAVE_EPOCH:
        if not req.member_id:
            raise Reject(E.INVALID_REQUEST, "MemberId can't be empty.")
        if req.instance_id is None:
            raise Reject(E.INVALID_REQUEST, "InstanceId can't be null.")
    elif epoch < LEAVE_EPOCH:
        raise Reject(E.INVALID_REQUEST, "MemberEpoch is invalid.")
    if req.subscribed_topic_regex:  # librdkafka sends "" for no regex
        try:
            re.compile(req.subscribed_topic_regex)
        except re.error as exc:
            raise Reject(
                E.INVALID_REGULAR_EXPRESSION,
                f"SubscribedTopicRegex {req.subscribed_topic_regex!r} is invalid: {exc}",
            ) from None
    known = [a for a in store.cfg.consumer_assignors if a in ASSIGNORS]
    if req.server_assignor is not None and req.server_assignor not in known:
        raise Reject(
            E.UNSUPPORTED_ASSIGNOR,
            f"ServerAssignor {req.server_assignor} is not supported. "
            f"Supported assignors: {', '.join(known)}.",
        )


def check_epoch(member: ConsumerMember, req: ConsumerGroupHeartbeat) -> None:
    """Kafka's throwIfConsumerGroupMemberEpochIsInvalid."""
    got = req.member_epoch
    if got > member.member_epoch or (
        got < member.member_epoch
        and (got != member.previous_member_epoch or not _subset(req.owned, member.assigned))
    ):
        which = "greater" if got > member.member_epoch else "smaller"
        raise Reject(
            E.FENCED_MEMBER_EPOCH,
            f"The consumer group member has a {which}"
            f" member epoch ({got}) than the one known by the group coordinator "
            f"({member.member_epoch}). The member must abandon all its partitions and rejoin.",
        )


def _subset(owned: TopicPartitionList | None, assigned: Partitions) -> bool:
    if owned is None:
        return False
    return all(set(parts) <= assigned.get(topic, frozenset()) for topic, parts in owned)
