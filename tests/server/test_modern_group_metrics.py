"""A consumer group's epoch bumps count as rebalances, by cause (Kafka's
consumer-group-rebalances), in the broker's Prometheus metrics."""

from __future__ import annotations

from muster.coordinator import events_modern as cev
from muster.server.metrics import BrokerMetrics


def test_epoch_bumps_are_counted_as_rebalances_by_cause() -> None:
    m = BrokerMetrics()
    bump = cev.ConsumerGroupEpochBumped("g", 2, cev.CONSUMER_MEMBER_JOINED, "a", "", 2, 1)
    m.observe_events([bump, bump, cev.ConsumerMemberRemoved("g", "a", None, "x", 1)])
    value = m.registry.get_sample_value(
        "muster_rebalances_total", {"cause": cev.CONSUMER_MEMBER_JOINED}
    )
    assert value == 2
