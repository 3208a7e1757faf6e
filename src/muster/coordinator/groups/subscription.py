"""ConsumerProtocol metadata as the group coordinator sees it: a versioned,
forgiving view over muster's one ConsumerProtocol codec
(`muster.protocol.consumer_protocol`). The coordinator itself only needs
the subscribed topics (`subscribed_topics`); the full views serve tools and
tests.

Forgiving as Kafka's coordinator is: bytes that are not a subscription give
None rather than an error, and a subscription whose tail cannot be read
still gives its topics.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from muster.protocol import consumer_protocol as cp
from muster.protocol.consumer_protocol import TopicPartitions


@dataclass(frozen=True)
class Subscription:
    version: int
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: TopicPartitions = ()
    generation_id: int = -1
    rack_id: str | None = None


@dataclass(frozen=True)
class Assignment:
    version: int
    partitions: TopicPartitions = field(default_factory=tuple)
    user_data: bytes | None = None


def subscribed_topics(metadata: bytes) -> frozenset[str] | None:
    """The subscription's topics, or None if the bytes are not a subscription."""
    topics = cp.subscription_topics(metadata)
    return None if topics is None else frozenset(topics)


def decode_subscription(metadata: bytes) -> Subscription | None:
    """The full subscription, or None if the bytes are not one; when only the
    topics can be read (no user data, a garbled tail), just those."""
    try:
        version = cp.subscription_version(metadata)
        sub = cp.decode_subscription(metadata)
    except cp.ConsumerProtocolError:
        topics = cp.subscription_topics(metadata)
        if topics is None:
            return None
        return Subscription(cp.subscription_version(metadata), topics)
    return Subscription(
        version, sub.topics, sub.user_data, sub.owned_partitions, sub.generation_id, sub.rack_id
    )


def decode_assignment(data: bytes) -> Assignment | None:
    """A member's assignment, or None if the bytes are not one (empty bytes
    mean "nothing assigned" and decode to an empty v0 assignment)."""
    if not data:
        return Assignment(0)
    try:
        version = cp.assignment_version(data)
        a = cp.decode_assignment(data)
    except cp.ConsumerProtocolError:
        return None
    return Assignment(version, a.partitions, a.user_data)


def encode_subscription(
    topics: list[str],
    user_data: bytes | None = None,
    *,
    version: int = 0,
    owned_partitions: TopicPartitions = (),
    generation_id: int = -1,
    rack_id: str | None = None,
) -> bytes:
    sub = cp.Subscription(tuple(topics), user_data, owned_partitions, generation_id, rack_id)
    return cp.encode_subscription(sub, version)


def encode_assignment(
    partitions: TopicPartitions, user_data: bytes | None = None, version: int = 0
) -> bytes:
    return cp.encode_assignment(cp.Assignment(partitions, user_data), version)
