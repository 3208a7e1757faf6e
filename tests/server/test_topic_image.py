"""The group cores get a fixed image of the broker's topics, taken when the
request arrived: a topic created, grown or deleted while the step waits in
the shard's queue is seen by the next request, not by this one."""

from __future__ import annotations

from muster.coordinator.groups.modern.group import SubscribedTopic
from muster.log.manager import LogManager
from muster.server.handlers.modern_groups import TopicImage


def test_an_image_stays_as_it_was_taken() -> None:
    logs = LogManager.in_memory()
    logs.create_topic("a", 2)
    taken = TopicImage(logs)
    a_id = logs.topic("a").topic_id  # type: ignore[union-attr]
    logs.create_topic("b", 1)
    logs.add_partitions("a", 5)
    assert dict(taken) == {"a": SubscribedTopic(a_id, 2)}
    assert "b" not in taken
    now = TopicImage(logs)
    assert now["a"] == SubscribedTopic(a_id, 5) and set(now) == {"a", "b"}
    logs.delete_topic("a")
    assert set(TopicImage(logs)) == {"b"} and set(now) == {"a", "b"}


def test_taking_an_image_copies_the_table_once_per_change() -> None:
    logs = LogManager.in_memory()
    logs.create_topic("a", 1)
    assert logs.image() is logs.image()
    before = logs.image()
    logs.set_topic_configs("a", {"retention.ms": "1"})
    assert logs.image() is not before
