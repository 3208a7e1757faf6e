"""The partition assignors' registry, shared by muster's client (the
classic-protocol leader) and broker.

    ASSIGNORS[name].assign(members, partitions_per_topic)
        -> {member_id: {topic: [partition, ...]}}

with `members` a mapping member_id -> Member(topics, owned, generation,
rack, group_instance_id) and `partitions_per_topic` topic -> count (see
muster.assignors.model). Names are the protocol names Kafka's Java client
and librdkafka register: "range", "roundrobin", "sticky",
"cooperative-sticky", so members of different clients agree on the protocol
and on the outcome.

Each Assignor also says how its members' subscriptions map to Member
(`member_data`, from a decoded ConsumerProtocol Subscription) and what user
data a member puts in its subscription (`user_data`), as Kafka's do:
range/roundrobin none; sticky its previous assignment and generation
(StickyAssignorUserData v1, the only place an eager member's previous
assignment travels); cooperative-sticky its generation (int32), with owned
partitions and generation also in subscription v1/v2 fields.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from muster.assignors import cooperative_sticky, roundrobin, sticky
from muster.assignors import range as range_
from muster.assignors.model import (
    DEFAULT_GENERATION,
    GroupAssignment,
    Member,
    RebalanceProtocol,
    TopicPartition,
    java_key,
    owned_set,
    tp_key,
)
from muster.assignors.user_data import (
    decode_cooperative_user_data,
    decode_sticky_user_data,
    encode_cooperative_user_data,
    encode_sticky_user_data,
)
from muster.protocol.consumer_protocol import (
    HIGHEST_VERSION,
    Subscription,
    assignment_from_dict,
    decode_subscription,
    encode_assignment,
)

__all__ = [
    "ASSIGNORS",
    "DEFAULT_GENERATION",
    "Assignor",
    "GroupAssignment",
    "Member",
    "RebalanceProtocol",
    "TopicPartition",
    "get",
    "perform_assignment",
    "subscription_for",
]

AssignFn = Callable[[Mapping[str, Any], Mapping[str, int]], GroupAssignment]


@dataclass(frozen=True)
class Assignor:
    name: str
    supported_protocols: tuple[RebalanceProtocol, ...]
    assign: AssignFn
    member_data: Callable[[Subscription, str | None], Member]
    """A decoded subscription (and the member's group.instance.id) as Member."""
    user_data: Callable[[Iterable[TopicPartition] | None, int], bytes | None]
    """The subscription user data for (previous assignment or None before the
    first one, its generation)."""


def _rack(sub: Subscription) -> str | None:
    return sub.rack_id or None  # Kafka treats an empty rack as none


def _plain_member(sub: Subscription, group_instance_id: str | None) -> Member:
    return Member(sub.topics, sub.owned(), sub.generation_id, _rack(sub), group_instance_id)


def _sticky_member(sub: Subscription, group_instance_id: str | None) -> Member:
    # Kafka's StickyAssignor reads the previous assignment from user data
    # only; without user data we fall back to the v1+/v2+ fields.
    decoded = decode_sticky_user_data(sub.user_data)
    if decoded is None:
        owned, generation = sub.owned(), sub.generation_id
    else:
        owned, gen = decoded
        generation = DEFAULT_GENERATION if gen is None else gen
    return Member(sub.topics, owned, generation, _rack(sub), group_instance_id)


def _cooperative_member(sub: Subscription, group_instance_id: str | None) -> Member:
    generation = sub.generation_id
    if generation < 0:  # v0/v1 subscription: the generation is in user data
        from_user_data = decode_cooperative_user_data(sub.user_data)
        generation = DEFAULT_GENERATION if from_user_data is None else from_user_data
    return Member(sub.topics, sub.owned(), generation, _rack(sub), group_instance_id)


def _no_user_data(owned: Iterable[TopicPartition] | None, generation: int) -> bytes | None:
    return None


def _sticky_user_data(owned: Iterable[TopicPartition] | None, generation: int) -> bytes | None:
    if owned is None:  # no assignment yet: Kafka sends null
        return None
    return encode_sticky_user_data(owned_set(owned), generation)


def _cooperative_user_data(owned: Iterable[TopicPartition] | None, generation: int) -> bytes:
    return encode_cooperative_user_data(generation)


ASSIGNORS: dict[str, Assignor] = {
    a.name: a
    for a in (
        Assignor(
            range_.NAME, (RebalanceProtocol.EAGER,), range_.assign, _plain_member, _no_user_data
        ),
        Assignor(
            roundrobin.NAME,
            (RebalanceProtocol.EAGER,),
            roundrobin.assign,
            _plain_member,
            _no_user_data,
        ),
        Assignor(
            sticky.NAME,
            (RebalanceProtocol.EAGER,),
            sticky.assign,
            _sticky_member,
            _sticky_user_data,
        ),
        Assignor(
            cooperative_sticky.NAME,
            (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER),
            cooperative_sticky.assign,
            _cooperative_member,
            _cooperative_user_data,
        ),
    )
}


def get(name: str) -> Assignor:
    try:
        return ASSIGNORS[name]
    except KeyError:
        raise ValueError(f"unknown assignor {name!r}; known: {sorted(ASSIGNORS)}") from None


def subscription_for(
    name: str,
    topics: Iterable[str],
    owned: Iterable[TopicPartition] | None = None,
    generation: int = DEFAULT_GENERATION,
    rack: str | None = None,
    previous: Iterable[TopicPartition] | None = None,
) -> Subscription:
    """The Subscription a member using assignor `name` sends, as Kafka's Java
    client writes it: topics sorted, `owned` (the partitions it holds now)
    grouped and sorted, its generation, rack, and the assignor's user data
    built from `previous` (its last assignment; defaults to `owned`, None
    before the first). An eager member has revoked everything before it
    joins: it passes owned=() and previous=<its last assignment>."""
    a = get(name)
    owned_tps = sorted(owned_set(owned or ()), key=tp_key)
    grouped: dict[str, list[int]] = {}
    for topic, partition in owned_tps:
        grouped.setdefault(topic, []).append(partition)
    if previous is None:
        previous = owned
    return Subscription(
        topics=tuple(sorted(set(topics), key=java_key)),
        user_data=a.user_data(None if previous is None else owned_set(previous), generation),
        owned_partitions=tuple((t, tuple(ps)) for t, ps in grouped.items()),
        generation_id=generation,
        rack_id=rack,
    )


def perform_assignment(
    name: str,
    members: Mapping[str, tuple[bytes | Subscription, str | None]],
    partitions_per_topic: Mapping[str, int],
    version: int = HIGHEST_VERSION,
) -> dict[str, bytes]:
    """The group leader's step: member_id -> (subscription, bytes or decoded,
    group.instance.id) in, member_id -> encoded Assignment out."""
    a = get(name)
    decoded = {
        member_id: a.member_data(
            sub if isinstance(sub, Subscription) else decode_subscription(sub), instance
        )
        for member_id, (sub, instance) in members.items()
    }
    result = a.assign(decoded, partitions_per_topic)
    return {
        member_id: encode_assignment(assignment_from_dict(parts), version)
        for member_id, parts in result.items()
    }
