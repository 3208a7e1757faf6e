"""A consumer group's new target assignment and the records that store it."""

from __future__ import annotations

import uuid

import pytest

from muster.assignors.server.registry import UnknownAssignorError
from muster.coordinator.groups.modern.member import partitions
from muster.coordinator.groups.modern.target import SubscribedTopic, TargetMember, build_target
from muster.records.modern_group_records import (
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMetadataKey,
    consumer_group_record,
    decode_consumer_group_key,
    decode_consumer_group_value,
)

ORDERS = uuid.UUID(int=7)
TOPICS = {"orders": SubscribedTopic(ORDERS, 6)}


def _members(*ids: str) -> dict[str, TargetMember]:
    return {m: TargetMember(frozenset({"orders"})) for m in ids}


def _owned(target) -> list[int]:
    return sorted(p for parts in target.assignment.values() for p in parts.get(ORDERS, ()))


def test_every_partition_once_and_a_record_per_member_then_the_epoch() -> None:
    t = build_target("g", 1, "uniform", _members("a", "b", "c"), TOPICS, {})
    assert _owned(t) == list(range(6))
    assert all(len(parts[ORDERS]) == 2 for parts in t.assignment.values())
    keys = [k for k, _v in t.records]
    assert keys[:-1] == [ConsumerGroupTargetAssignmentMemberKey("g", m) for m in ("a", "b", "c")]
    assert keys[-1] == ConsumerGroupTargetAssignmentMetadataKey("g")
    assert t.records[-1][1].assignment_epoch == 1
    for key, value in t.records:  # Kafka's layout, read back as written
        k, v = consumer_group_record(key, value)
        assert decode_consumer_group_key(k) == key
        assert decode_consumer_group_value(int.from_bytes(k[:2], "big"), v) == value


def test_an_unchanged_target_writes_only_the_epoch() -> None:
    first = build_target("g", 1, "uniform", _members("a", "b"), TOPICS, {})
    again = build_target("g", 2, "uniform", _members("a", "b"), TOPICS, first.assignment)
    assert again.assignment == first.assignment
    assert [k for k, _v in again.records] == [ConsumerGroupTargetAssignmentMetadataKey("g")]


def test_a_joining_member_takes_only_what_balance_needs() -> None:
    first = build_target("g", 1, "uniform", _members("a", "b"), TOPICS, {})
    second = build_target("g", 2, "uniform", _members("a", "b", "c"), TOPICS, first.assignment)
    assert _owned(second) == list(range(6))
    for m in ("a", "b"):  # the old members keep two of their three
        assert second.assignment[m][ORDERS] <= first.assignment[m][ORDERS]
        assert len(second.assignment[m][ORDERS]) == 2


def test_a_static_replacement_keeps_its_predecessors_partitions() -> None:
    first = build_target("g", 1, "uniform", _members("a", "b"), TOPICS, {})
    members = {
        "a": TargetMember(frozenset({"orders"})),
        "b2": TargetMember(frozenset({"orders"}), instance_id="i-b", replaces="b"),
    }
    current = {"a": first.assignment["a"]}
    second = build_target("g", 2, "uniform", members, TOPICS, current)
    assert second.assignment["b2"] == first.assignment["b"]


def test_topics_without_metadata_are_not_assigned() -> None:
    members = {"a": TargetMember(frozenset({"orders", "not-yet"}))}
    t = build_target("g", 1, "range", members, TOPICS, {})
    assert t.assignment["a"] == partitions({ORDERS: range(6)})


def test_an_unknown_assignor_is_refused() -> None:
    with pytest.raises(UnknownAssignorError):
        build_target("g", 1, "sticky-ish", _members("a"), TOPICS, {})
