"""ShareGroupHeartbeat / ShareGroupDescribe (KIP-932): join, the answer's
shape, fencing, unknown members, an empty member id, a first heartbeat
without topics, leave, and describing the group. muster serves them by
default, as Kafka 4.4 does (with `muster.share.enable=false` every call here
is `<unsupported>`)."""

from __future__ import annotations

import time
import uuid
from typing import Any

from conformance.kafka_diff.helpers import create_topic
from conformance.kafka_diff.registry import register
from conformance.kafka_diff.session import Session

SG_HEARTBEAT, SG_DESCRIBE = 76, 77


def _hb(s: Session, label: str, group: str, member: str, epoch: int, topics: Any = None) -> Any:
    body = {
        "group_id": group,
        "member_id": member,
        "member_epoch": epoch,
        "rack_id": None,
        "subscribed_topic_names": topics,
    }
    return s.call(SG_HEARTBEAT, 1, body, label)


def join_describe_leave(s: Session) -> None:
    if not s.supports(SG_HEARTBEAT, 1):
        return
    topic, group = s.name("t"), s.name("g")
    create_topic(s, topic, 2)
    member = str(uuid.uuid4())
    joined = _hb(s, "join", group, member, 0, [topic])
    epoch = joined.get("member_epoch", 0) if isinstance(joined, dict) else 0
    # Kafka 4.4 assigns a partition once its share state is initialised (off
    # the heartbeat path): only the settled member is compared
    for _ in range(100):
        body = {
            "group_id": group,
            "member_id": member,
            "member_epoch": epoch,
            "rack_id": None,
            "subscribed_topic_names": None,
        }
        a = s.call(SG_HEARTBEAT, 1, body, record=False)
        if not isinstance(a, dict) or a["error_code"]:
            break
        epoch = a["member_epoch"]
        if a["assignment"] and a["assignment"]["topic_partitions"]:
            break
        time.sleep(0.1)
    body = {"group_ids": [group], "include_authorized_operations": False}
    s.call(SG_DESCRIBE, 1, body, "describe")
    _hb(s, "leave", group, member, -1)


def errors(s: Session) -> None:
    if not s.supports(SG_HEARTBEAT, 1):
        return
    topic, group = s.name("t"), s.name("g")
    create_topic(s, topic, 1)
    member = str(uuid.uuid4())
    _hb(s, "no_topics_first", group, member, 0)
    _hb(s, "empty_member", group, "", 0, [topic])
    _hb(s, "unknown_member", group, str(uuid.uuid4()), 1)
    _hb(s, "join", group, member, 0, [topic])
    _hb(s, "fenced", group, member, 7)
    body = {"group_ids": [s.name("nope")], "include_authorized_operations": False}
    s.call(SG_DESCRIBE, 1, body, "describe_unknown")


def classic_apis(s: Session) -> None:
    """What the classic group APIs say of a share group with a member:
    DescribeGroups, ListGroups (with and without a type filter), and
    DescribeShareGroupOffsets of a group that does not exist."""
    if not s.supports(SG_HEARTBEAT, 1):
        return
    topic, group = s.name("t"), s.name("g")
    create_topic(s, topic, 1)
    member = str(uuid.uuid4())
    _hb(s, "join", group, member, 0, [topic])
    body = {"groups": [group], "include_authorized_operations": False}
    s.call(15, 5, body, "describe_groups")
    listed = s.call(16, 5, {"states_filter": [], "types_filter": ["share"]}, record=False)
    if isinstance(listed, dict):  # other scenarios' groups come and go: only this one
        mine = [g for g in listed.get("groups", []) if g.get("group_id") == group]
        s.record("list_share_groups", {"error_code": listed["error_code"], "groups": mine})
    offsets = {"groups": [{"group_id": s.name("nope"), "topics": None}]}
    s.call(90, 1, offsets, "describe_offsets_unknown")
    _hb(s, "leave", group, member, -1)


def reset_configs(s: Session) -> None:
    """`share.auto.offset.reset` values a GROUP resource takes or refuses
    (KIP-1106's `by_duration:` with an ISO-8601 duration)."""
    if not s.supports(SG_HEARTBEAT, 1):
        return
    group = s.name("g")
    for label, value in (
        ("latest", "latest"),
        ("by_duration_hour", "by_duration:PT1H"),
        ("by_duration_days", "by_duration:P2DT3H4M5.5S"),
        ("by_duration_zero", "by_duration:PT0S"),
        ("by_duration_lower", "by_duration:pt1h"),
        ("by_duration_negative", "by_duration:-PT1H"),
        ("by_duration_no_p", "by_duration:1H"),
        ("by_duration_empty", "by_duration:"),
        ("by_duration_years", "by_duration:P1Y"),
        ("unknown", "newest"),
    ):
        config = {"name": "share.auto.offset.reset", "config_operation": 0, "value": value}
        body = {
            "resources": [{"resource_type": 32, "resource_name": group, "configs": [config]}],
            "validate_only": True,
        }
        s.call(44, 1, body, label)


def config_bounds(s: Session) -> None:
    """Group configs against the broker's bounds (both brokers' defaults):
    a share group's lock duration, session timeout and heartbeat interval,
    a consumer group's session timeout, a session not above its heartbeat."""
    if not s.supports(SG_HEARTBEAT, 1):
        return
    group = s.name("g")
    for label, configs in (
        ("lock_floor", {"share.record.lock.duration.ms": "999"}),
        ("lock_below_min", {"share.record.lock.duration.ms": "3000"}),
        ("lock_min", {"share.record.lock.duration.ms": "15000"}),
        ("lock_max", {"share.record.lock.duration.ms": "60000"}),
        ("lock_above_max", {"share.record.lock.duration.ms": "60001"}),
        ("lock_not_a_number", {"share.record.lock.duration.ms": "soon"}),
        ("share_session_below_min", {"share.session.timeout.ms": "44999"}),
        ("share_session_max", {"share.session.timeout.ms": "60000"}),
        ("share_heartbeat_above_max", {"share.heartbeat.interval.ms": "15001"}),
        ("consumer_session_above_max", {"consumer.session.timeout.ms": "60001"}),
        ("consumer_heartbeat_below_min", {"consumer.heartbeat.interval.ms": "4999"}),
    ):
        entries = [
            {"name": name, "config_operation": 0, "value": value} for name, value in configs.items()
        ]
        body = {
            "resources": [{"resource_type": 32, "resource_name": group, "configs": entries}],
            "validate_only": True,
        }
        s.call(44, 1, body, label)


register("share_groups", "join_describe_leave", join_describe_leave)
register("share_groups", "config_bounds", config_bounds)
register("share_groups", "reset_configs", reset_configs)
register("share_groups", "classic_apis", classic_apis)
register("share_groups", "errors", errors)
