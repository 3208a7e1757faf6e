"""A consumer group's records are applied when written and reverted when
their append fails; its timers must follow the revert (all found by
reliability/simulate.py): no session timer left for a member a failed join
added, a session timer again for a member a failed leave removed, and a
refused append undone at once rather than after the writes before it."""

from __future__ import annotations

from collections.abc import Callable

from muster.coordinator import errors as E
from muster.coordinator.groups.modern.api import ConsumerGroupHeartbeat
from muster.coordinator.result import Cancel
from tests.core.harness import Harness
from tests.core.modern.test_heartbeat import TOPICS, G, Member


def _join(member_id: str, group: str = G) -> ConsumerGroupHeartbeat:
    return ConsumerGroupHeartbeat(
        group,
        member_id,
        0,
        rebalance_timeout_ms=30000,
        subscribed_topic_names=("t1",),
        owned=(),
        topics=TOPICS,
    )


def _consumer_timers(h: Harness) -> list[str]:
    return sorted(k for k in h.shard.pending_timers() if k.startswith("consumer-"))


def test_a_failed_join_leaves_no_session_timer(make: Callable[..., Harness]) -> None:
    h = make()
    h.auto_durable = False
    rid = h.send(_join("a"))
    assert not h.answered(rid) and _consumer_timers(h)  # applied, in flight
    h.flush(E.NOT_ENOUGH_REPLICAS)
    assert h.reply(rid).error_code != E.NONE
    assert G not in h.shard.store.modern
    assert _consumer_timers(h) == []
    assert not any(k.startswith("consumer-") for k in h.timers)


def test_a_failed_leave_gives_the_member_back_its_session(make: Callable[..., Harness]) -> None:
    h = make()
    m = Member(h, "a")
    assert m.beat().error_code == E.NONE
    h.auto_durable = False
    rid = h.send(ConsumerGroupHeartbeat(G, "a", -1, topics=TOPICS))
    h.flush(E.NOT_ENOUGH_REPLICAS)
    assert h.reply(rid).error_code != E.NONE
    assert "a" in h.shard.store.modern[G].members  # the leave is not in the log
    sessions = [k for k in h.timers if k.startswith("consumer-session") and k.endswith("-a")]
    assert len(sessions) == 1  # so its session can still end
    h.auto_durable = True
    h.advance(h.cfg.consumer_session_timeout_ms + 1)
    assert "a" not in h.shard.store.modern[G].members


def test_a_refused_append_is_undone_at_once(make: Callable[..., Harness]) -> None:
    """The runtime abandons a write when the log refuses its append (the
    latest write); an earlier write still in flight must not keep the
    refused one's records live meanwhile."""
    h = make()
    h.auto_durable = False
    h.send(_join("x", group="other"))  # in flight, not durable
    res = h.shard.handle(99, _join("a"), h.now)
    assert G in h.shard.store.modern and res.on_durable is not None
    h.writes.track(res.on_durable)  # as the runtime does when it appends
    undone = h.writes.abandon(res.on_durable, h.now)
    assert G not in h.shard.store.modern
    assert any(isinstance(op, Cancel) and op.key.endswith(f"{G}-a") for op in undone.timers)
    done = h.writes.complete(res.on_durable, E.KAFKA_STORAGE_ERROR, h.now)
    assert [rid for rid, _ in done.replies] == [99]
    assert done.replies[0][1].error_code != E.NONE
    h.flush()  # the earlier write is durable: live and log agree again
    assert "other" in h.shard.store.modern
