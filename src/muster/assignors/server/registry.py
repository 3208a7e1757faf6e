"""The server-side assignors by name: what `group.consumer.assignors` and a
client's `group.remote.assignor` choose from."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import muster.assignors.server.range as range_
import muster.assignors.server.uniform as uniform
from muster.assignors.server.spec import MemberSpec, TargetAssignment, member_spec

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
