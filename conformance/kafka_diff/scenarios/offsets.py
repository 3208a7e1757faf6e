"""OffsetCommit / OffsetFetch (every version: simple and member commits,
require_stable, all topics, several groups), TxnOffsetCommit, OffsetDelete,
DeleteGroups, ListGroups (state and type filters)."""

from __future__ import annotations

from conformance.kafka_diff.helpers import (
    DELETE_GROUPS,
    LIST_GROUPS,
    OFFSET_COMMIT,
    OFFSET_DELETE,
    OFFSET_FETCH,
    TXN_OFFSET_COMMIT,
    create_topic,
    describe,
    init_producer_id,
    stable_member,
)
from conformance.kafka_diff.registry import register
from conformance.kafka_diff.session import Session


def commit_body(
    group: str,
    topic: str,
    parts: dict[int, int],
    member: str = "",
    generation: int = -1,
    instance: str | None = None,
) -> dict:
    return {
        "group_id": group,
        "generation_id_or_member_epoch": generation,
        "member_id": member,
        "group_instance_id": instance,
        "retention_time": -1,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {
                        "partition_index": p,
                        "committed_offset": o,
                        "committed_leader_epoch": -1,
                        "commit_timestamp": -1,
                        "committed_metadata": f"m{p}",
                    }
                    for p, o in parts.items()
                ],
            }
        ],
    }


def fetch_body(
    group: str,
    topics: dict[str, list[int]] | None,
    require_stable: bool = False,
    groups: list[str] | None = None,
) -> dict:
    tlist = (
        None
        if topics is None
        else [{"name": t, "partition_indexes": ps} for t, ps in topics.items()]
    )
    return {
        "group_id": group,
        "topics": tlist,
        "require_stable": require_stable,
        "groups": [
            {
                "group_id": g,
                "member_id": None,
                "member_epoch": -1,
                "topics": None
                if topics is None
                else [{"name": t, "partition_indexes": ps} for t, ps in topics.items()],
            }
            for g in (groups or [group])
        ],
    }


def _commit(v: int):
    def run(s: Session) -> None:
        if not s.supports(OFFSET_COMMIT, v):
            return
        g, t = s.name("g"), s.name("t")
        create_topic(s, t, 3)
        s.call(OFFSET_COMMIT, v, commit_body(g, t, {0: 5, 1: 7}), "simple_commit")
        s.call(OFFSET_COMMIT, v, commit_body(g, t, {7: 1}), "unknown_partition")
        s.call(OFFSET_COMMIT, v, commit_body(g, s.name("missing"), {0: 1}), "unknown_topic")
        s.call(OFFSET_COMMIT, v, commit_body("", t, {0: 1}), "empty_group")
        s.call(OFFSET_FETCH, 8, fetch_body(g, {t: [0, 1, 2]}), "fetch_back")
        m, gen = stable_member(s, g + "-m")
        s.call(OFFSET_COMMIT, v, commit_body(g + "-m", t, {0: 3}, m, gen), "member_commit")
        s.call(OFFSET_COMMIT, v, commit_body(g + "-m", t, {0: 4}, m, gen + 1), "bad_generation")
        s.call(OFFSET_COMMIT, v, commit_body(g + "-m", t, {0: 4}, m + "x", gen), "unknown_member")
        s.call(OFFSET_COMMIT, v, commit_body(g + "-m", t, {0: 4}), "simple_commit_to_live_group")

    return run


def _fetch(v: int):
    def run(s: Session) -> None:
        if not s.supports(OFFSET_FETCH, v):
            return
        g, t = s.name("g"), s.name("t")
        create_topic(s, t, 2)
        s.call(OFFSET_COMMIT, 8, commit_body(g, t, {0: 11}), record=False)
        s.call(OFFSET_FETCH, v, fetch_body(g, {t: [0, 1]}), "fetch")
        s.call(OFFSET_FETCH, v, fetch_body(g, {t: [0]}, require_stable=True), "require_stable")
        if v >= 2:
            s.call(OFFSET_FETCH, v, fetch_body(g, None), "all_topics")
        s.call(OFFSET_FETCH, v, fetch_body(g + "-none", {t: [0]}), "unknown_group")
        s.call(OFFSET_FETCH, v, fetch_body(g, {s.name("missing"): [0]}), "unknown_topic")
        s.call(OFFSET_FETCH, v, fetch_body("", {t: [0]}), "empty_group")
        if v >= 8:
            s.call(OFFSET_FETCH, v, fetch_body(g, {t: [0]}, groups=[g, g + "-none"]), "multi_group")

    return run


for _v in range(11):
    register("offsets", f"commit_v{_v}", _commit(_v))
for _v in range(11):
    register("offsets", f"fetch_v{_v}", _fetch(_v))


def offset_delete(s: Session) -> None:
    g, t = s.name("g"), s.name("t")
    create_topic(s, t, 2)
    s.call(OFFSET_COMMIT, 8, commit_body(g, t, {0: 1, 1: 2}), record=False)
    body = {"group_id": g, "topics": [{"name": t, "partitions": [{"partition_index": 0}]}]}
    s.call(OFFSET_DELETE, 0, body, "delete_one")
    s.call(OFFSET_FETCH, 8, fetch_body(g, {t: [0, 1]}), "after")
    s.call(OFFSET_DELETE, 0, {**body, "group_id": g + "-none"}, "unknown_group")
    body2 = {
        "group_id": g,
        "topics": [{"name": s.name("missing"), "partitions": [{"partition_index": 0}]}],
    }
    s.call(OFFSET_DELETE, 0, body2, "unknown_topic")
    s.call(OFFSET_DELETE, 0, {**body2, "group_id": g + "-none"}, "unknown_group_and_topic")
    body3 = {"group_id": g, "topics": [{"name": t, "partitions": [{"partition_index": 9}]}]}
    s.call(OFFSET_DELETE, 0, body3, "unknown_partition")
    s.call(OFFSET_DELETE, 0, {**body, "group_id": ""}, "empty_group")
    # a live group subscribed to the topic: GROUP_SUBSCRIBED_TO_TOPIC
    from conformance.kafka_diff.helpers import subscription

    gm = g + "-m"
    stable_member(s, gm, protocols=[("range", subscription(t))])
    s.call(OFFSET_COMMIT, 8, commit_body(gm, t, {0: 1}), record=False)
    s.call(OFFSET_DELETE, 0, {**body, "group_id": gm}, "subscribed")


def delete_groups(s: Session) -> None:
    g, t = s.name("g"), s.name("t")
    create_topic(s, t, 1)
    s.call(OFFSET_COMMIT, 8, commit_body(g, t, {0: 1}), record=False)
    live = g + "-live"
    stable_member(s, live)
    for v in range(3):
        s.call(DELETE_GROUPS, v, {"groups_names": [g + f"-none{v}"]}, f"unknown_v{v}")
    s.call(DELETE_GROUPS, 2, {"groups_names": [g, live, ""]}, "empty_live_blank")
    s.call(OFFSET_FETCH, 8, fetch_body(g, {t: [0]}), "after")
    describe(s, g, label="deleted_group")


def _list(v: int):
    def run(s: Session) -> None:
        if not s.supports(LIST_GROUPS, v):
            return
        g = s.name("g")
        stable_member(s, g)
        a = s.call(LIST_GROUPS, v, {"states_filter": [], "types_filter": []}, record=False)
        mine = [x for x in a["groups"] if x["group_id"] == g] if isinstance(a, dict) else a
        s.record("listed", mine)
        if v >= 4:
            for states in (["Stable"], ["stable"], ["Empty"], ["NoSuchState"]):
                a = s.call(LIST_GROUPS, v, {"states_filter": states}, record=False)
                s.record(
                    f"states_{states[0]}",
                    [x for x in a["groups"] if x["group_id"] == g] if isinstance(a, dict) else a,
                )
        if v >= 5:
            for types in (["classic"], ["consumer"], ["Classic"], ["share"], ["bogus"]):
                a = s.call(LIST_GROUPS, v, {"types_filter": types}, record=False)
                ok = isinstance(a, dict)
                s.record(
                    f"types_{types[0]}",
                    [a["error_code"], [x for x in a["groups"] if x["group_id"] == g]] if ok else a,
                )

    return run


for _v in range(6):
    register("offsets", f"list_groups_v{_v}", _list(_v))
register("offsets", "offset_delete", offset_delete)
register("offsets", "delete_groups", delete_groups)


def _txn_commit(v: int):
    def run(s: Session) -> None:
        if not s.supports(TXN_OFFSET_COMMIT, v):
            return
        g, t = s.name("g"), s.name("t")
        create_topic(s, t, 1)
        body = {
            "transactional_id": s.name("tx"),
            "group_id": g,
            "producer_id": 123456,
            "producer_epoch": 0,
            "generation_id": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [
                {
                    "name": t,
                    "partitions": [
                        {
                            "partition_index": 0,
                            "committed_offset": 1,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "",
                        }
                    ],
                }
            ],
        }
        s.call(TXN_OFFSET_COMMIT, v, body, "unknown_producer")

    return run


for _v in range(6):
    register("offsets", f"txn_offset_commit_v{_v}", _txn_commit(_v))


def pending_transactional_offsets(s: Session) -> None:
    """A TxnOffsetCommit in an open transaction: OffsetFetch with require_stable
    answers UNSTABLE_OFFSET_COMMIT until EndTxn, then the offset."""
    g, t, txn = s.name("g"), s.name("t"), s.name("tx")
    create_topic(s, t, 1)
    a = init_producer_id(s, txn)
    pid, epoch = a["producer_id"], a["producer_epoch"]
    s.call(
        25,
        3,
        {"transactional_id": txn, "producer_id": pid, "producer_epoch": epoch, "group_id": g},
        "add_offsets",
    )
    body = {
        "transactional_id": txn,
        "group_id": g,
        "producer_id": pid,
        "producer_epoch": epoch,
        "generation_id": -1,
        "member_id": "",
        "topics": [
            {
                "name": t,
                "partitions": [
                    {"partition_index": 0, "committed_offset": 5, "committed_metadata": "x"}
                ],
            }
        ],
    }
    s.call(TXN_OFFSET_COMMIT, 3, body, "txn_commit")
    s.call(OFFSET_FETCH, 8, fetch_body(g, {t: [0]}, require_stable=True), "stable_pending")
    s.call(OFFSET_FETCH, 8, fetch_body(g, {t: [0]}), "unstable_ok")
    s.call(OFFSET_FETCH, 6, fetch_body(g, {t: [0]}, require_stable=True), "stable_pending_v6")
    s.call(
        26,
        3,
        {"transactional_id": txn, "producer_id": pid, "producer_epoch": epoch, "committed": True},
        "end_txn",
    )

    def settled() -> bool:
        a = s.call(OFFSET_FETCH, 8, fetch_body(g, {t: [0]}, require_stable=True), record=False)
        return (
            isinstance(a, dict) and a["groups"][0]["topics"][0]["partitions"][0]["error_code"] == 0
        )

    s.wait(settled, 10)
    s.call(OFFSET_FETCH, 8, fetch_body(g, {t: [0]}, require_stable=True), "after_commit")


register("offsets", "pending_transactional_offsets", pending_transactional_offsets)
