"""The Prometheus endpoint reports groups by state, rebalances by cause, commits."""

from __future__ import annotations

import time
import urllib.request
from pathlib import Path

from confluent_kafka import Consumer
from prometheus_client.parser import text_string_to_metric_families

from tests.support.brokers import MusterProcess, free_port
from tests.wire.clients import confluent_produce, create_topic


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_metrics_follow_a_group(tmp_path: Path) -> None:
    port = free_port()
    broker = MusterProcess(
        tmp_path / "data", {"muster.metrics.listen": f"127.0.0.1:{port}"}
    ).start()
    try:
        create_topic(broker.bootstrap, "metered", partitions=2)
        confluent_produce(broker.bootstrap, "metered", [(0, None, b"x", [])] * 5)
        before = scrape(port)
        assert before[("muster_groups", (("state", "Stable"),))] == 0
        consumer = Consumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": "metered-group",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        consumer.subscribe(["metered"])
        seen = 0
        deadline = time.monotonic() + 30
        while seen < 5 and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                seen += 1
        consumer.commit(asynchronous=False)
        after = scrape(port)
        assert after[("muster_groups", (("state", "Stable"),))] == 1
        assert after[("muster_rebalances_total", (("cause", "member_joined"),))] >= 1
        assert after[("muster_rebalance_duration_seconds_count", ())] >= 1
        assert after[("muster_offset_commits_total", ())] >= 1  # one partition had data
        assert ("muster_coordinator_load_seconds", ()) in after
        consumer.close()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if scrape(port)[("muster_groups", (("state", "Empty"),))] == 1:
                break
            time.sleep(0.2)
        assert scrape(port)[("muster_groups", (("state", "Empty"),))] == 1
    finally:
        broker.close()
