"""confluent-kafka (librdkafka) consumer groups against muster: formation, rebalance on
join/leave/crash, static membership, cooperative-sticky incremental rebalancing."""

from __future__ import annotations

import time
from collections import Counter

from tests.support.brokers import MusterProcess
from tests.wire.clients import create_topic
from tests.wire.group_helpers import (
    ChildMember,
    GroupMember,
    all_partitions,
    describe_group,
    exact_cover,
    group_muster,  # noqa: F401 - fixture
    produce_values,
    wait_group_stable,
    wait_until,
)

FORM_TIMEOUT = 60.0


def _consume_exactly_once(members: list[GroupMember], values: list[bytes], timeout: float) -> None:
    """Every value is consumed by the group, and by exactly one member exactly once."""
    wanted = set(values)

    def all_seen() -> bool:
        seen: set[bytes] = set()
        for m in members:
            seen |= set(m.values())
        return wanted <= seen

    wait_until(all_seen, timeout, f"{len(values)} messages consumed by the group")
    counts: Counter[bytes] = Counter()
    for m in members:
        counts.update(v for v in m.values() if v in wanted)
    dupes = {v: n for v, n in counts.items() if n != 1}
    assert not dupes, f"messages consumed more than once: {sorted(dupes.items())[:10]}"


def test_group_of_five_then_six_then_five_covers_every_partition_once(
    group_muster: MusterProcess,  # noqa: F811
) -> None:
    b = group_muster.bootstrap
    topic, group = "g-cover", "g-cover-group"
    create_topic(b, topic, partitions=10)
    everything = all_partitions(topic, 10)
    members: list[GroupMember] = []
    try:
        members = [GroupMember(b, group, [topic], **{"client.id": f"c{i}"}) for i in range(5)]
        wait_group_stable(b, group, members, everything, FORM_TIMEOUT)
        assert all(len(m.assignment()) == 2 for m in members), [
            sorted(m.assignment()) for m in members
        ]
        batch_a = [f"a-{i}".encode() for i in range(300)]
        produce_values(b, topic, batch_a, 10)
        _consume_exactly_once(members, batch_a, 30)

        # a sixth member joins: everybody rebalances, still one owner per partition
        seen_events = [len(m.event_log()) for m in members]
        members.append(GroupMember(b, group, [topic], **{"client.id": "c5"}))
        wait_group_stable(b, group, members, everything, FORM_TIMEOUT)
        for m, n in zip(members[:5], seen_events, strict=True):
            kinds = [k for k, _ in m.event_log()[n:]]
            assert "revoke" in kinds and "assign" in kinds, (m.name, m.event_log())
        assert members[5].assignment(), "the new member got no partitions"
        desc = describe_group(b, group)
        assert sorted(m.client_id for m in desc.members) == [f"c{i}" for i in range(6)]
        batch_b = [f"b-{i}".encode() for i in range(300)]
        produce_values(b, topic, batch_b, 10)
        _consume_exactly_once(members, batch_a + batch_b, 30)

        # one member leaves (close -> LeaveGroup): its partitions move to the others
        leaver = next(m for m in members if m.assignment())
        moved = leaver.assignment()
        members.remove(leaver)
        leaver.close()
        wait_group_stable(b, group, members, everything, FORM_TIMEOUT)
        new_owners = {tp: m.name for m in members for tp in m.assignment()}
        assert moved <= set(new_owners), (moved, new_owners)
        batch_c = [f"c-{i}".encode() for i in range(300)]
        produce_values(b, topic, batch_c, 10)
        _consume_exactly_once([*members, leaver], batch_a + batch_b + batch_c, 30)
        assert not any(m.errors for m in members), [m.errors for m in members]
    finally:
        for m in members:
            m.abandon()


def test_sigkilled_member_partitions_move_after_session_timeout(
    group_muster: MusterProcess,  # noqa: F811
) -> None:
    b = group_muster.bootstrap
    topic, group = "g-crash", "g-crash-group"
    session_s = 2.0
    create_topic(b, topic, partitions=4)
    everything = all_partitions(topic, 4)
    child = ChildMember(b, group, topic, "doomed", int(session_s * 1000))
    survivor = None
    try:
        wait_until(lambda: child.assignment() == everything, FORM_TIMEOUT, "child owns the topic")
        survivor = GroupMember(
            b,
            group,
            [topic],
            **{"client.id": "survivor", "session.timeout.ms": 2000, "heartbeat.interval.ms": 300},
        )

        def split() -> bool:
            theirs = child.assignment()
            mine = survivor.assignment()
            return (
                bool(mine) and bool(theirs) and not (mine & theirs) and mine | theirs == everything
            )

        wait_until(split, FORM_TIMEOUT, "survivor and child split the partitions")
        wait_until(
            lambda: group_state_is(b, group, "STABLE", 2), FORM_TIMEOUT, "group Stable with 2"
        )
        before = survivor.assignment()
        assert before != everything

        child.kill()  # SIGKILL: no LeaveGroup, only the session timeout can notice
        killed_at = time.monotonic()
        wait_until(
            lambda: survivor.assignment() == everything,
            session_s + 20,
            "survivor to take over every partition",
            interval=0.05,
        )
        took = time.monotonic() - killed_at
        assert took <= session_s + 6, f"takeover took {took:.1f}s for a {session_s}s session"
        wait_until(lambda: group_state_is(b, group, "STABLE", 1), 20, "group Stable with 1 member")

        after = [f"after-{i}".encode() for i in range(100)]
        produce_values(b, topic, after, 4)
        wait_until(
            lambda: set(after) <= set(survivor.values()), 30, "messages produced after the kill"
        )
    finally:
        child.abandon()
        if survivor is not None:
            survivor.abandon()


def group_state_is(bootstrap: str, group: str, state: str, members: int) -> bool:
    desc = describe_group(bootstrap, group)
    return bool(desc.state.name == state and len(desc.members) == members)


def member_ids_by_client(bootstrap: str, group: str) -> dict[str, str]:
    return {m.client_id: m.member_id for m in describe_group(bootstrap, group).members}


def test_static_member_rejoin_keeps_assignment_without_rebalance(
    group_muster: MusterProcess,  # noqa: F811
) -> None:
    b = group_muster.bootstrap
    topic, group = "g-static", "g-static-group"
    session_ms = 6000
    create_topic(b, topic, partitions=4)
    everything = all_partitions(topic, 4)
    static_conf = {
        "group.instance.id": "instance-a",
        "client.id": "static-a",
        "session.timeout.ms": session_ms,
    }
    a = other = a2 = None
    try:
        a = GroupMember(b, group, [topic], **static_conf)
        other = GroupMember(b, group, [topic], **{"client.id": "other"})
        wait_group_stable(b, group, [a, other], everything, FORM_TIMEOUT)
        a_parts = a.assignment()
        other_events = other.event_log()
        ids_before = member_ids_by_client(b, group)
        old_a_member_id = ids_before["static-a"]
        desc = describe_group(b, group)
        statics = {m.group_instance_id: m.member_id for m in desc.members if m.group_instance_id}
        assert statics == {"instance-a": old_a_member_id}

        a.close()  # a static member does not send LeaveGroup on close
        closed_at = time.monotonic()
        a2 = GroupMember(b, group, [topic], **static_conf)
        wait_until(lambda: a2.assignment() == a_parts, session_ms / 1000, "static rejoin")
        assert time.monotonic() - closed_at < session_ms / 1000

        # Had the old member id stayed in the group, its session would expire now
        # and rebalance everyone: watch the other member past that moment.
        deadline = closed_at + session_ms / 1000 + 3
        while time.monotonic() < deadline:
            assert other.event_log() == other_events, "the other member was rebalanced"
            time.sleep(0.2)
        assert a2.event_log() == [("assign", a_parts)]
        desc = describe_group(b, group)
        assert desc.state.name == "STABLE"
        by_client = {m.client_id: m for m in desc.members}
        assert sorted(by_client) == ["other", "static-a"]
        # the other member kept its identity; the static one got a new member id
        assert by_client["other"].member_id == ids_before["other"]
        assert by_client["static-a"].member_id != old_a_member_id
        assert by_client["static-a"].group_instance_id == "instance-a"
        described = {
            (tp.topic, tp.partition) for tp in by_client["static-a"].assignment.topic_partitions
        }
        assert described == a_parts
    finally:
        for m in (a, other, a2):
            if m is not None:
                m.abandon()


def test_cooperative_sticky_revokes_only_moved_partitions(
    group_muster: MusterProcess,  # noqa: F811
) -> None:
    b = group_muster.bootstrap
    topic, group = "g-coop", "g-coop-group"
    create_topic(b, topic, partitions=6)
    everything = all_partitions(topic, 6)
    conf = {"partition.assignment.strategy": "cooperative-sticky"}
    first = second = None
    try:
        first = GroupMember(b, group, [topic], **conf, **{"client.id": "first"})
        wait_group_stable(b, group, [first], everything, FORM_TIMEOUT)
        assert describe_group(b, group).partition_assignor == "cooperative-sticky"
        events_before = len(first.event_log())

        second = GroupMember(b, group, [topic], **conf, **{"client.id": "second"})
        wait_group_stable(b, group, [first, second], everything, FORM_TIMEOUT)
        kept = first.assignment()
        assert len(kept) == 3 and len(second.assignment()) == 3

        new_events = first.event_log()[events_before:]
        revoked = [parts for kind, parts in new_events if kind == "revoke"]
        assert revoked, f"first member never revoked anything: {new_events}"
        assert all(parts != everything for parts in revoked), new_events
        assert frozenset().union(*revoked) == everything - kept, new_events
        assert not [e for e in new_events if e[0] == "lost"], new_events
        # incremental: the second member only ever received, never gave back
        assert [k for k, _ in second.event_log()].count("revoke") == 0, second.event_log()
        assert exact_cover([first, second], everything)
    finally:
        for m in (first, second):
            if m is not None:
                m.abandon()


def test_second_live_static_member_with_same_instance_id_fences_the_first(
    group_muster: MusterProcess,  # noqa: F811
) -> None:
    b = group_muster.bootstrap
    topic, group = "g-fence", "g-fence-group"
    create_topic(b, topic, partitions=2)
    everything = all_partitions(topic, 2)
    conf = {"group.instance.id": "twin", "heartbeat.interval.ms": 300}
    old = new = None
    try:
        old = GroupMember(b, group, [topic], **conf, **{"client.id": "twin-old"})
        wait_group_stable(b, group, [old], everything, FORM_TIMEOUT)
        new = GroupMember(b, group, [topic], **conf, **{"client.id": "twin-new"})
        # the newcomer takes over the instance id; the old member's next request is
        # answered FENCED_INSTANCE_ID, which librdkafka raises as a fatal error
        wait_until(
            lambda: any("fenced" in e.lower() for e in old.errors),
            30,
            "the old static member to be fenced",
        )
        wait_until(lambda: new.assignment() == everything, 30, "the new member to own the topic")
        desc = describe_group(b, group)
        # Kafka swaps the member id of the instance (client id/host stay the original's)
        new_id = new.call(lambda c: c.memberid())
        assert [(m.member_id, m.group_instance_id) for m in desc.members] == [(new_id, "twin")]
    finally:
        for m in (old, new):
            if m is not None:
                m.abandon()
