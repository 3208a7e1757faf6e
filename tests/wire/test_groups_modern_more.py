"""KIP-848 (`group.protocol=consumer`) over real sockets against muster, the
cases issue 12 lists beyond formation: a group shared by muster's own client
and confluent-kafka 2.16, scaling with only moved partitions revoked, a
SIGKILLed member, regex subscription, and the AdminClient's view of classic
and consumer groups side by side."""

from __future__ import annotations

import threading
import time
from functools import partial
from typing import Any

from muster.client import Consumer as MusterConsumer
from tests.support.brokers import MusterProcess
from tests.wire import test_groups_modern as kip848
from tests.wire.clients import create_topic
from tests.wire.group_helpers import (
    TP,
    ChildMember,
    GroupMember,
    admin,
    all_partitions,
    exact_cover,
    produce_values,
    wait_until,
)

CONSUMER = kip848.CONSUMER
broker = kip848.broker  # the same broker settings (300 ms heartbeat, 6 s session)


class Ownership:
    """Who owns which partition, as every member's callbacks say, across both
    clients: an assign of a partition another member still holds is the
    double ownership the consumer protocol must never produce."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.owner: dict[TP, str] = {}
        self.violations: list[str] = []

    def assign(self, name: str, parts: list[TP]) -> None:
        with self.lock:
            for tp in parts:
                if self.owner.get(tp, name) != name:
                    self.violations.append(f"{name} got {tp} still owned by {self.owner[tp]}")
                self.owner[tp] = name

    def revoke(self, name: str, parts: list[TP]) -> None:
        with self.lock:
            for tp in parts:
                if self.owner.get(tp) == name:
                    del self.owner[tp]


class TrackedMember(GroupMember):
    """A confluent-kafka member that also reports to a shared Ownership."""

    def __init__(self, ownership: Ownership, *args: Any, **conf: Any) -> None:
        self.ownership = ownership
        super().__init__(*args, **conf)

    def _on_assign(self, consumer: Any, partitions: list[Any]) -> None:
        self.ownership.assign(self.name, [(p.topic, p.partition) for p in partitions])
        super()._on_assign(consumer, partitions)

    def _on_revoke(self, consumer: Any, partitions: list[Any]) -> None:
        super()._on_revoke(consumer, partitions)
        self.ownership.revoke(self.name, [(p.topic, p.partition) for p in partitions])

    def _on_lost(self, consumer: Any, partitions: list[Any]) -> None:
        super()._on_lost(consumer, partitions)
        self.ownership.revoke(self.name, [(p.topic, p.partition) for p in partitions])


def _tps(parts: Any) -> list[TP]:
    return [(p.topic, p.partition) for p in parts]


def test_a_group_shared_by_muster_client_and_confluent_kafka(broker: MusterProcess) -> None:
    b, topic, group = broker.bootstrap, "cp-shared", "cp-shared-g"
    create_topic(b, topic, partitions=6)
    owners = Ownership()
    ours = MusterConsumer(
        {"bootstrap.servers": b, "group.id": group, **CONSUMER, "client.id": "muster-0"}
    )
    ours.subscribe(
        [topic],
        on_assign=lambda _c, parts: owners.assign("muster-0", _tps(parts)),
        on_revoke=lambda _c, parts: owners.revoke("muster-0", _tps(parts)),
        on_lost=lambda _c, parts: owners.revoke("muster-0", _tps(parts)),
    )
    theirs = [
        TrackedMember(owners, b, group, [topic], **CONSUMER, **{"client.id": f"ck-{i}"})
        for i in range(2)
    ]
    expected = all_partitions(topic, 6)

    def covered(live: list[GroupMember], with_ours: bool) -> bool:
        ours.poll(0.1)  # muster's client runs its callbacks inside poll
        sets = [set(m.assignment()) for m in live]
        if with_ours:
            sets.append({(tp.topic, tp.partition) for tp in ours.assignment()})
        return (
            all(sets)
            and sum(len(s) for s in sets) == len(expected)
            and set().union(*sets) == expected
        )

    try:
        wait_until(lambda: covered(theirs, True), 30, "6 partitions over 3 mixed members")
        mine = {(tp.topic, tp.partition) for tp in ours.assignment()}
        # a confluent-kafka member leaves: its partitions move, the rest stay put
        kept = theirs[0].assignment()
        theirs[1].close()
        wait_until(lambda: covered(theirs[:1], True), 30, "the leaver's partitions moved")
        assert kept <= theirs[0].assignment()
        assert mine <= {(tp.topic, tp.partition) for tp in ours.assignment()}
        # muster's member leaves: the confluent-kafka one takes everything
        ours.close()
        wait_until(lambda: exact_cover(theirs[:1], expected), 30, "all on the last member")
        assert not owners.violations, owners.violations
        assert not [m.errors for m in theirs if m.errors]
    finally:
        for m in theirs:
            m.abandon()
        ours.close()


SCALE = 20  # the 1 -> 20 -> 1


def _close_all(members: list[GroupMember]) -> None:
    """Closes members in parallel (each leaves with epoch -1 on its own thread)."""
    for m in members:
        m._stop.set()
    for m in members:
        m.close()


def _events_since(members: list[GroupMember], marks: list[int]) -> list[list[Any]]:
    return [m.event_log()[n:] for m, n in zip(members, marks, strict=True)]


def test_scaling_1_to_20_to_1_revokes_only_moved_partitions(broker: MusterProcess) -> None:
    b, topic, group = broker.bootstrap, "cp-scale", "cp-scale-g"
    n_parts = 2 * SCALE
    create_topic(b, topic, partitions=n_parts)
    expected = all_partitions(topic, n_parts)
    owners = Ownership()

    def join(i: int) -> GroupMember:
        return TrackedMember(owners, b, group, [topic], **CONSUMER, **{"client.id": f"s{i}"})

    def balanced(live: list[GroupMember]) -> bool:
        each = n_parts // len(live)
        return exact_cover(live, expected) and all(
            len(m.assignment()) in (each, each + 1) for m in live
        )

    members = [join(0)]
    try:
        wait_until(lambda: exact_cover(members, expected), 30, "the first member owns all")
        first_had = members[0].assignment()
        mark = len(members[0].event_log())
        members += [join(i) for i in range(1, SCALE)]
        wait_until(lambda: balanced(members), 60, f"{SCALE} members, 2 partitions each")
        # the first member revoked exactly what moved away and kept the rest
        revoked = [parts for kind, parts in members[0].event_log()[mark:] if kind != "assign"]
        kept = members[0].assignment()
        assert kept <= first_had
        assert set().union(*revoked) == first_had - kept
        assert sum(len(r) for r in revoked) == len(first_had - kept)  # each revoked once
        for m in members[1:]:  # newcomers: assigned only, never revoked
            assert {kind for kind, _ in m.event_log()} == {"assign"}, (m.name, m.event_log())

        # 20 -> 10 -> 1: survivors only gain; none of them sees a revoke
        for size in (SCALE // 2, 1):
            live = members[:size]
            had = [m.assignment() for m in live]
            marks = [len(m.event_log()) for m in live]
            _close_all(members[size:])
            members = live
            wait_until(partial(balanced, live), 30, f"{size} members cover all")
            for m, before, events in zip(live, had, _events_since(live, marks), strict=True):
                assert before <= m.assignment()
                assert all(kind == "assign" for kind, _ in events), (m.name, events)
        assert not owners.violations, owners.violations
        assert not [m.errors for m in members if m.errors]
    finally:
        for m in members:
            m.abandon()


def test_a_sigkilled_member_loses_its_partitions_after_the_session_timeout(
    broker: MusterProcess,
) -> None:
    b, topic, group = broker.bootstrap, "cp-kill", "cp-kill-g"
    create_topic(b, topic, partitions=4)
    expected = all_partitions(topic, 4)
    survivor = GroupMember(b, group, [topic], **CONSUMER, **{"client.id": "survivor"})
    doomed = ChildMember(b, group, topic, "doomed", 0, protocol="consumer")
    try:
        wait_until(
            lambda: (
                survivor.assignment()
                and doomed.assignment()
                and survivor.assignment() | doomed.assignment() == expected
                and not survivor.assignment() & doomed.assignment()
            ),
            30,
            "4 partitions split between the two",
        )
        kept, lost = survivor.assignment(), doomed.assignment()
        mark = len(survivor.event_log())
        doomed.kill()  # no leave heartbeat: only the 6 s session timeout fences it
        killed = time.monotonic()
        wait_until(lambda: survivor.assignment() == expected, 30, "the dead member's partitions")
        # not before the session timeout: the broker had no other way to know
        assert time.monotonic() - killed >= 5.0
        # the survivor keeps consuming its own partitions: it only gains
        assert {kind for kind, _ in survivor.event_log()[mark:]} == {"assign"}
        assert survivor.assignment() - kept == lost
        client = admin(b)  # kept: the futures need their client alive
        desc = client.describe_consumer_groups([group])[group].result(30)
        assert [m.client_id for m in desc.members] == ["survivor"]
    finally:
        survivor.abandon()
        doomed.abandon()


def test_a_regex_subscription_picks_up_a_topic_created_later(broker: MusterProcess) -> None:
    b, group = broker.bootstrap, "cp-regex-g"
    create_topic(b, "rx-a", partitions=2)
    create_topic(b, "other-rx", partitions=1)  # does not match: never assigned
    members = [
        GroupMember(b, group, ["^rx-.*"], **CONSUMER, **{"client.id": f"r{i}"}) for i in range(2)
    ]
    try:
        wait_until(lambda: exact_cover(members, all_partitions("rx-a", 2)), 30, "rx-a covered")
        # no member re-subscribes; like Kafka, muster re-resolves a group's regex
        # at most every 10 s (regex.REFRESH_INTERVAL_MS), hence this test's length
        create_topic(b, "rx-b", partitions=2)
        later = all_partitions("rx-a", 2) | all_partitions("rx-b", 2)
        wait_until(lambda: exact_cover(members, later), 30, "rx-b assigned too")
        produce_values(b, "rx-b", [b"new-1", b"new-2"], 2)
        wait_until(
            lambda: sorted(v for m in members for v in m.values()) == [b"new-1", b"new-2"],
            30,
            "rx-b's records consumed",
        )
        assert not [m.errors for m in members if m.errors]
    finally:
        for m in members:
            m.abandon()


def test_admin_lists_and_describes_classic_and_consumer_groups(broker: MusterProcess) -> None:
    from confluent_kafka import ConsumerGroupState, ConsumerGroupType

    b, topic = broker.bootstrap, "cp-admin"
    create_topic(b, topic, partitions=2)
    classic = GroupMember(b, "cp-admin-classic", [topic], **{"client.id": "cl"})
    modern = GroupMember(b, "cp-admin-consumer", [topic], **CONSUMER, **{"client.id": "co"})
    client = admin(b)  # kept: the futures need their client alive
    try:
        for m in (classic, modern):
            wait_until(lambda m=m: exact_cover([m], all_partitions(topic, 2)), 30, m.name)

        listed = client.list_consumer_groups(request_timeout=15).result(20)
        assert not listed.errors, listed.errors
        kinds = {g.group_id: (g.type, g.state) for g in listed.valid}
        assert kinds["cp-admin-classic"] == (ConsumerGroupType.CLASSIC, ConsumerGroupState.STABLE)
        assert kinds["cp-admin-consumer"] == (
            ConsumerGroupType.CONSUMER,
            ConsumerGroupState.STABLE,
        )
        only = client.list_consumer_groups(types={ConsumerGroupType.CONSUMER}).result(20)
        assert [g.group_id for g in only.valid] == ["cp-admin-consumer"]

        futures = client.describe_consumer_groups(["cp-admin-classic", "cp-admin-consumer"])
        old, new = (futures[g].result(20) for g in ("cp-admin-classic", "cp-admin-consumer"))
        assert (old.type, old.state) == (ConsumerGroupType.CLASSIC, ConsumerGroupState.STABLE)
        assert (new.type, new.state) == (ConsumerGroupType.CONSUMER, ConsumerGroupState.STABLE)
        assert old.partition_assignor == "range"  # librdkafka's first protocol, chosen
        assert new.partition_assignor == "uniform"  # the broker's default server assignor
        for desc, name in ((old, "cl"), (new, "co")):
            assert [m.client_id for m in desc.members] == [name]
            assert {tp.partition for tp in desc.members[0].assignment.topic_partitions} == {0, 1}
    finally:
        classic.abandon()
        modern.abandon()


def test_an_emptied_group_switches_protocol_and_resumes_from_its_commits(
    broker: MusterProcess,
) -> None:
    """Offline migration both ways: classic -> consumer -> classic, each new
    member starting where the last one committed (online migration, classic
    and consumer members in one live group: test_groups_migration.py)."""
    from confluent_kafka import ConsumerGroupType

    b, topic, group = broker.bootstrap, "cp-migrate", "cp-migrate-g"
    create_topic(b, topic, partitions=2)
    client = admin(b)  # kept: the futures need their client alive
    batches = [[f"{round_}-{i}".encode() for i in range(10)] for round_ in range(3)]
    kinds = {"classic": ConsumerGroupType.CLASSIC, "consumer": ConsumerGroupType.CONSUMER}
    for round_, protocol in enumerate(("classic", "consumer", "classic")):
        produce_values(b, topic, batches[round_], 2)
        m = GroupMember(
            b, group, [topic], **{"group.protocol": protocol, "enable.auto.commit": "false"}
        )
        try:
            wait_until(lambda m=m: len(m.values()) >= 10, 30, f"round {round_} consumed")
            assert sorted(m.values()) == sorted(batches[round_])  # nothing from before
            desc = client.describe_consumer_groups([group])[group].result(30)
            assert desc.type == kinds[protocol]
            m.call(lambda c: c.commit(asynchronous=False))
            m.close()
        finally:
            m.abandon()


def test_consumer_group_heartbeat_v0_is_served(broker: MusterProcess) -> None:
    """v0 has no subscribed_topic_regex: its join used to close the connection
    (kafka-diff: Kafka 4.4 answers it)."""
    from tests.support.security import RawClient

    create_topic(broker.bootstrap, "hb-v0", partitions=1)
    raw = RawClient(broker.port)
    try:
        body = {
            "group_id": "hb-v0-group",
            "member_id": "",
            "member_epoch": 0,
            "rebalance_timeout": 30000,
            "subscribed_topic_names": ["hb-v0"],
            "topic_partitions": [],
        }
        answer = raw.call(68, 0, body)
    finally:
        raw.close()
    assert answer.error_code == 0 and answer.member_epoch >= 1 and answer.member_id
