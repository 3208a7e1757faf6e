"""LogManager: the broker's topics and their partition logs.

On disk: `<data_dir>/topics.json` (every topic's id, partition count and
config overrides; replaced atomically: temp file, fsync, rename, fsync dir) and
one directory `<topic>-<partition>` per partition. Metadata is written before
partition directories are created and before they are removed, so a partition
directory unknown to topics.json is the leftover of an interrupted deletion and
is removed on load. `.clean-shutdown` is written by close() and lets load()
skip the full CRC scan of each active segment.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import time
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from muster.log.cleaner import CleanStats
from muster.log.config import InvalidConfigError, LogConfig
from muster.log.files import fsync_dir
from muster.log.memory_log import MemoryLog
from muster.log.port import LogError, PartitionLog
from muster.log.segment_log import SegmentLog

METADATA_FILE = "topics.json"
logger = logging.getLogger(__name__)

CLEAN_SHUTDOWN_FILE = ".clean-shutdown"
OPEN_THREADS = 8  # partitions opened at once at start (their I/O runs in parallel)
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_TOPIC_NAME = 249


class InvalidTopicError(LogError):
    error_code = 17  # INVALID_TOPIC_EXCEPTION


class TopicExistsError(LogError):
    error_code = 36  # TOPIC_ALREADY_EXISTS


class InvalidPartitionsError(LogError):
    error_code = 37  # INVALID_PARTITIONS


class UnknownTopicError(LogError):
    error_code = 3  # UNKNOWN_TOPIC_OR_PARTITION


class TopicConfigError(LogError):
    error_code = 40  # INVALID_CONFIG


def valid_topic_name(name: str) -> bool:
    """Kafka's rules: 1-249 chars of [a-zA-Z0-9._-], not "." or ".."."""
    return 0 < len(name) <= MAX_TOPIC_NAME and name not in (".", "..") and bool(_LEGAL.match(name))


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    num_partitions: int
    configs: dict[str, str] = field(default_factory=dict)


class LogManager:
    def __init__(
        self,
        data_dir: Path | None,
        config: Mapping[str, Any] | None = None,
        *,
        in_memory: bool = False,
    ) -> None:
        self.data_dir = Path(data_dir) if data_dir is not None else None
        self.config: Mapping[str, Any] = config or {}
        self.memory = in_memory or data_dir is None
        self._topics: dict[str, TopicInfo] = {}
        self.version = 0  # bumped on every topic-table change (caches key on it)
        self._names_by_id: tuple[int, dict[uuid.UUID, str]] = (-1, {})
        self._image: tuple[int, Mapping[str, TopicInfo]] = (-1, MappingProxyType({}))
        self._logs: dict[tuple[str, int], PartitionLog] = {}
        self._loaded = False

    @classmethod
    def in_memory(cls, config: Mapping[str, Any] | None = None) -> LogManager:
        mgr = cls(None, config, in_memory=True)
        mgr._loaded = True
        return mgr

    # ------------------------------------------------------------ loading

    def load(self, now_ms: int | None = None) -> None:
        """Opens and recovers every partition on disk; call once at start."""
        if self._loaded:
            return
        self._loaded = True
        if self.memory:
            return
        assert self.data_dir is not None
        now = _now_ms() if now_ms is None else now_ms
        self.data_dir.mkdir(parents=True, exist_ok=True)
        marker = self.data_dir / CLEAN_SHUTDOWN_FILE
        clean = marker.exists()
        meta_path = self.data_dir / METADATA_FILE
        (self.data_dir / (METADATA_FILE + ".tmp")).unlink(missing_ok=True)
        if meta_path.exists():
            for entry in json.loads(meta_path.read_text())["topics"]:
                info = TopicInfo(
                    entry["name"],
                    uuid.UUID(entry["topic_id"]),
                    int(entry["num_partitions"]),
                    dict(entry.get("configs", {})),
                )
                self._topics[info.name] = info
            self.version += 1  # the table read back: images made before are stale
            known = True
        else:
            known = False
        found: dict[str, int] = {}
        for path in self.data_dir.iterdir():
            topic, sep, part = path.name.rpartition("-")
            if not path.is_dir() or not sep or not part.isdigit():
                continue
            if topic in self._topics and int(part) < self._topics[topic].num_partitions:
                continue
            if known:
                shutil.rmtree(path, ignore_errors=True)  # leftover of a deletion
            else:
                found[topic] = max(found.get(topic, 0), int(part) + 1)
        for topic, count in found.items():  # no metadata file: adopt what is there
            self._topics[topic] = TopicInfo(topic, uuid.uuid4(), count, {})
        if found:
            self._save()
        opening = [
            (info.name, p, self._log_config(info.configs))
            for info in self._topics.values()
            for p in range(info.num_partitions)
        ]

        def open_log(what: tuple[str, int, LogConfig]) -> SegmentLog:
            topic, p, cfg = what
            return SegmentLog(self._partition_dir(topic, p), topic, p, cfg, clean, now)

        # Partitions open side by side: after a crash each one fsyncs its last
        # segments and reads its tail back (both release the GIL), 50 of them
        # one after the other were most of a restart's "logs" phase.
        with ThreadPoolExecutor(min(OPEN_THREADS, max(1, len(opening)))) as pool:
            futures = [pool.submit(open_log, what) for what in opening]
        failed: BaseException | None = None
        for (topic, p, _), future in zip(opening, futures, strict=True):
            error = future.exception()
            if error is None:
                self._logs[(topic, p)] = future.result()  # close() closes it if one failed
            elif failed is None:
                failed = error  # the first in the order they were opened before
        if failed is not None:
            raise failed
        if clean:
            marker.unlink()
            fsync_dir(self.data_dir)

    # ------------------------------------------------------------ topics

    def create_topic(
        self, name: str, num_partitions: int, configs: Mapping[str, str] | None = None
    ) -> TopicInfo:
        return self.create_topics([(name, num_partitions, configs)])[0]

    def create_topics(
        self, specs: Sequence[tuple[str, int, Mapping[str, str] | None]]
    ) -> list[TopicInfo]:
        """Creates the topics together, all or none: one write of the topic
        table and one fsync of the data directory for all of them (a first
        start's two internal topics: three fsyncs instead of six)."""
        self.load()
        made: list[tuple[TopicInfo, LogConfig]] = []
        try:
            for name, num_partitions, configs in specs:
                made.append(self._new_topic(name, num_partitions, configs))
            self._save()
        except BaseException:
            for info, _ in made:
                del self._topics[info.name]
            raise
        self._make_partition_dirs([(info.name, range(info.num_partitions)) for info, _ in made])
        for info, log_cfg in made:
            for p in range(info.num_partitions):
                self._logs[(info.name, p)] = self._open_log(info.name, p, log_cfg)
        return [info for info, _ in made]

    def _new_topic(
        self, name: str, num_partitions: int, configs: Mapping[str, str] | None
    ) -> tuple[TopicInfo, LogConfig]:
        """Checks a new topic and enters it in the table (not yet saved)."""
        if not valid_topic_name(name):
            raise InvalidTopicError(f"invalid topic name {name!r}")
        if name in self._topics:
            raise TopicExistsError(f"topic {name!r} already exists")
        normal = name.replace(".", "_")
        for other in self._topics:
            if other.replace(".", "_") == normal:
                raise InvalidTopicError(f"topic {name!r} collides with {other!r}")
        if num_partitions < 1:
            raise InvalidPartitionsError("number of partitions must be at least 1")
        cfgs = {str(k): str(v) for k, v in (configs or {}).items()}
        log_cfg = self._log_config(cfgs)
        info = TopicInfo(name, uuid.uuid4(), num_partitions, cfgs)
        self._topics[name] = info
        return info, log_cfg

    def add_partitions(self, name: str, new_total: int) -> TopicInfo:
        self.load()
        info = self._topics.get(name)
        if info is None:
            raise UnknownTopicError(f"unknown topic {name!r}")
        if new_total <= info.num_partitions:
            raise InvalidPartitionsError(
                f"topic {name!r} has {info.num_partitions} partitions; {new_total} is not more"
            )
        new = TopicInfo(name, info.topic_id, new_total, info.configs)
        self._topics[name] = new
        try:
            self._save()
        except BaseException:
            self._topics[name] = info
            raise
        cfg = self._log_config(info.configs)
        self._make_partition_dirs([(name, range(info.num_partitions, new_total))])
        for p in range(info.num_partitions, new_total):
            self._logs[(name, p)] = self._open_log(name, p, cfg)
        return new

    def set_topic_configs(self, name: str, configs: Mapping[str, str]) -> TopicInfo:
        """Replaces a topic's config overrides (AlterConfigs)."""
        self.load()
        info = self._topics.get(name)
        if info is None:
            raise UnknownTopicError(f"unknown topic {name!r}")
        cfgs = {str(k): str(v) for k, v in configs.items()}
        log_cfg = self._log_config(cfgs)
        new = TopicInfo(name, info.topic_id, info.num_partitions, cfgs)
        self._topics[name] = new
        try:
            self._save()
        except BaseException:
            self._topics[name] = info
            raise
        for p in range(info.num_partitions):
            log = self._logs.get((name, p))
            if log is not None:
                log.config = log_cfg  # type: ignore[attr-defined]
        return new

    def delete_topic(self, name: str) -> None:
        self.load()
        info = self._topics.pop(name, None)
        if info is None:
            raise UnknownTopicError(f"unknown topic {name!r}")
        self._save()
        for p in range(info.num_partitions):
            log = self._logs.pop((name, p), None)
            if isinstance(log, SegmentLog):
                log.delete()

    def names_by_id(self) -> dict[uuid.UUID, str]:
        """topic id -> name, rebuilt only after the topic table changed (Fetch v13+)."""
        version, names = self._names_by_id
        if version != self.version:
            names = {info.topic_id: name for name, info in self._topics.items()}
            self._names_by_id = (self.version, names)
        return names

    def topics(self) -> dict[str, TopicInfo]:
        return dict(self._topics)

    def image(self) -> Mapping[str, TopicInfo]:
        """The topic table as it is now, fixed (Kafka's MetadataImage): a later
        change makes a new image and leaves this one as it was. Made once per
        change of the table, so taking it costs a request nothing."""
        version, image = self._image
        if version != self.version:
            image = MappingProxyType(dict(self._topics))
            self._image = (self.version, image)
        return image

    def topic(self, name: str) -> TopicInfo | None:
        """One topic's info without copying the whole table (hot paths)."""
        return self._topics.get(name)

    def topic_config(self, name: str) -> LogConfig:
        info = self._topics.get(name)
        return self._log_config(info.configs if info else {})

    # ------------------------------------------------------------ logs

    def get(self, topic: str, partition: int) -> PartitionLog | None:
        return self._logs.get((topic, partition))

    def logs(self) -> list[PartitionLog]:
        return list(self._logs.values())

    def unflushed(self) -> list[PartitionLog]:
        return [log for log in self._logs.values() if log.flushed_offset < log.log_end_offset]

    def run_retention(self, now_ms: int) -> int:
        """Deletes expired segments of every log; returns how many."""
        deleted = 0
        for log in list(self._logs.values()):
            if isinstance(log, SegmentLog):
                deleted += log.run_retention(now_ms)
            elif isinstance(log, MemoryLog):
                deleted += log.run_retention(now_ms)
        return deleted

    def run_cleaner(self, now_ms: int) -> CleanStats:
        """Compacts every log whose cleanup.policy includes compact."""
        stats = CleanStats()
        for log in list(self._logs.values()):
            if isinstance(log, SegmentLog | MemoryLog) and log.config.compact:
                stats.add(log.compact(now_ms))
        return stats

    def flush_all(self) -> None:
        for log in list(self._logs.values()):
            log.flush()

    def close(self) -> None:
        """Flushes and closes every log, then marks the shutdown clean."""
        failed = []
        for log in list(self._logs.values()):
            try:
                if isinstance(log, SegmentLog):
                    log.close()
                else:
                    log.flush()
            except OSError as exc:  # a disk fault: the next start recovers these
                failed.append(f"{log.topic}-{log.partition}: {exc}")
        self._logs.clear()
        if failed:
            logger.error("unclean shutdown, logs not flushed: %s", "; ".join(failed))
            return
        if not self.memory and self.data_dir is not None and self._loaded:
            marker = self.data_dir / CLEAN_SHUTDOWN_FILE
            marker.write_bytes(b"")
            fsync_dir(self.data_dir)

    # ------------------------------------------------------------ helpers

    def _log_config(self, configs: Mapping[str, str]) -> LogConfig:
        try:
            return LogConfig.resolve(self.config, configs)
        except InvalidConfigError as exc:
            raise TopicConfigError(str(exc)) from exc

    def _partition_dir(self, topic: str, partition: int) -> Path:
        assert self.data_dir is not None
        return self.data_dir / f"{topic}-{partition}"

    def _make_partition_dirs(self, partitions: Sequence[tuple[str, range]]) -> None:
        """Creates the new partitions' directories with one fsync of the data
        directory for all of them (a log opened on a new directory fsyncs its
        parent itself: 50 fsyncs for __consumer_offsets at a first start)."""
        if self.memory:
            return
        assert self.data_dir is not None
        made = False
        for topic, numbers in partitions:
            for p in numbers:
                path = self._partition_dir(topic, p)
                if not path.exists():
                    path.mkdir(parents=True)
                    made = True
        if made:
            fsync_dir(self.data_dir)

    def _open_log(self, topic: str, partition: int, cfg: LogConfig) -> PartitionLog:
        if self.memory:
            return MemoryLog(topic, partition, cfg)
        return SegmentLog(self._partition_dir(topic, partition), topic, partition, cfg, False)

    def _save(self) -> None:
        self.version += 1  # every change to the topic table passes here
        if self.memory:
            return
        assert self.data_dir is not None
        self.data_dir.mkdir(parents=True, exist_ok=True)
        doc = {
            "version": 1,
            "topics": [
                {
                    "name": t.name,
                    "topic_id": str(t.topic_id),
                    "num_partitions": t.num_partitions,
                    "configs": t.configs,
                }
                for t in self._topics.values()
            ],
        }
        tmp = self.data_dir / (METADATA_FILE + ".tmp")
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.data_dir / METADATA_FILE)
        fsync_dir(self.data_dir)
