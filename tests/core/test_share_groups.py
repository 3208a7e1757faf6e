"""KIP-932 share groups in the pure core: ShareGroupHeartbeat (join, epochs,
leave, session expiry, fencing), the simple assignor (several members per
partition when they outnumber partitions), ShareGroupDescribe, ListGroups
and DeleteGroups; the conftest checks after each test that replaying the
records gives the live state."""

from __future__ import annotations

import uuid
from typing import Any

from muster.coordinator import errors as E
from muster.coordinator import requests as rq
from muster.coordinator.groups.modern.target import SubscribedTopic
from muster.coordinator.groups.share.api import ShareGroupDescribe, ShareGroupHeartbeat
from muster.coordinator.groups.share.assignor import assign
from muster.coordinator.groups.share.group import ShareMember
from tests.core.harness import Harness

T = uuid.UUID(int=7)
TOPICS = {"t": SubscribedTopic(T, 3)}


def hb(
    h: Harness, member: str, epoch: int, subs: tuple[str, ...] | None = ("t",), **kw: Any
) -> Any:
    req = ShareGroupHeartbeat("g", member, epoch, None, subs, topics=kw.pop("topics", TOPICS))
    return h.reply(h.send(req))


def test_members_join_and_the_partitions_are_spread(h: Harness) -> None:
    a = hb(h, "a", 0)
    assert (a.error_code, a.member_epoch) == (E.NONE, 1)
    assert a.assignment == ((T, (0, 1, 2)),)
    b = hb(h, "b", 0)
    assert b.member_epoch == 2 and b.assignment == ((T, (1,)),)
    # a learns of the new target on its next heartbeat, at once (nothing to revoke)
    a = hb(h, "a", 1, None)
    assert a.member_epoch == 2 and a.assignment == ((T, (0, 2)),)
    assert hb(h, "a", 2, None).assignment is None  # unchanged: not sent


def test_more_members_than_partitions_share_partitions() -> None:
    members = {m: ShareMember(m, subscribed=("t",)) for m in "abcde"}
    target = assign(members, TOPICS)
    assert [target[m][T] for m in "abcde"] == [(0,), (1,), (2,), (0,), (1,)]


def test_epochs_are_checked(h: Harness) -> None:
    hb(h, "a", 0)
    assert hb(h, "a", 5, None).error_code == E.FENCED_MEMBER_EPOCH
    assert hb(h, "x", 1, None).error_code == E.UNKNOWN_MEMBER_ID
    assert hb(h, "", 0).error_code == E.INVALID_REQUEST
    assert hb(h, "n", 0, None).error_code == E.INVALID_REQUEST  # first needs topics


def test_leave_and_session_expiry_retarget(h: Harness) -> None:
    hb(h, "a", 0)
    hb(h, "b", 0)
    left = hb(h, "b", -1, None)
    assert (left.error_code, left.member_epoch) == (E.NONE, -1)
    assert set(h.shard.store.share["g"].members) == {"a"}
    hb(h, "c", 0)
    h.advance(h.cfg.share_session_timeout_ms + 1)
    assert h.shard.store.share["g"].members == {}


def test_describe_list_and_delete(h: Harness) -> None:
    hb(h, "a", 0)
    described = h.reply(h.send(ShareGroupDescribe(("g", "nope"), {T: "t"}))).groups
    assert described[0]["group_state"] == "Stable"
    assert described[0]["members"][0]["assignment"]["topic_partitions"][0]["topic_name"] == "t"
    assert described[1]["error_code"] == E.GROUP_ID_NOT_FOUND
    listed = h.reply(h.send(rq.ListGroups(types_filter=("share",)))).groups
    assert [(g.group_id, g.group_type) for g in listed] == [("g", "share")]
    assert h.reply(h.send(rq.DeleteGroups(("g",)))).results[0].error_code == E.NON_EMPTY_GROUP
    hb(h, "a", -1, None)
    assert h.reply(h.send(rq.DeleteGroups(("g",)))).results[0].error_code == E.NONE
    assert "g" not in h.shard.store.share


def test_a_share_id_refuses_the_other_kinds(h: Harness) -> None:
    hb(h, "a", 0)
    rid = h.send(rq.JoinGroup("g", "", "consumer", (("range", b""),), 10000, 10000))
    assert h.reply(rid).error_code == E.INCONSISTENT_GROUP_PROTOCOL


def test_a_failed_append_restores_the_group(h: Harness) -> None:
    hb(h, "a", 0)
    h.auto_durable = False
    h.send(ShareGroupHeartbeat("g", "b", 0, None, ("t",), topics=TOPICS))
    assert set(h.shard.store.share["g"].members) == {"a", "b"}  # applied when written
    h.flush(error=E.NOT_COORDINATOR)
    assert set(h.shard.store.share["g"].members) == {"a"}


def test_offsets_change_needs_an_empty_share_group(h: Harness) -> None:
    from muster.coordinator.groups.share.api import ShareOffsetsChange

    # an unknown id becomes an empty share group, as Kafka makes one
    assert h.reply(h.send(ShareOffsetsChange("g"))).error_code == E.NONE
    assert h.shard.store.share["g"].state == "Empty"
    hb(h, "a", 0)
    assert h.reply(h.send(ShareOffsetsChange("g"))).error_code == E.NON_EMPTY_GROUP
    h.form(1, group="c")
    assert h.reply(h.send(ShareOffsetsChange("c"))).error_code == E.GROUP_ID_NOT_FOUND
