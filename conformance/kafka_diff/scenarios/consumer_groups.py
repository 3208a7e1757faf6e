"""ConsumerGroupHeartbeat / ConsumerGroupDescribe (KIP-848): join, subscription
and regex changes, epochs, fencing, leave, static members, assignors, and the
OffsetCommit/OffsetFetch member-epoch checks."""

from __future__ import annotations

import base64
import uuid
from typing import Any

from conformance.kafka_diff.helpers import (
    CG_DESCRIBE,
    CG_HEARTBEAT,
    OFFSET_COMMIT,
    OFFSET_FETCH,
    create_topic,
    stable_member,
)
from conformance.kafka_diff.registry import register
from conformance.kafka_diff.session import Session


def new_member_id() -> str:
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def hb_body(group: str, member: str, epoch: int, **kw: Any) -> dict[str, Any]:
    body = {
        "group_id": group,
        "member_id": member,
        "member_epoch": epoch,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout": 30000 if epoch == 0 else -1,
        "subscribed_topic_names": None,
        "subscribed_topic_regex": None,
        "server_assignor": None,
        "topic_partitions": [] if epoch == 0 else None,
    }
    body.update(kw)
    return body


def hb(s: Session, v: int, label: str, group: str, member: str, epoch: int, **kw: Any) -> Any:
    return s.call(CG_HEARTBEAT, v, hb_body(group, member, epoch, **kw), label)


def hb_error(s: Session, v: int, label: str, group: str, member: str, epoch: int, **kw: Any) -> Any:
    """A heartbeat whose error is compared, not its (timing-dependent) assignment."""
    a = s.call(CG_HEARTBEAT, v, hb_body(group, member, epoch, **kw), record=False)
    s.record(label, {k: a[k] for k in ("error_code", "member_id")} if isinstance(a, dict) else a)
    return a


def owned(answer: Any) -> list[dict[str, Any]]:
    """The assignment a heartbeat answer gave, as the next request's owned partitions."""
    if isinstance(answer, dict) and answer.get("assignment"):
        return [
            {"topic_id": uuid.UUID(tp["topic_id"]), "partitions": tp["partitions"]}
            for tp in answer["assignment"]["topic_partitions"]
        ]
    return []


def cg_describe(s: Session, v: int, groups: list[str], label: str = "describe") -> Any:
    return s.call(
        CG_DESCRIBE, v, {"group_ids": groups, "include_authorized_operations": False}, label
    )


def settle(
    s: Session, g: str, members: dict[str, int], v: int = 1, expect: int = -1, **kw: Any
) -> dict[str, int]:
    """Heartbeats every member (acknowledging what it was given) until the group
    is Stable with every member at the group's epoch: Kafka 4.4 assigns off the
    heartbeat path, muster within it, so only the settled state is compared."""
    held: dict[str, list[dict[str, Any]]] = {m: [] for m in members}
    for _ in range(150):  # Kafka resolves regexes and new topics asynchronously
        for m, epoch in list(members.items()):
            a = s.call(
                CG_HEARTBEAT, v, hb_body(g, m, epoch, topic_partitions=held[m], **kw), record=False
            )
            if isinstance(a, dict) and a.get("error_code") == 0:
                members[m] = a["member_epoch"]
                if a.get("assignment") is not None:
                    held[m] = owned(a)
        d = s.call(CG_DESCRIBE, 1, {"group_ids": [g]}, record=False)
        if isinstance(d, dict):
            grp = d["groups"][0]
            assigned = sum(
                len(tp["partitions"])
                for x in grp["members"]
                for tp in x["assignment"]["topic_partitions"]
            )
            if (
                grp["group_state"] == "Stable"
                and all(x["member_epoch"] == grp["group_epoch"] for x in grp["members"])
                and expect in (-1, assigned)
            ):
                break
        import time

        time.sleep(0.1)
    return members


def _join_v(v: int):
    def run(s: Session) -> None:
        if not s.supports(CG_HEARTBEAT, v):
            return
        g, t = s.name("g"), s.name("t")
        create_topic(s, t, 2)
        m = "" if v == 0 else new_member_id()
        a = hb_error(s, v, "join", g, m, 0, subscribed_topic_names=[t], topic_partitions=[])
        m = a.get("member_id") or m
        epoch = settle(s, g, {m: a.get("member_epoch", 0)}, v, expect=2)[m]
        hb(s, v, "steady", g, m, epoch)
        cg_describe(s, 0, [g])
        hb(s, v, "leave", g, m, -1)
        cg_describe(s, 0, [g], "after_leave")

    return run


for _v in (0, 1):
    register("consumer", f"join_leave_v{_v}", _join_v(_v))


def _member(
    s: Session, g: str, topics: list[str], v: int = 1, expect: int = -1, **kw: Any
) -> tuple[str, int, Any]:
    """A member joined and settled: (member id, epoch, the describe answer)."""
    m = new_member_id()
    a = hb_error(s, v, "join", g, m, 0, subscribed_topic_names=topics, **kw)
    epoch = a.get("member_epoch", 0) if isinstance(a, dict) else 0
    epoch = settle(s, g, {m: epoch}, v, expect, **kw)[m]
    return m, epoch, cg_describe(s, 1, [g], "settled")


def subscription_change(s: Session) -> None:
    g, t1, t2 = s.name("g"), s.name("t1"), s.name("t2")
    create_topic(s, t1, 1)
    create_topic(s, t2, 1)
    m, epoch, _a = _member(s, g, [t1], expect=1)
    c = hb_error(s, 1, "subscribe_both", g, m, epoch, subscribed_topic_names=[t1, t2])
    s.record("subscribe_both_error", c.get("error_code") if isinstance(c, dict) else c)
    epoch = settle(s, g, {m: epoch}, expect=2)[m]
    cg_describe(s, 1, [g])
    c = s.call(
        CG_HEARTBEAT,
        1,
        hb_body(g, m, epoch, subscribed_topic_names=[s.name("missing")]),
        record=False,
    )
    s.record("unknown_topic_only_error", c.get("error_code") if isinstance(c, dict) else c)
    settle(s, g, {m: epoch})
    cg_describe(s, 1, [g], "unknown_topic_only")


def regex_subscription(s: Session) -> None:
    g = s.name("g")
    t1, t2 = s.name("rx-a"), s.name("rx-b")
    create_topic(s, t1, 1)
    create_topic(s, t2, 1)
    m = new_member_id()
    pattern = s.name("rx-") + ".*"
    a = hb_error(s, 1, "join_regex", g, m, 0, subscribed_topic_regex=pattern)
    epoch = a.get("member_epoch", 0)

    epoch = settle(s, g, {m: epoch}, expect=2, subscribed_topic_regex=pattern)[m]
    cg_describe(s, 1, [g])
    hb_error(s, 1, "bad_regex", g, m, epoch, subscribed_topic_regex="(unclosed")


def fencing(s: Session) -> None:
    g, t = s.name("g"), s.name("t")
    create_topic(s, t, 1)
    m, epoch, _a = _member(s, g, [t], expect=1)
    hb(s, 1, "epoch_ahead", g, m, epoch + 5)
    g2 = s.name("g2")
    m, first, _a = _member(s, g2, [t], expect=1)
    # two subscription changes: the first epoch is neither current nor previous
    t3 = s.name("t3")
    create_topic(s, t3, 1)
    epoch = first
    for topics, expect in (([t, t3], 2), ([t], 1)):
        s.call(CG_HEARTBEAT, 1, hb_body(g2, m, epoch, subscribed_topic_names=topics), record=False)
        epoch = settle(s, g2, {m: epoch}, expect=expect)[m]
    hb(s, 1, "epoch_behind", g2, m, first)
    hb(s, 1, "unknown_member", g, new_member_id(), 3)
    hb(s, 1, "unknown_group", s.name("none"), new_member_id(), 3)
    hb(s, 1, "empty_group", "", new_member_id(), 0, subscribed_topic_names=[t])
    hb(s, 1, "empty_member_v1", g, "", 0, subscribed_topic_names=[t])
    hb(s, 1, "join_without_subscription", g, new_member_id(), 0)
    hb(
        s,
        1,
        "join_without_rebalance_timeout",
        g,
        new_member_id(),
        0,
        subscribed_topic_names=[t],
        rebalance_timeout=-1,
    )
    hb(s, 1, "leave_unknown", g, new_member_id(), -1)


def stale_commit(s: Session) -> None:
    g, t = s.name("g"), s.name("t")
    create_topic(s, t, 1)
    m, epoch, _a = _member(s, g, [t])
    for label, e in (("current", epoch), ("stale", epoch - 1), ("ahead", epoch + 1)):
        body = {
            "group_id": g,
            "generation_id_or_member_epoch": e,
            "member_id": m,
            "topics": [
                {
                    "name": t,
                    "partitions": [
                        {"partition_index": 0, "committed_offset": 1, "committed_metadata": ""}
                    ],
                }
            ],
        }
        s.call(OFFSET_COMMIT, 9, body, f"commit_{label}")
    s.call(
        OFFSET_COMMIT,
        9,
        {
            "group_id": g,
            "generation_id_or_member_epoch": epoch,
            "member_id": new_member_id(),
            "topics": [],
        },
        "commit_unknown_member",
    )
    for label, e in (("current", epoch), ("stale", epoch - 1)):
        body = {
            "groups": [
                {
                    "group_id": g,
                    "member_id": m,
                    "member_epoch": e,
                    "topics": [{"name": t, "partition_indexes": [0]}],
                }
            ],
            "require_stable": True,
        }
        s.call(OFFSET_FETCH, 9, body, f"fetch_{label}")


def static_members(s: Session) -> None:
    g, t = s.name("g"), s.name("t")
    create_topic(s, t, 2)
    m1, e1, _a = _member(s, g, [t], expect=2, instance_id="inst")
    hb(
        s,
        1,
        "same_instance_while_active",
        g,
        new_member_id(),
        0,
        subscribed_topic_names=[t],
        instance_id="inst",
    )
    hb(s, 1, "temporary_leave", g, m1, -2, instance_id="inst")
    cg_describe(s, 1, [g], "after_temporary_leave")
    m2 = new_member_id()
    r = hb_error(
        s, 1, "rejoin_new_member_id", g, m2, 0, subscribed_topic_names=[t], instance_id="inst"
    )
    settle(s, g, {m2: r.get("member_epoch", 0) if isinstance(r, dict) else 0}, instance_id="inst")
    cg_describe(s, 1, [g], "rejoined")
    hb(s, 1, "old_member_id", g, m1, e1, instance_id="inst")
    hb(s, 1, "leave", g, m2, -1, instance_id="inst")
    cg_describe(s, 1, [g], "after_leave")


def assignors(s: Session) -> None:
    t = s.name("t")
    create_topic(s, t, 4)
    for name in ("uniform", "range", "sticky", "bogus"):
        g = s.name(f"g-{name}")
        m = new_member_id()
        a = hb_error(
            s, 1, f"join_{name}", g, m, 0, subscribed_topic_names=[t], server_assignor=name
        )
        if isinstance(a, dict) and a["error_code"] == 0:
            settle(s, g, {m: a["member_epoch"]}, expect=4)
        cg_describe(s, 1, [g], f"describe_{name}")


def two_members(s: Session) -> None:
    g, t = s.name("g"), s.name("t")
    create_topic(s, t, 4)
    m1, e1, _a = _member(s, g, [t], expect=4)
    m2 = new_member_id()
    b = hb(s, 1, "second_join", g, m2, 0, subscribed_topic_names=[t])
    s.record("second_join_error", b.get("error_code") if isinstance(b, dict) else b)
    settle(s, g, {m1: e1, m2: b.get("member_epoch", 0) if isinstance(b, dict) else 0}, expect=4)
    cg_describe(s, 1, [g])


def describe_errors(s: Session) -> None:
    classic = s.name("classic")
    stable_member(s, classic)
    for v in (0, 1):
        cg_describe(s, v, [s.name("none"), classic, ""], f"describe_v{v}")


register("consumer", "subscription_change", subscription_change)
register("consumer", "regex_subscription", regex_subscription)
register("consumer", "fencing", fencing)
register("consumer", "stale_commit", stale_commit)
register("consumer", "static_members", static_members)
register("consumer", "assignors", assignors)
register("consumer", "two_members", two_members)
register("consumer", "describe_errors", describe_errors)


def admin_on_consumer_groups(s: Session) -> None:
    """ListGroups type filters, classic DescribeGroups and DeleteGroups on a
    consumer (KIP-848) group."""
    g, t = s.name("g"), s.name("t")
    create_topic(s, t, 1)
    m, _epoch, _a = _member(s, g, [t], expect=1)
    for types in (["consumer"], ["classic"]):
        a = s.call(16, 5, {"states_filter": [], "types_filter": types}, record=False)
        s.record(
            f"list_{types[0]}",
            [x for x in a["groups"] if x["group_id"] == g] if isinstance(a, dict) else a,
        )
    s.call(15, 5, {"groups": [g]}, "classic_describe")
    s.call(42, 2, {"groups_names": [g]}, "delete_non_empty")
    hb(s, 1, "leave", g, m, -1)
    s.call(42, 2, {"groups_names": [g]}, "delete_empty")
    cg_describe(s, 1, [g], "after_delete")


register("consumer", "admin_on_consumer_groups", admin_on_consumer_groups)


def assignor_change(s: Session) -> None:
    """A member switches server_assignor: the group's assignor follows."""
    g, t = s.name("g"), s.name("t")
    create_topic(s, t, 2)
    m, epoch, _a = _member(s, g, [t], expect=2, server_assignor="uniform")
    a = hb_error(s, 1, "switch_to_range", g, m, epoch, server_assignor="range")
    settle(s, g, {m: epoch}, expect=2, server_assignor="range")
    cg_describe(s, 1, [g], "after_switch")
    s.record("switch_error", a.get("error_code") if isinstance(a, dict) else a)


def leave_and_rejoin(s: Session) -> None:
    """A member leaves (epoch -1), then joins again with the same id (epoch 0)."""
    g, t = s.name("g"), s.name("t")
    create_topic(s, t, 1)
    m, epoch, _a = _member(s, g, [t], expect=1)
    hb(s, 1, "leave", g, m, -1)
    hb(s, 1, "heartbeat_after_leave", g, m, epoch)
    a = hb_error(s, 1, "rejoin_same_id", g, m, 0, subscribed_topic_names=[t])
    settle(s, g, {m: a.get("member_epoch", 0) if isinstance(a, dict) else 0}, expect=1)
    cg_describe(s, 1, [g], "rejoined")


def fencing_v0(s: Session) -> None:
    """Version 0: the broker names the member; a wrong epoch is fenced, an
    unknown id is UNKNOWN_MEMBER_ID."""
    if not s.supports(CG_HEARTBEAT, 0):
        return
    g, t = s.name("g"), s.name("t")
    create_topic(s, t, 1)
    a = s.call(CG_HEARTBEAT, 0, hb_body(g, "", 0, subscribed_topic_names=[t]), record=False)
    m = a.get("member_id") if isinstance(a, dict) else None
    s.record("join_error", a.get("error_code") if isinstance(a, dict) else a)
    epoch = settle(s, g, {m: a.get("member_epoch", 0)}, 0, expect=1)[m] if m else 0
    hb(s, 0, "epoch_ahead", g, m or "", epoch + 5)
    hb(s, 0, "unknown_member", g, new_member_id(), 1)
    hb(s, 0, "leave", g, m or "", -1)


register("consumer", "assignor_change", assignor_change)
register("consumer", "leave_and_rejoin", leave_and_rejoin)
register("consumer", "fencing_v0", fencing_v0)
