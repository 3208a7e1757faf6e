"""Hand-made `__consumer_offsets` group records (Kafka's schemas, muster's
codec) for the derivation tests: a classic group's generations, a consumer
group's epochs, a tombstone, and records that are not group records."""

from __future__ import annotations

from muster.protocol.consumer_protocol import Assignment, encode_assignment
from muster.records import modern_group_records as cg
from muster.records import offsets_topic as ot

Record = tuple[bytes, bytes | None, int]  # key, value, timestamp ms


def member(member_id: str, parts: dict[str, list[int]]) -> ot.MemberMetadataValue:
    client = member_id.split("-")[0]
    return ot.MemberMetadataValue(
        member_id,
        None,
        client,
        "/127.0.0.1",
        30_000,
        6_000,
        b"",
        encode_assignment(Assignment(parts)),
    )


def generation(group: str, number: int, at_ms: int, *members: ot.MemberMetadataValue) -> Record:
    value = ot.GroupMetadataValue(
        "consumer",
        number,
        "range" if members else None,
        members[0].member_id if members else None,
        at_ms,
        members,
    )
    key, data = ot.group_metadata_record(group, value)
    return key, data, at_ms + 5  # stored a little after the state changed


def removed(group: str, at_ms: int) -> Record:
    key, _ = ot.group_metadata_record(group, None)
    return key, None, at_ms


def commit(group: str, offset: int, at_ms: int) -> Record:
    key, value = ot.offset_commit_record(
        group, "t", 0, ot.OffsetCommitValue(offset, -1, "", at_ms, -1)
    )
    return key, value, at_ms


def group_epoch(group: str, epoch: int, at_ms: int) -> Record:
    key, value = cg.consumer_group_record(
        cg.ConsumerGroupMetadataKey(group), cg.ConsumerGroupMetadataValue(epoch)
    )
    return key, value, at_ms


def member_epoch(group: str, member_id: str, epoch: int, at_ms: int) -> Record:
    key, value = cg.consumer_group_record(
        cg.ConsumerGroupCurrentMemberAssignmentKey(group, member_id),
        cg.ConsumerGroupCurrentMemberAssignmentValue(epoch, epoch - 1, 0),
    )
    return key, value, at_ms


A = member("a-1", {"t": [0, 1, 2]})
A2 = member("a-1", {"t": [0, 1]})
B = member("b-1", {"t": [2]})

# a classic group "g": a joins (1), b joins (2), the same generation written
# again (2), b leaves (3), everyone leaves (4: Empty), the group is deleted, and
# a joins the new group (1); commits and another group's record in between
CLASSIC = [
    generation("g", 1, 1_000, A),
    commit("g", 5, 1_500),
    generation("g", 2, 3_000, A2, B),
    generation("other", 7, 3_100, B),
    generation("g", 2, 3_050, A2, B),
    generation("g", 3, 7_000, A),
    generation("g", 4, 9_000),
    removed("g", 10_000),
    generation("g", 1, 12_000, A),
]
