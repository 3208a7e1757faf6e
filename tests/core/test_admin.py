"""DescribeGroups and ListGroups with real states and filters."""

from __future__ import annotations

from muster.coordinator import errors as E
from muster.coordinator import requests as rq
from muster.coordinator.responses import (
    AUTHORIZED_OPERATIONS_OMITTED,
    DescribedGroup,
    DescribedGroupMember,
    ListedGroup,
    ListGroupsResponse,
)
from tests.core.harness import sub


def test_describe_stable_group_has_full_member_data(h) -> None:
    a, b = h.form(2)
    rid = h.send(rq.DescribeGroups(("g", "missing")))
    groups = h.reply(rid).groups
    assert groups[0] == DescribedGroup(
        E.NONE,
        "g",
        "Stable",
        "consumer",
        "range",
        (
            DescribedGroupMember(a, None, "c0", "/10.0.0.1", sub("t"), f"a-{a}".encode()),
            DescribedGroupMember(b, None, "c1", "/10.0.0.1", sub("t"), f"a-{b}".encode()),
        ),
    )
    assert groups[0].authorized_operations == AUTHORIZED_OPERATIONS_OMITTED
    assert groups[1] == DescribedGroup(E.NONE, "missing", "Dead", "", "")


def test_describe_rebalancing_group_omits_metadata(h) -> None:
    # ... but not the last assignment: Kafka 4.4 shows it in every state (kafka-diff)
    a, b = h.form(2)
    h.join(a, client="c0")
    g = h.reply(h.send(rq.DescribeGroups(("g",)))).groups[0]
    assert g.group_state == "PreparingRebalance" and g.protocol_data == ""
    assert [(m.member_id, m.member_metadata, m.member_assignment) for m in g.members] == [
        (a, b"", f"a-{a}".encode()),
        (b, b"", f"a-{b}".encode()),
    ]


def test_list_groups_with_state_and_type_filters(h) -> None:
    h.form(2)
    h.form(1, group="solo")
    h.join(h.shard.group("solo").leader_id, group="solo", client="c0")
    h.reply(h.commit({("t", 0): 1}, group="simple"))

    def listing(states=(), types=()):
        resp = h.reply(h.send(rq.ListGroups(states, types)))
        assert resp.error_code == 0
        return sorted(resp.groups, key=lambda x: x.group_id)

    assert listing() == [
        ListedGroup("g", "consumer", "Stable"),
        ListedGroup("simple", "", "Empty"),
        ListedGroup("solo", "consumer", "CompletingRebalance"),
    ]
    assert [x.group_id for x in listing(("stable", "Empty"))] == ["g", "simple"]
    assert listing(types=("consumer",)) == []
    assert len(listing(types=("Classic",))) == 3


def test_loading_shard_answers_load_in_progress() -> None:
    from muster.coordinator import CoordinatorShard

    shard = CoordinatorShard(0, {"offsets.topic.num.partitions": 1})
    res = shard.handle(1, rq.ListGroups(), 0)
    assert res.replies == [(1, ListGroupsResponse(E.COORDINATOR_LOAD_IN_PROGRESS))]
    res = shard.handle(2, rq.Heartbeat("g", 1, "m"), 0)
    assert res.replies[0][1].error_code == E.NONE  # Kafka answers heartbeats blindly
    res = shard.handle(3, rq.JoinGroup("g", "", 10000, 10000, "consumer", (("r", b""),)), 0)
    assert res.replies[0][1].error_code == E.COORDINATOR_LOAD_IN_PROGRESS
    res = shard.handle(4, rq.OffsetFetch((rq.FetchGroup("g"),)), 0)
    assert res.replies[0][1].groups[0].error_code == E.COORDINATOR_LOAD_IN_PROGRESS
    shard.loaded(0)
    res = shard.handle(5, rq.ListGroups(), 0)
    assert res.replies == [(5, ListGroupsResponse(E.NONE, ()))]


def test_config_from_broker_properties() -> None:
    from muster.config import BrokerConfig
    from muster.coordinator import CoordinatorConfig

    cfg = CoordinatorConfig.from_mapping(
        BrokerConfig(
            {
                "offsets.topic.num.partitions": "7",
                "offsets.retention.minutes": "2",
                "group.initial.rebalance.delay.ms": "0",
                "group.max.size": "3",
                "group.min.session.timeout.ms": "100",
                "group.max.session.timeout.ms": "200",
                "offsets.retention.check.interval.ms": "1000",
            }
        )
    )
    assert (
        cfg.num_partitions,
        cfg.offsets_retention_ms,
        cfg.group_initial_rebalance_delay_ms,
        cfg.group_max_size,
        cfg.group_min_session_timeout_ms,
        cfg.group_max_session_timeout_ms,
        cfg.offsets_retention_check_interval_ms,
    ) == (7, 120000, 0, 3, 100, 200, 1000)
