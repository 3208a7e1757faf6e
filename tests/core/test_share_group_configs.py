"""A GROUP resource's configs as Kafka 4.4's GroupConfig checks them: a
value's type and floor, then the broker's bounds (a share group's lock
duration between group.share.min/max.record.lock.duration.ms, session
timeouts and heartbeat intervals between theirs), a session timeout above
its heartbeat interval; defaults are the broker's properties."""

from __future__ import annotations

import pytest

from muster.config import BrokerConfig
from muster.share.group_configs import check_group, check_value, default

BROKER = BrokerConfig()


@pytest.mark.parametrize(
    ("name", "value", "problem"),
    [
        ("share.record.lock.duration.ms", "15000", None),
        ("share.record.lock.duration.ms", "60000", None),
        ("share.record.lock.duration.ms", "999", "Value must be at least 1000"),
        ("share.record.lock.duration.ms", "soon", "Not a number of type INT"),
        ("share.session.timeout.ms", "0", "Value must be at least 1"),
        ("share.auto.offset.reset", "newest", "Invalid value newest"),
        ("share.isolation.level", "read_committed", None),
        ("share.delivery.counts", "5", "Unknown group config name: share.delivery.counts"),
    ],
)
def test_a_value_on_its_own(name: str, value: str, problem: str | None) -> None:
    found = check_value(name, value)
    assert found is None if problem is None else problem in (found or "")


@pytest.mark.parametrize(
    ("configs", "problem"),
    [
        ({"share.record.lock.duration.ms": "15000"}, None),
        (
            {"share.record.lock.duration.ms": "3000"},
            "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive.",
        ),
        (
            {"share.record.lock.duration.ms": "60001"},
            "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive.",
        ),
        (
            {"share.session.timeout.ms": "44999"},
            "share.session.timeout.ms must be in the range 45000 to 60000 inclusive.",
        ),
        (
            {"share.heartbeat.interval.ms": "15001"},
            "share.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive.",
        ),
        (
            {"consumer.session.timeout.ms": "60001"},
            "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive.",
        ),
        (
            {"share.delivery.count.limit": "1"},
            "share.delivery.count.limit must be in the range 2 to 10 inclusive.",
        ),
        ({"share.delivery.count.limit": "10"}, None),
        (
            {"share.partition.max.record.locks": "4001"},
            "share.partition.max.record.locks must be in the range 100 to 4000 inclusive.",
        ),
        ({"share.auto.offset.reset": "earliest"}, None),
    ],
)
def test_default_bounds(configs: dict[str, str], problem: str | None) -> None:
    assert check_group(configs, BROKER) == problem


def test_bounds_follow_the_broker() -> None:
    """librdkafka's own test clusters let a group lock records for 1 s."""
    short = BrokerConfig({"group.share.min.record.lock.duration.ms": "1000"})
    assert check_group({"share.record.lock.duration.ms": "3000"}, short) is None
    assert check_group({"share.record.lock.duration.ms": "999"}, short) is not None


def test_session_above_heartbeat() -> None:
    wide = BrokerConfig(
        {
            "group.share.min.session.timeout.ms": "1000",
            "group.share.max.heartbeat.interval.ms": "50000",
        }
    )
    configs = {"share.session.timeout.ms": "10000", "share.heartbeat.interval.ms": "10000"}
    assert check_group(configs, wide) == (
        "share.session.timeout.ms must be greater than share.heartbeat.interval.ms"
    )


def test_defaults_are_the_brokers() -> None:
    assert default("share.record.lock.duration.ms", BROKER) == "30000"
    broker = BrokerConfig({"group.share.record.lock.duration.ms": "20000"})
    assert default("share.record.lock.duration.ms", broker) == "20000"
    assert default("share.auto.offset.reset", broker) == "latest"
    assert default("share.delivery.count.limit", broker) == "5"
