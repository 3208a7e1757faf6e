"""Server-side partition assignors of the consumer group protocol (KIP-848):
the broker, not a member, computes the group's target assignment.

    ASSIGNORS[name](members, partitions_per_topic) -> {member_id: {topic: [partition, ...]}}

`members` maps member id -> MemberSpec (subscribed topics, its partitions in
the current target assignment, instance id); `partitions_per_topic` maps
topic -> partition count. Subscribed topics missing from it are ignored (no
metadata yet), as Kafka's coordinator hands its assignor only topics it
knows. Names are Kafka's (`group.consumer.assignors`, the client's
`group.remote.assignor`): "uniform" (the default) and "range".

Pure functions over plain data: no I/O, no clock, deterministic (the same
input gives the same output whatever the order of the mappings).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from muster.assignors.consumer import range as range_
from muster.assignors.consumer import uniform
from muster.assignors.consumer.spec import MemberSpec, TargetAssignment, member_spec

__all__ = [
    "ASSIGNORS",
    "DEFAULT_ASSIGNOR",
    "MemberSpec",
    "TargetAssignment",
    "UnknownAssignorError",
    "assign",
    "member_spec",
]

ServerAssignor = Callable[[Mapping[str, MemberSpec], Mapping[str, int]], TargetAssignment]

ASSIGNORS: dict[str, ServerAssignor] = {uniform.NAME: uniform.assign, range_.NAME: range_.assign}
DEFAULT_ASSIGNOR = uniform.NAME


class UnknownAssignorError(ValueError):
    """The group asked for an assignor the broker does not have (Kafka answers
    UNSUPPORTED_ASSIGNOR)."""


def assign(
    name: str, members: Mapping[str, MemberSpec], partitions_per_topic: Mapping[str, int]
) -> TargetAssignment:
    try:
        assignor = ASSIGNORS[name]
    except KeyError:
        raise UnknownAssignorError(
            f"unknown assignor {name!r}; known: {sorted(ASSIGNORS)}"
        ) from None
    return assignor(members, partitions_per_topic)
