"""Prometheus metrics: group counts by state, rebalances, commits, load time.

Each broker has its own registry (tests run several brokers in one process);
group-state gauges are computed at scrape time from the shards, so they can
never drift from the coordinator's real state.
"""

from __future__ import annotations

import logging
from collections import Counter as Tally
from collections.abc import Iterable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from muster.coordinator import events as ev
from muster.coordinator import events_modern as cev

log = logging.getLogger(__name__)

STATES = ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead")


class _GroupStateCollector(Collector):
    def __init__(self, metrics: BrokerMetrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[GaugeMetricFamily]:
        coordinator = self._metrics.coordinator
        groups = GaugeMetricFamily("muster_groups", "Consumer groups by state", labels=["state"])
        load = GaugeMetricFamily(
            "muster_coordinator_load_seconds", "Time to replay __consumer_offsets at start"
        )
        counts: Tally[str] = Tally()
        if coordinator is not None:
            for runtime in coordinator.shards:
                if not runtime.loaded:
                    continue  # its shard is still being made and replayed
                for group in runtime.shard.groups():
                    counts[_state_name(group)] += 1
            if coordinator.load_ms is not None:
                load.add_metric([], coordinator.load_ms / 1000)
        for state in STATES:
            groups.add_metric([state], counts.get(state, 0))
        yield groups
        yield load


def _state_name(group: Any) -> str:
    state = getattr(group, "state", "")
    return str(getattr(state, "value", state))


class BrokerMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.coordinator: Any = None
        self.rebalances = Counter(
            "muster_rebalances",
            "Rebalances started, by cause",
            ["cause"],
            registry=self.registry,
        )
        # every known cause is exposed from the start (0 until it happens), so
        # a dashboard sees the causes before the first rebalance of each; the
        # codes come from the cause registry, so a new cause needs no edit here
        for code in ev.rebalance_causes():
            self.rebalances.labels(code)
        self.rebalance_seconds = Histogram(
            "muster_rebalance_duration_seconds",
            "From the first cause to Stable",
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300),
            registry=self.registry,
        )
        self.group_store_failures = Counter(
            "muster_group_store_failures",
            "SyncGroup assignments that could not be stored",
            registry=self.registry,
        )
        self.offset_commits = Counter(
            "muster_offset_commits",
            "Partitions committed by OffsetCommit",
            registry=self.registry,
        )
        self.registry.register(_GroupStateCollector(self))

    def observe_events(self, events: Iterable[Any]) -> None:
        """Counts the typed events of muster.coordinator.events as the
        coordinator writes them; a rebalance's cause is the event's code."""
        for event in events:
            if isinstance(event, ev.RebalanceStarted):
                self.rebalances.labels(event.cause).inc()
            elif isinstance(event, ev.RebalanceCompleted):
                self.rebalance_seconds.observe(max(0, event.duration_ms) / 1000)
            elif isinstance(event, ev.GroupStoreFailed):
                self.group_store_failures.inc()
            elif isinstance(event, cev.ConsumerGroupEpochBumped):
                # Kafka counts a consumer group's epoch bumps as its rebalances
                self.rebalances.labels(event.cause).inc()

    def close(self) -> None:
        """Stops the /metrics endpoint, freeing its port for a restarted broker."""
        server = getattr(self, "_http", None)
        if server is not None:
            server.shutdown()
            server.server_close()
            self._http = None

    def serve(self, listen: str) -> int | None:
        """Starts the /metrics endpoint; returns its port (None when disabled)."""
        if not listen:
            return None
        host, _, port = listen.rpartition(":")
        server, _thread = start_http_server(int(port), host or "127.0.0.1", self.registry)
        self._http = server
        bound = int(server.server_address[1])
        log.info("metrics on http://%s:%d/metrics", host or "127.0.0.1", bound)
        return bound
