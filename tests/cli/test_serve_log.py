"""What `muster serve` logs while a client retries: a client asking, again and
again, for the metadata of a topic that does not exist costs one INFO line per
10 s, not one per retry (the issue counted 67 lines in 45 s)."""

from __future__ import annotations

from pathlib import Path

from confluent_kafka.admin import AdminClient

from tests.support.brokers import MusterProcess


def test_retried_metadata_for_a_missing_topic_is_logged_once(tmp_path: Path) -> None:
    broker = MusterProcess(tmp_path / "data", {"auto.create.topics.enable": "false"}).start()
    try:
        for _ in range(20):  # a new connection each time, as a restarted client makes
            admin = AdminClient({"bootstrap.servers": broker.bootstrap})
            metadata = admin.list_topics(topic="nosuch", timeout=10)
            assert metadata.topics["nosuch"].error is not None
            del admin  # closed before the broker stops, so it does not log reconnects
    finally:
        broker.close()
    lines = [line for line in broker.log_text().splitlines() if "'nosuch'" in line]
    assert len(lines) == 1, "\n".join(lines)
    assert " INFO " in lines[0] and "unknown_topic_or_partition" in lines[0]
