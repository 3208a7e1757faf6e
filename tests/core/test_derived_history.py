"""`derive`, the one derivation of a group's history from `__consumer_offsets`
(the console on the driver, `muster analyze` per group on Spark), on
hand-made records: generations with their members, joins, departures and
assignment changes, consumer-group epochs, a tombstone, and records it must
pass over (commits, other groups, bytes that do not decode)."""

from __future__ import annotations

from muster.coordinator.derived import derive, group_id_of
from tests.support.group_records import CLASSIC, commit, group_epoch, member_epoch


def test_classic_generations_with_joins_departures_and_moves() -> None:
    steps = derive(CLASSIC, "g")
    assert [(s.kind, s.number) for s in steps] == [
        ("generation", 1),
        ("generation", 2),
        ("generation", 2),
        ("generation", 3),
        ("generation", 4),
        ("removed", -1),
        ("generation", 1),
    ]
    one, two, again, three, empty, _, new = steps
    assert [m.client_id for m in two.members] == ["a", "b"]
    assert two.joined == ("b-1",) and two.moved == ("a-1",) and two.left == ()
    assert again.joined == again.left == again.moved == ()  # the same generation again
    assert three.left == ("b-1",) and three.moved == ("a-1",)
    assert empty.members == () and empty.left == ("a-1",) and empty.protocol is None
    assert new.joined == ("a-1",)  # the group was removed: a is new to it
    assert one.members[0].assignment == {("t", 0), ("t", 1), ("t", 2)}
    # the generation's own state timestamp, not the record's
    assert [s.at_ms for s in steps] == [1_000, 3_000, 3_050, 7_000, 9_000, 10_000, 12_000]


def test_consumer_group_epochs_and_what_is_passed_over() -> None:
    records = [
        group_epoch("cg", 1, 100),
        member_epoch("cg", "m1", 1, 110),
        commit("cg", 3, 120),
        group_epoch("elsewhere", 9, 130),
        (b"\x00\x02\x00\x09trunc", b"\x00\x03", 140),  # a key that does not decode
        (group_epoch("cg", 2, 150)[0], b"\x00\x00\xff", 150),  # a value that does not
        group_epoch("cg", 2, 160),
    ]
    steps = derive(records, "cg")
    assert [(s.kind, s.number, s.member_id, s.at_ms) for s in steps] == [
        ("epoch", 1, None, 100),
        ("member epoch", 1, "m1", 110),
        ("epoch", 2, None, 160),
    ]


def test_group_id_of_names_only_history_records() -> None:
    assert group_id_of(CLASSIC[0][0]) == "g"
    assert group_id_of(bytearray(group_epoch("cg", 1, 0)[0])) == "cg"  # as Spark hands it
    assert group_id_of(member_epoch("cg", "m", 1, 0)[0]) == "cg"
    assert group_id_of(commit("g", 1, 0)[0]) is None
    assert group_id_of(b"\x00\x02\x00\x09trunc") is None
    assert group_id_of(b"\x00") is None
    assert group_id_of(None) is None
