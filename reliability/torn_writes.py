"""Torn writes: the last bytes of each kind of file cut off or overwritten,
then the broker started on the damaged copy. Each case must end recovered
(what is served is what was acknowledged there; a cut tail is only missing)
or refused with a clear message; never silently wrong.

Run by reliability/crash_loop.py on the data directory its last kill -9 left.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from campaign_support import MusterProcess, read_all
from confluent_kafka import Consumer, KafkaException, TopicPartition

Damage = Callable[[Path], None]


def truncate_tail(path: Path) -> None:
    size = path.stat().st_size
    with open(path, "r+b") as f:
        f.truncate(max(0, size - 7))


def corrupt_tail(path: Path) -> None:
    data = bytearray(path.read_bytes())
    for i in range(1, min(6, len(data)) + 1):
        data[-i] ^= 0x5A
    path.write_bytes(bytes(data))


MODES: dict[str, Damage] = {"truncated": truncate_tail, "corrupted": corrupt_tail}


def _newest(directory: Path, pattern: str) -> Path | None:
    found = sorted(p for p in directory.glob(pattern) if p.stat().st_size > 0)
    return found[-1] if found else None


def _oldest(directory: Path, pattern: str) -> Path | None:
    found = sorted(p for p in directory.glob(pattern) if p.stat().st_size > 0)
    return found[0] if found else None


def targets(data_dir: Path, topic: str, offsets_partition: int) -> dict[str, Path | None]:
    part = data_dir / f"{topic}-0"
    offsets = data_dir / f"__consumer_offsets-{offsets_partition}"
    return {
        "segment": _newest(part, "*.log"),
        "index": _oldest(part, "*.index"),  # a closed segment's: loaded, not rebuilt
        "time index": _oldest(part, "*.timeindex"),
        "producer snapshot": _newest(part, "*.snapshot") or _newest(part, "producer-state.json"),
        "log-start-offset.json": _newest(part, "log-start-offset.json"),
        "offsets-topic segment": _newest(offsets, "*.log"),
    }


@dataclass
class Outcome:
    kind: str
    mode: str
    verdict: str  # recovered | refused | WRONG | no such file
    detail: str


def _committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        got = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=30)
        return {tp.partition: tp.offset for tp in got if tp.offset >= 0}
    finally:
        consumer.close()


def check_case(
    pristine: Path,
    workdir: Path,
    kind: str,
    mode: str,
    topic: str,
    partitions: int,
    acked: dict[tuple[str, int, int], bytes],
    start_floor: dict[int, int],
    groups: dict[str, dict[tuple[str, int], set[int]]],
    offsets_partition: int,
) -> Outcome:
    copy = workdir / f"torn-{kind.replace(' ', '-')}-{mode}"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(pristine, copy / "data")
    target = targets(copy / "data", topic, offsets_partition)[kind]
    if target is None:
        return Outcome(kind, mode, "no such file", "")
    MODES[mode](target)
    broker = MusterProcess(copy / "data")
    try:
        try:
            broker.start()
        except RuntimeError:
            lines = [ln for ln in broker.log_text().splitlines() if ln.strip()]
            clear = bool(lines) and "Traceback" not in broker.log_text()
            return Outcome(kind, mode, "refused" if clear else "WRONG", lines[-1] if lines else "")
        ends = {p: 0 for p in range(partitions)}
        for t, p, o in acked:
            if t == topic:
                ends[p] = max(ends[p], o + 1)
        served = _read(broker, topic, partitions, ends)
        wrong = [
            (p, o)
            for (p, o), value in served.items()
            if ((topic, p, o) in acked and acked[(topic, p, o)] != value)
            or o < start_floor.get(p, 0)
        ]
        missing = sum(
            1
            for (t, p, o) in acked
            if t == topic and o >= start_floor.get(p, 0) and (p, o) not in served
        )
        bad_commits = []
        for group, attempted in groups.items():
            for p, offset in _committed(broker.bootstrap, group, topic, partitions).items():
                if offset not in attempted[(group, p)]:
                    bad_commits.append((group, p, offset))
        if wrong or bad_commits:
            detail = f"{len(wrong)} records served wrong, {len(bad_commits)} commits never made"
            return Outcome(kind, mode, "WRONG", detail)
        return Outcome(kind, mode, "recovered", f"{missing} acknowledged records cut")
    finally:
        broker.close()
        shutil.rmtree(copy, ignore_errors=True)


def _read(broker: MusterProcess, topic: str, partitions: int, ends: dict[int, int]) -> Any:
    for _ in range(3):
        try:
            return read_all(broker.bootstrap, topic, partitions, ends)
        except KafkaException:
            continue
    return read_all(broker.bootstrap, topic, partitions, ends)
