"""`muster groups ...` against a real muster broker, and `explain` rendering.

The broker tests share one scripted scenario (module fixture): a topic with
two partitions, 6 + 4 records with known timestamps; a confluent-kafka member
(client id alpha) consumes and commits 4 and 1; a kafka-python member (beta)
joins, is removed by an admin LeaveGroup with a reason, then alpha closes.
Every command is driven through typer's CliRunner and checked figure by figure.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import confluent_kafka
import confluent_kafka.admin
import pytest
from confluent_kafka import TopicPartition
from typer.testing import CliRunner

from muster import explain
from muster.cli.main import app
from tests.support.brokers import MusterProcess

# kafka-python loads its protocol schemas with importlib.resources' legacy API
pytestmark = pytest.mark.filterwarnings("ignore:.*Use files\\(\\) instead:DeprecationWarning")

WIDE = {"COLUMNS": "250"}  # rich tables: one row per line

P0_RECORDS, P1_RECORDS = 6, 4


def run(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), env=WIDE)


def rows(text: str) -> list[list[str]]:
    """The body rows of rich tables in `text`, as stripped cells."""
    return [
        [cell.strip() for cell in line.split("│")[1:-1]]
        for line in text.splitlines()
        if line.startswith("│")
    ]


def header(text: str) -> dict[str, str]:
    fields = {}
    for line in text.splitlines():
        match = re.fullmatch(r"(Group|State|Protocol|Members|Coordinator): (.*)", line.strip())
        if match:
            fields[match[1]] = match[2]
    return fields


def wait_until(
    what: str, check: Callable[[], bool], poll: Callable[[], None], timeout=30.0
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        poll()
        if check():
            return
    raise AssertionError(f"timed out waiting for {what}")


@dataclass
class Scenario:
    broker: MusterProcess
    bootstrap: str
    topic: str
    group: str
    base_ms: int  # timestamp of p0 offset 0
    alpha_id: str = ""
    beta_id: str = ""
    stable: dict[str, Any] | None = None  # outputs captured while alpha was alone and Stable

    def cli(self, *args: str) -> Any:
        return run(*args, "--bootstrap-server", self.bootstrap)

    def committed(self, group: str | None = None) -> dict[tuple[str, int], int]:
        """What a consumer of the group sees as committed (OffsetFetch), -1 when none."""
        consumer = confluent_kafka.Consumer(
            {"bootstrap.servers": self.bootstrap, "group.id": group or self.group}
        )
        try:
            got = consumer.committed(
                [TopicPartition(self.topic, 0), TopicPartition(self.topic, 1)], timeout=10
            )
        finally:
            consumer.close()
        return {(tp.topic, tp.partition): tp.offset if tp.offset >= 0 else -1 for tp in got}


def _describe(bootstrap: str, group: str) -> Any:
    admin = confluent_kafka.admin.AdminClient({"bootstrap.servers": bootstrap})
    return admin.describe_consumer_groups([group])[group].result(timeout=10)


def _produce(bootstrap: str, topic: str, base_ms: int) -> None:
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i in range(P0_RECORDS):  # p0: base, base+1s, ... base+5s
        producer.produce(topic, value=f"p0-{i}".encode(), partition=0, timestamp=base_ms + i * 1000)
    for i in range(P1_RECORDS):  # p1: base+0.5s, +2.5s, +4.5s, +6.5s
        producer.produce(
            topic, value=f"p1-{i}".encode(), partition=1, timestamp=base_ms + 500 + i * 2000
        )
    assert producer.flush(10) == 0


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    from kafka import KafkaAdminClient, KafkaConsumer
    from kafka.admin import MemberToRemove

    broker = MusterProcess(tmp_path_factory.mktemp("groups") / "data").start()
    try:
        b = broker.bootstrap
        sc = Scenario(
            broker,
            b,
            topic=f"orders-{uuid.uuid4().hex[:6]}",
            group=f"billing-{uuid.uuid4().hex[:6]}",
            base_ms=(int(time.time()) - 60) * 1000,
        )
        made = run("topics", "create", sc.topic, "--partitions", "2", "--bootstrap-server", b)
        assert made.exit_code == 0, made.output
        _produce(b, sc.topic, sc.base_ms)

        # alpha: confluent-kafka, consumes part of both partitions, commits 4 and 1
        alpha = confluent_kafka.Consumer(
            {
                "bootstrap.servers": b,
                "group.id": sc.group,
                "client.id": "alpha",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "session.timeout.ms": 10000,
                "heartbeat.interval.ms": 200,
            }
        )
        alpha.subscribe([sc.topic])
        seen: set[tuple[int, int]] = set()

        def poll_alpha() -> None:
            msg = alpha.poll(0.1)
            if msg is not None and msg.error() is None:
                seen.add((msg.partition(), msg.offset()))

        wait_until(
            "alpha to read p0 up to offset 3 and p1 offset 0",
            lambda: (0, 3) in seen and (1, 0) in seen,
            poll_alpha,
        )
        alpha.commit(
            offsets=[TopicPartition(sc.topic, 0, 4), TopicPartition(sc.topic, 1, 1)],
            asynchronous=False,
        )
        desc = _describe(b, sc.group)
        sc.alpha_id = desc.members[0].member_id

        # while alpha is alone and Stable: the commands that must refuse or report members
        sc.stable = {
            "list": sc.cli("groups", "list"),
            "describe": sc.cli("groups", "describe", sc.group),
            "members": sc.cli("groups", "describe", sc.group, "--members"),
            "reset_execute": sc.cli(
                "groups",
                "reset-offsets",
                sc.group,
                "--topic",
                sc.topic,
                "--to-earliest",
                "--execute",
            ),
            "reset_dry": sc.cli(
                "groups", "reset-offsets", sc.group, "--topic", sc.topic, "--to-earliest"
            ),
            "committed_after_dry": sc.committed(),
            "delete": sc.cli("groups", "delete", sc.group),
            "delete_offsets": sc.cli("groups", "delete-offsets", sc.group, "--topic", sc.topic),
        }

        # beta: kafka-python joins; both consume until the group is Stable with two members
        beta = KafkaConsumer(
            sc.topic,
            bootstrap_servers=b,
            group_id=sc.group,
            client_id="beta",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=10000,
            heartbeat_interval_ms=200,
        )

        def poll_both() -> None:
            poll_alpha()
            beta.poll(timeout_ms=50)

        def two_members_assigned() -> bool:
            d = _describe(b, sc.group)
            return (
                d.state == confluent_kafka.ConsumerGroupState.STABLE
                and len(d.members) == 2
                and all(m.assignment.topic_partitions for m in d.members)
            )

        wait_until("a stable group of two", two_members_assigned, poll_both)
        sc.beta_id = next(
            m.member_id for m in _describe(b, sc.group).members if m.client_id == "beta"
        )

        # an admin takes beta out with a reason (LeaveGroup v5); beta is closed unpolled
        admin = KafkaAdminClient(bootstrap_servers=b, client_id="scenario-admin")
        try:
            removed = admin.remove_group_members(
                sc.group, [MemberToRemove(member_id=sc.beta_id, reason="scripted removal")]
            )
        finally:
            admin.close()
        assert all(error.errno == 0 for error in removed.values()), removed
        beta.close(autocommit=False)

        def alpha_alone() -> bool:
            d = _describe(b, sc.group)
            return d.state == confluent_kafka.ConsumerGroupState.STABLE and [
                m.member_id for m in d.members
            ] == [sc.alpha_id]

        wait_until("alpha alone and stable again", alpha_alone, poll_alpha)
        alpha.close()  # LeaveGroup: the group becomes Empty
        wait_until(
            "the group to be Empty",
            lambda: _describe(b, sc.group).state == confluent_kafka.ConsumerGroupState.EMPTY,
            lambda: time.sleep(0.05),
        )
        yield sc
    finally:
        broker.close()


# ---- while the group is Stable ----------------------------------------------


def test_list_shows_state_and_protocol_type(scenario: Scenario) -> None:
    result = scenario.stable["list"]
    assert result.exit_code == 0, result.output
    assert [scenario.group, "Stable", "consumer", "classic"] in rows(result.stdout)


def test_describe_stable_group_offsets_lag_and_owner(scenario: Scenario) -> None:
    sc = scenario
    result = sc.stable["describe"]
    assert result.exit_code == 0, result.output
    assert header(result.stdout) == {
        "Group": sc.group,
        "State": "Stable",
        "Protocol": "range",
        "Members": "1",
        "Coordinator": "0",
    }
    # topic, partition, current, log-end, lag, member id, host, client id
    assert rows(result.stdout) == [
        [sc.topic, "0", "4", "6", "2", sc.alpha_id, "/127.0.0.1", "alpha"],
        [sc.topic, "1", "1", "4", "3", sc.alpha_id, "/127.0.0.1", "alpha"],
    ]


def test_describe_members_view(scenario: Scenario) -> None:
    result = scenario.stable["members"]
    assert result.exit_code == 0, result.output
    assert rows(result.stdout) == [
        [scenario.alpha_id, "-", "alpha", "/127.0.0.1", "2", f"{scenario.topic}(0,1)"]
    ]


def test_reset_refused_while_stable_and_dry_run_changes_nothing(scenario: Scenario) -> None:
    sc = scenario
    refused = sc.stable["reset_execute"]
    assert refused.exit_code == 1
    assert "can only be reset while it is inactive (Empty or Dead)" in refused.stderr
    assert "its state is Stable" in refused.stderr

    dry = sc.stable["reset_dry"]
    assert dry.exit_code == 0, dry.output
    assert "(dry run)" in dry.stdout
    # topic, partition, current, new, log start, log end
    assert rows(dry.stdout) == [
        [sc.topic, "0", "4", "0", "0", "6"],
        [sc.topic, "1", "1", "0", "0", "4"],
    ]
    assert "nothing committed" in dry.stderr
    assert sc.stable["committed_after_dry"] == {(sc.topic, 0): 4, (sc.topic, 1): 1}


def test_delete_refused_while_members_consume(scenario: Scenario) -> None:
    sc = scenario
    deleted = sc.stable["delete"]
    assert deleted.exit_code == 1
    assert "still has members" in deleted.stderr and "NON_EMPTY_GROUP" in deleted.stderr

    offsets = sc.stable["delete_offsets"]
    assert offsets.exit_code == 1
    assert rows(offsets.stdout) == [
        [sc.topic, "0", "GROUP_SUBSCRIBED_TO_TOPIC"],
        [sc.topic, "1", "GROUP_SUBSCRIBED_TO_TOPIC"],
    ]
    assert "2 of 2 partitions kept their offsets" in offsets.stderr


# ---- once the group is Empty (tests below run in file order) ---------------------


def test_describe_empty_group(scenario: Scenario) -> None:
    sc = scenario
    result = sc.cli("groups", "describe", sc.group)
    assert result.exit_code == 0, result.output
    assert header(result.stdout)["State"] == "Empty"
    assert header(result.stdout)["Members"] == "0"
    assert rows(result.stdout) == [
        [sc.topic, "0", "4", "6", "2", "-", "-", "-"],
        [sc.topic, "1", "1", "4", "3", "-", "-", "-"],
    ]
    assert f"Consumer group {sc.group} has no active members." in result.stderr

    listed = sc.cli("groups", "list")
    assert [sc.group, "Empty", "consumer", "classic"] in rows(listed.stdout)

    as_json = json.loads(sc.cli("groups", "describe", sc.group, "--json").stdout)
    assert as_json["group"]["state"] == "Empty"
    assert [
        (o["partition"], o["committed"], o["log_end"], o["lag"]) for o in as_json["offsets"]
    ] == [
        (0, 4, 6, 2),
        (1, 1, 4, 3),
    ]


def reset(sc: Scenario, *args: str) -> list[list[str]]:
    result = sc.cli("groups", "reset-offsets", sc.group, *args, "--execute")
    assert result.exit_code == 0, result.output
    assert f"New offsets committed for group {sc.group}" in result.stdout
    return rows(result.stdout)


def test_reset_offsets_execute_every_scenario(scenario: Scenario) -> None:
    sc = scenario
    t = sc.topic
    # beyond the log end: clamped to it (partition 0 only)
    assert reset(sc, "--topic", f"{t}:0", "--to-offset", "100") == [[t, "0", "4", "6", "0", "6"]]
    assert sc.committed() == {(t, 0): 6, (t, 1): 1}

    # shift back past the log start: clamped to 0
    assert reset(sc, "--topic", t, "--shift-by", "-5") == [
        [t, "0", "6", "1", "0", "6"],
        [t, "1", "1", "0", "0", "4"],
    ]
    assert sc.committed() == {(t, 0): 1, (t, 1): 0}

    assert reset(sc, "--topic", t, "--to-latest") == [
        [t, "0", "1", "6", "0", "6"],
        [t, "1", "0", "4", "0", "4"],
    ]
    assert sc.committed() == {(t, 0): 6, (t, 1): 4}

    # first record at or after base+2.5s: p0 offset 3 (base+3s), p1 offset 1 (base+2.5s)
    when = datetime.fromtimestamp((sc.base_ms + 2500) / 1000, tz=UTC).isoformat()
    assert reset(sc, "--topic", t, "--to-datetime", when) == [
        [t, "0", "6", "3", "0", "6"],
        [t, "1", "4", "1", "0", "4"],
    ]
    assert sc.committed() == {(t, 0): 3, (t, 1): 1}

    # later than every record: the log end, as Kafka does
    later = datetime.fromtimestamp(sc.base_ms / 1000 + 3600, tz=UTC).isoformat()
    assert reset(sc, "--topic", t, "--to-datetime", later) == [
        [t, "0", "3", "6", "0", "6"],
        [t, "1", "1", "4", "0", "4"],
    ]
    assert reset(sc, "--all-topics", "--to-offset", "2") == [
        [t, "0", "6", "2", "0", "6"],
        [t, "1", "4", "2", "0", "4"],
    ]
    assert reset(sc, "--topic", f"{t}:1", "--to-earliest") == [[t, "1", "2", "0", "0", "4"]]
    assert sc.committed() == {(t, 0): 2, (t, 1): 0}

    described = sc.cli("groups", "describe", sc.group)
    assert rows(described.stdout) == [
        [t, "0", "2", "6", "4", "-", "-", "-"],
        [t, "1", "0", "4", "4", "-", "-", "-"],
    ]


def test_reset_offsets_bad_arguments(scenario: Scenario) -> None:
    sc = scenario
    none = sc.cli("groups", "reset-offsets", sc.group, "--topic", sc.topic)
    assert none.exit_code == 2 and "give exactly one of" in none.output
    two = sc.cli(
        "groups", "reset-offsets", sc.group, "--topic", sc.topic, "--to-latest", "--to-earliest"
    )
    assert two.exit_code == 2
    bad_part = sc.cli(
        "groups", "reset-offsets", sc.group, "--topic", f"{sc.topic}:7", "--to-latest"
    )
    assert bad_part.exit_code == 1 and "has no partition 7" in bad_part.stderr
    bad_time = sc.cli(
        "groups", "reset-offsets", sc.group, "--topic", sc.topic, "--to-datetime", "yesterday"
    )
    assert bad_time.exit_code == 2 and "ISO 8601" in bad_time.output
    no_commit = sc.cli(
        "groups", "reset-offsets", "never-committed", "--topic", sc.topic, "--shift-by", "1"
    )
    assert no_commit.exit_code == 1 and "has no committed offset" in no_commit.stderr


def test_reset_creates_offsets_for_a_new_group(scenario: Scenario) -> None:
    """Like Kafka, a group that does not exist (Dead) may get offsets: a simple group."""
    sc = scenario
    fresh = f"fresh-{uuid.uuid4().hex[:6]}"
    result = sc.cli(
        "groups", "reset-offsets", fresh, "--topic", sc.topic, "--to-offset", "3", "--execute"
    )
    assert result.exit_code == 0, result.output
    assert rows(result.stdout) == [
        [sc.topic, "0", "-", "3", "0", "6"],
        [sc.topic, "1", "-", "3", "0", "4"],
    ]
    assert sc.committed(fresh) == {(sc.topic, 0): 3, (sc.topic, 1): 3}
    described = sc.cli("groups", "describe", fresh)
    assert described.exit_code == 0, described.output
    assert header(described.stdout)["State"] == "Empty"
    assert rows(described.stdout) == [
        [sc.topic, "0", "3", "6", "3", "-", "-", "-"],
        [sc.topic, "1", "3", "4", "1", "-", "-", "-"],
    ]


def test_explain_names_the_causes(scenario: Scenario) -> None:
    sc = scenario
    result = sc.cli("groups", "explain", sc.group)
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert f"Group {sc.group}: 4 rebalances recorded." in text
    heads = [line for line in text.splitlines() if line.startswith("Rebalance started")]
    assert len(heads) == 4
    assert heads[0].endswith(f"member {sc.alpha_id} joined the group.")
    assert heads[1].endswith(f"member {sc.beta_id} joined the group.")
    assert heads[2].endswith(
        f'member {sc.beta_id} left the group (LeaveGroup), giving the reason "scripted removal".'
    )
    assert heads[3].endswith(
        f"member {sc.alpha_id} left the group (LeaveGroup) without giving a reason."
    )
    assert "The group was empty at generation 0; 1 member after this change." in text
    assert "when the initial rebalance delay (group.initial.rebalance.delay.ms) had elapsed" in text
    assert "when every member had joined: generation 2 with 2 members" in text
    assert "generation 1 is stable with 1 member, protocol range." in text
    assert "generation 2 is stable with 2 members, protocol range." in text
    assert "generation 3 is stable with 1 member, protocol range." in text
    assert "generation 4 has no members: the group is empty." in text

    last = sc.cli("groups", "explain", sc.group, "--last", "1")
    assert last.exit_code == 0, last.output
    assert "4 rebalances recorded, the last 1 shown." in last.stdout
    assert [line for line in last.stdout.splitlines() if line.startswith("Rebalance")] == [heads[3]]

    # a group the broker does not know is an error, as `groups describe` says it
    unknown = sc.cli("groups", "explain", "nobody-here")
    described = sc.cli("groups", "describe", "nobody-here")
    assert unknown.exit_code == described.exit_code == 1
    assert unknown.stderr.strip() == "error: consumer group 'nobody-here' does not exist"
    assert described.stderr.strip() == unknown.stderr.strip()


def test_delete_offsets_then_delete_group(scenario: Scenario) -> None:
    sc = scenario
    result = sc.cli("groups", "delete-offsets", sc.group, "--topic", f"{sc.topic}:1")
    assert result.exit_code == 0, result.output
    assert rows(result.stdout) == [[sc.topic, "1", "deleted"]]
    assert sc.committed() == {(sc.topic, 0): 2, (sc.topic, 1): -1}

    missing = sc.cli("groups", "delete-offsets", "no-such-group", "--topic", sc.topic)
    assert missing.exit_code == 1 and "does not exist" in missing.stderr

    deleted = sc.cli("groups", "delete", sc.group)
    assert deleted.exit_code == 0, deleted.output
    assert f"Deleted group {sc.group}." in deleted.stdout
    assert sc.committed() == {(sc.topic, 0): -1, (sc.topic, 1): -1}
    listed = sc.cli("groups", "list")
    assert sc.group not in listed.stdout
    gone = sc.cli("groups", "describe", sc.group)
    assert gone.exit_code == 1 and "does not exist" in gone.stderr
    again = sc.cli("groups", "delete", sc.group)
    assert again.exit_code == 1 and "does not exist" in again.stderr

    told = sc.cli("groups", "explain", sc.group)
    assert "The group was deleted." in told.stdout


# ---- explain.py without a broker -------------------------------------------------

T0 = 1_763_769_600_000  # 2025-11-22 00:00:00 UTC


def ev(kind: str, **fields: Any) -> bytes:
    return json.dumps({"type": kind, "group_id": "g", **fields}).encode()


def started(at: int, cause: str, member: str = "", reason: str | None = None, **kw: Any) -> bytes:
    body = {
        "generation": 1,
        "from_state": "Stable",
        "cause": cause,
        "member_id": member,
        "reason": reason,
        "detail": "",
        "member_count": 2,
        "at_ms": at,
    }
    body.update(kw)
    return ev("RebalanceStarted", **body)


def join_done(at: int, generation: int, members: int, waited: str, took: int, removed=()) -> bytes:
    return ev(
        "JoinCompleted",
        generation=generation,
        protocol="range" if members else None,
        leader_id="m-1" if members else None,
        member_count=members,
        waited_for=waited,
        removed_members=list(removed),
        join_duration_ms=took,
        at_ms=at,
    )


def completed(start: int, end: int, generation: int, members: int, causes, waited, statics=0):
    return ev(
        "RebalanceCompleted",
        generation=generation,
        protocol_type="consumer",
        protocol="range" if members else None,
        leader_id="m-1" if members else None,
        member_count=members,
        static_member_count=statics,
        causes=list(causes),
        started_ms=start,
        join_completed_ms=end,
        completed_ms=end,
        duration_ms=end - start,
        waited_for=waited,
    )


def removed(at: int, member: str, cause: str, reason: str | None = None) -> bytes:
    return ev(
        "MemberRemoved",
        member_id=member,
        group_instance_id=None,
        cause=cause,
        reason=reason,
        at_ms=at,
    )


def test_explain_member_left_with_reason_then_session_expiry() -> None:
    values = [
        removed(T0, "m-2", "member_left", "shutting down for deploy"),
        started(T0, "member_left", "m-2", "shutting down for deploy", member_count=1),
        join_done(T0 + 40, 6, 1, "all_members_joined", 40),
        completed(T0, T0 + 55, 6, 1, ["member_left"], "all_members_joined"),
        b"not json at all",
        ev(
            "GroupStateChanged",
            from_state="Stable",
            to_state="PreparingRebalance",
            generation=6,
            cause="session_expired",
            at_ms=T0 + 1000,
        ),
        removed(T0 + 61_000, "m-1", "session_expired"),
        started(T0 + 61_000, "session_expired", "m-1", generation=6, member_count=0),
        join_done(T0 + 61_000, 7, 0, "all_members_joined", 0),
        completed(T0 + 61_000, T0 + 61_000, 7, 0, ["session_expired"], "all_members_joined"),
    ]
    events = explain.parse_events([*values, ev("Other", at_ms=1)], group_id="g")
    blocks = explain.explain(events)
    assert blocks == [
        [
            "Rebalance started 2025-11-22 00:00:00.000 UTC: member m-2 left the group "
            '(LeaveGroup), giving the reason "shutting down for deploy".',
            "The group was stable at generation 1; 1 member after this change.",
            "The join phase ended after 40 ms, when every member had joined: generation 6 "
            "with 1 member, leader m-1, protocol range.",
            "Completed 2025-11-22 00:00:00.055 UTC after 55 ms: generation 6 is stable "
            "with 1 member, protocol range.",
        ],
        [
            "Rebalance started 2025-11-22 00:01:01.000 UTC: member m-1 stopped heartbeating "
            "and its session timed out.",
            "The group was stable at generation 6; 0 members after this change.",
            "The join phase ended after 0 ms, when every member had joined: generation 7 "
            "with no members.",
            "Completed 2025-11-22 00:01:01.000 UTC after 0 ms: generation 7 has no members: "
            "the group is empty.",
        ],
    ]
    assert explain.explain(events, last=1) == blocks[1:]


def test_explain_rebalance_timeout_restart_and_in_progress() -> None:
    values = [
        started(T0, "member_joined", "m-3", member_count=3),
        join_done(T0 + 300_000, 8, 2, "rebalance_timeout_expired", 300_000, removed=["m-2"]),
        removed(T0 + 300_000, "m-2", "rebalance_timeout"),
        started(
            T0 + 300_010,
            "sync_timeout",
            "",
            from_state="CompletingRebalance",
            generation=8,
            member_count=2,
        ),
        join_done(T0 + 300_020, 9, 2, "all_members_joined", 300_020),
        completed(
            T0,
            T0 + 300_030,
            9,
            2,
            ["member_joined", "sync_timeout"],
            "all_members_joined",
            statics=1,
        ),
        started(T0 + 400_000, "member_metadata_changed", "m-1", "new subscription"),
    ]
    blocks = explain.explain(explain.parse_events(values))
    first, second = blocks
    assert first[0] == (
        "Rebalance started 2025-11-22 00:00:00.000 UTC: member m-3 joined the group."
    )
    assert (
        "The join phase ended after 5 min 0 s, when the rebalance timeout expired before every "
        "member had rejoined: generation 8 with 2 members, leader m-1, protocol range."
    ) in first
    assert "Dropped for not rejoining in time: m-2." in first
    assert "Member m-2 was removed: it did not rejoin before the rebalance timeout." in first
    assert (
        "Rebalance restarted 2025-11-22 00:05:00.010 UTC (from CompletingRebalance): "
        "some members did not send SyncGroup before the rebalance timeout."
    ) in first
    assert first[-2] == (
        "Completed 2025-11-22 00:05:00.030 UTC after 5 min 0 s: generation 9 is stable with "
        "2 members (1 static), protocol range."
    )
    assert first[-1] == (
        "Causes, in order: a new member joined; members did not send SyncGroup before the "
        "rebalance timeout."
    )
    assert second == [
        "Rebalance started 2025-11-22 00:06:40.000 UTC: member m-1 rejoined with a changed "
        'subscription or protocol metadata (reason "new subscription").',
        "The group was stable at generation 1; 2 members after this change.",
        "Not completed yet (or its completion was not recorded).",
    ]


def test_explain_notes_static_replacement_and_deletion() -> None:
    values = [
        ev(
            "StaticMemberReplaced",
            group_instance_id="worker-1",
            old_member_id="a",
            new_member_id="b",
            rebalance=False,
            at_ms=T0,
        ),
        ev(
            "GroupStateChanged",
            from_state="Empty",
            to_state="Dead",
            generation=3,
            cause="group_deleted",
            at_ms=T0 + 1500,
        ),
    ]
    assert explain.explain(explain.parse_events(values)) == [
        [
            "2025-11-22 00:00:00.000 UTC: Static member worker-1 rejoined under a new member "
            "id b (was a); it kept its assignment without a rebalance."
        ],
        ["2025-11-22 00:00:01.500 UTC: The group was deleted."],
    ]


def test_explain_words() -> None:
    assert explain.duration(999) == "999 ms"
    assert explain.duration(1500) == "1.5 s"
    assert explain.duration(125_000) == "2 min 5 s"
    assert explain.parse_event(b"[1,2]") is None
    assert explain.parse_event(None) is None
    assert explain.cause_sentence(explain.parse_event(started(T0, "brand_new_cause", "x"))) == (
        "brand new cause (member x)"
    )
    assert (
        explain.removal_sentence(
            explain.parse_event(removed(T0, "x", "member_left", "not provided"))
        )
        == "member x left the group without giving a reason."
    )


def test_explain_unreachable_broker() -> None:
    """No broker: one error line, exit status 1."""
    result = run(
        "groups", "explain", "g", "--bootstrap-server", "127.0.0.1:1", "--request-timeout", "1"
    )
    assert result.exit_code == 1
    assert result.stderr.startswith("error:")
