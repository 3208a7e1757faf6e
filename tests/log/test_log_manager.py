"""LogManager: topics, metadata durability, config resolution, retention and
cleaner fan-out, the in-memory variant."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from muster.config import BrokerConfig
from muster.log.manager import (
    InvalidPartitionsError,
    InvalidTopicError,
    LogManager,
    TopicConfigError,
    TopicExistsError,
    UnknownTopicError,
    valid_topic_name,
)
from muster.log.memory_log import MemoryLog
from muster.log.segment_log import SegmentLog
from muster.records.batch import Record, build_batch, iter_records


def batch(key: bytes = b"k", value: bytes | None = b"v", ts: int = 0) -> bytes:
    return build_batch([Record(key, value, (), ts)])


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("orders", True),
        ("a.b_c-D9", True),
        ("x" * 249, True),
        ("x" * 250, False),
        ("", False),
        (".", False),
        ("..", False),
        ("...", True),
        ("with space", False),
        ("slash/y", False),
        ("ümlaut", False),
    ],
)
def test_valid_topic_name(name: str, ok: bool) -> None:
    assert valid_topic_name(name) is ok


def test_topics_survive_reopen(tmp_path: Path) -> None:
    mgr = LogManager(tmp_path, BrokerConfig())
    mgr.load()
    info = mgr.create_topic("orders", 3, {"retention.ms": "1000"})
    assert (info.name, info.num_partitions, info.configs) == ("orders", 3, {"retention.ms": "1000"})
    assert isinstance(info.topic_id, uuid.UUID)
    log = mgr.get("orders", 2)
    assert isinstance(log, SegmentLog)
    assert log.config.retention_ms == 1000 and log.config.segment_bytes == 1073741824
    log.append(batch(), 0)
    assert mgr.unflushed() == [log]
    log.flush()
    assert mgr.unflushed() == []
    assert (tmp_path / "orders-0").is_dir() and (tmp_path / "orders-2").is_dir()
    # no close(): as after kill -9
    mgr2 = LogManager(tmp_path, BrokerConfig())
    mgr2.load()
    assert mgr2.topics() == {"orders": info}
    assert mgr2.get("orders", 2).log_end_offset == 1  # type: ignore[union-attr]
    assert mgr2.get("orders", 3) is None


def test_metadata_file_is_replaced_atomically(tmp_path: Path) -> None:
    mgr = LogManager(tmp_path, {})
    mgr.load()
    mgr.create_topic("a", 1, {})
    mgr.create_topic("b", 2, {"cleanup.policy": "compact"})
    doc = json.loads((tmp_path / "topics.json").read_text())
    assert sorted(t["name"] for t in doc["topics"]) == ["a", "b"]
    assert not (tmp_path / "topics.json.tmp").exists()


def test_create_topic_errors(tmp_path: Path) -> None:
    mgr = LogManager(tmp_path, {})
    mgr.load()
    mgr.create_topic("a.b", 1, {})
    with pytest.raises(TopicExistsError):
        mgr.create_topic("a.b", 1, {})
    with pytest.raises(InvalidTopicError):
        mgr.create_topic("a_b", 1, {})  # collides with a.b in metric names
    with pytest.raises(InvalidTopicError):
        mgr.create_topic("bad name", 1, {})
    with pytest.raises(InvalidPartitionsError):
        mgr.create_topic("z", 0, {})
    with pytest.raises(TopicConfigError):
        mgr.create_topic("z", 1, {"cleanup.policy": "shred"})
    with pytest.raises(TopicConfigError):
        mgr.create_topic("z", 1, {"retention.ms": "soon"})
    assert set(mgr.topics()) == {"a.b"}
    assert InvalidTopicError.error_code == 17 and TopicExistsError.error_code == 36


def test_create_topics_together_all_or_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import muster.log.manager as manager

    fsyncs: list[int] = []
    real_fsync = manager.os.fsync
    monkeypatch.setattr(manager.os, "fsync", lambda fd: (fsyncs.append(fd), real_fsync(fd)))
    mgr = LogManager(tmp_path, {})
    mgr.load()
    with pytest.raises(InvalidPartitionsError):  # the second is bad: neither is made
        mgr.create_topics([("a", 2, {}), ("b", 0, {})])
    assert mgr.topics() == {} and not (tmp_path / "a-0").exists()
    fsyncs.clear()
    made = mgr.create_topics([("a", 2, {}), ("b", 3, {"cleanup.policy": "compact"})])
    assert [(t.name, t.num_partitions) for t in made] == [("a", 2), ("b", 3)]
    # the topic table (file and directory) and the partition directories: three
    # fsyncs for both topics, where one topic at a time took six
    assert len(fsyncs) == 3
    # no close(): as after kill -9
    again = LogManager(tmp_path, {})
    again.load()
    assert again.topics() == {t.name: t for t in made}
    assert again.get("b", 2) is not None and again.get("a", 1) is not None


def test_add_partitions_and_delete(tmp_path: Path) -> None:
    mgr = LogManager(tmp_path, {})
    mgr.load()
    first = mgr.create_topic("t", 1, {})
    mgr.get("t", 0).append(batch(), 0)  # type: ignore[union-attr]
    grown = mgr.add_partitions("t", 3)
    assert grown.num_partitions == 3 and grown.topic_id == first.topic_id
    with pytest.raises(InvalidPartitionsError):
        mgr.add_partitions("t", 3)
    with pytest.raises(UnknownTopicError):
        mgr.add_partitions("nope", 3)
    assert mgr.get("t", 2) is not None and mgr.get("t", 0).log_end_offset == 1  # type: ignore[union-attr]
    mgr.delete_topic("t")
    assert mgr.topics() == {} and mgr.get("t", 0) is None
    assert not any(p.name.startswith("t-") for p in tmp_path.iterdir())
    with pytest.raises(UnknownTopicError):
        mgr.delete_topic("t")
    mgr2 = LogManager(tmp_path, {})
    mgr2.load()
    assert mgr2.topics() == {}


def test_leftover_partition_dirs_of_deleted_topics_are_removed(tmp_path: Path) -> None:
    mgr = LogManager(tmp_path, {})
    mgr.load()
    mgr.create_topic("keep", 1, {})
    (tmp_path / "gone-0").mkdir()
    (tmp_path / "gone-0" / "00000000000000000000.log").write_bytes(b"")
    mgr2 = LogManager(tmp_path, {})
    mgr2.load()
    assert set(mgr2.topics()) == {"keep"} and not (tmp_path / "gone-0").exists()


def test_partition_dirs_without_metadata_are_adopted(tmp_path: Path) -> None:
    mgr = LogManager(tmp_path, {})
    mgr.load()
    mgr.create_topic("old-topic", 2, {})
    mgr.get("old-topic", 1).append(batch(), 0)  # type: ignore[union-attr]
    mgr.close()
    (tmp_path / "topics.json").unlink()
    mgr2 = LogManager(tmp_path, {})
    mgr2.load()
    assert mgr2.topics()["old-topic"].num_partitions == 2
    assert mgr2.get("old-topic", 1).log_end_offset == 1  # type: ignore[union-attr]


def test_clean_shutdown_marker(tmp_path: Path) -> None:
    mgr = LogManager(tmp_path, {})
    mgr.load()
    mgr.create_topic("t", 1, {})
    mgr.get("t", 0).append(batch(), 0)  # type: ignore[union-attr]
    mgr.close()
    assert (tmp_path / ".clean-shutdown").exists()
    mgr2 = LogManager(tmp_path, {})
    mgr2.load()
    assert not (tmp_path / ".clean-shutdown").exists()
    assert mgr2.get("t", 0).log_end_offset == 1  # type: ignore[union-attr]


def test_broker_defaults_and_topic_overrides(tmp_path: Path) -> None:
    mgr = LogManager(
        tmp_path,
        BrokerConfig(
            {"log.segment.bytes": 5000, "log.cleanup.policy": "compact", "message.max.bytes": 300}
        ),
    )
    mgr.load()
    mgr.create_topic("a", 1, {})
    mgr.create_topic(
        "b",
        1,
        {
            "segment.bytes": "7000",
            "cleanup.policy": "delete",
            "max.message.bytes": "2000",
            "message.timestamp.type": "LogAppendTime",
        },
    )
    a = mgr.topic_config("a")
    b = mgr.topic_config("b")
    assert (a.segment_bytes, a.compact, a.max_message_bytes) == (5000, True, 300)
    assert (b.segment_bytes, b.compact, b.delete, b.max_message_bytes) == (7000, False, True, 2000)
    assert mgr.get("b", 0).append(batch(), 42).log_append_time_ms == 42  # type: ignore[union-attr]
    updated = mgr.set_topic_configs("a", {"retention.bytes": "10"})
    assert updated.configs == {"retention.bytes": "10"}
    assert mgr.get("a", 0).config.retention_bytes == 10  # type: ignore[union-attr]


def test_run_retention_and_cleaner(tmp_path: Path) -> None:
    mgr = LogManager(tmp_path, {"log.segment.bytes": 300, "log.index.interval.bytes": 100})
    mgr.load()
    mgr.create_topic("del", 1, {"retention.ms": "1000"})
    mgr.create_topic("cmp", 1, {"cleanup.policy": "compact"})
    for i in range(20):
        mgr.get("del", 0).append(batch(ts=i), i)  # type: ignore[union-attr]
        mgr.get("cmp", 0).append(batch(b"same", b"%d" % i, ts=i), i)  # type: ignore[union-attr]
    assert mgr.run_retention(now_ms=5_000) > 0
    assert mgr.get("del", 0).log_start_offset > 0  # type: ignore[union-attr]
    stats = mgr.run_cleaner(now_ms=5_000)
    assert stats.records_removed > 0
    cmp = mgr.get("cmp", 0)
    values = [r.value for r in iter_records(cmp.read(cmp.log_start_offset, 1 << 20))]  # type: ignore[union-attr]
    assert len(values) < 20


def test_in_memory_manager() -> None:
    mgr = LogManager.in_memory({"log.retention.ms": 100})
    mgr.load()
    info = mgr.create_topic("t", 2, {"cleanup.policy": "compact,delete"})
    log = mgr.get("t", 1)
    assert isinstance(log, MemoryLog) and info.num_partitions == 2
    for i in range(5):
        log.append(batch(b"k", b"%d" % i, ts=i), i)
    assert mgr.run_cleaner(now_ms=10).records_removed == 4
    log.append(batch(b"k2", b"x", ts=1_000), 1_000)
    assert mgr.run_retention(now_ms=1_000) == 1
    assert log.log_start_offset == 5 and log.log_end_offset == 6
    mgr.delete_topic("t")
    assert mgr.topics() == {}
