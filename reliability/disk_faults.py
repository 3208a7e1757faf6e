"""Disk-fault campaign: the data directory's file system fills up, then space returns.

    .venv/bin/python reliability/disk_faults.py [--rounds 3] [--fs-mib 8]

Needs root (it mounts a small tmpfs as the data directory). Each round fills
the file system with acks=all produce (confluent-kafka) until the broker
refuses, then, while it is full, checks that every produce is answered
KAFKA_STORAGE_ERROR, an offset commit is answered (NOT_COORDINATOR, what
Kafka's coordinator sends for a storage error on its log) within a bound and
OffsetFetch returns the last acknowledged commit; then it frees space and
checks that produce and commit work again with no restart. At the end: every
acknowledged record is read back where it was acknowledged, every
acknowledged commit is returned, the broker is killed -9 and restarted, the
same holds, and the logs reopen with no torn or corrupt tail to cut.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]

from campaign_support import (  # noqa: E402  (reliability/campaign_support.py)
    MusterProcess,
    create_topic,
    read_all,
    resize_fs,
    small_fs,
    timed,
    wait_until,
)
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition  # noqa: E402

from muster.log.segment_log import SegmentLog  # noqa: E402

TOPIC, GROUP, PARTITIONS = "disk-faults", "disk-faults-group", 2
ANSWER_BOUND_S = 5.0  # every request is answered within this while the disk is full


@dataclass
class Figures:
    rounds: int = 0
    acked: dict[tuple[int, int], bytes] = field(default_factory=dict)
    refused: dict[str, int] = field(default_factory=dict)  # produce error name -> count
    commits_acked: int = 0
    commit_errors: dict[str, int] = field(default_factory=dict)
    last_commit: dict[int, int] = field(default_factory=dict)
    slowest_answer_full_s: float = 0.0
    resume_s: list[float] = field(default_factory=list)
    lost: int = 0
    commits_lost: int = 0
    truncations: int = 0

    def line(self) -> str:
        refused = sum(self.refused.values())
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(self.refused.items())) or "none"
        cerr = ", ".join(f"{k} {v}" for k, v in sorted(self.commit_errors.items())) or "none"
        resume = max(self.resume_s) if self.resume_s else float("nan")
        return (
            f"disk-faults: {self.rounds} fill/free rounds, {len(self.acked):,} acked records, "
            f"{self.lost} lost, {refused:,} produce refused ({kinds}), "
            f"{self.commits_acked} acked commits, {self.commits_lost} lost, "
            f"commits refused while full ({cerr}), slowest answer while full "
            f"{self.slowest_answer_full_s:.2f}s, resumed without restart within "
            f"{resume * 1000:.0f} ms of space returning, "
            f"{self.truncations} torn tails cut on reopen"
        )


def _producer(bootstrap: str) -> Producer:
    # retries=0: the client reports the broker's own error, not its retry timeout
    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "retries": 0,
            "linger.ms": 2,
            "message.timeout.ms": 20000,
        }
    )


def _produce(producer: Producer, figures: Figures, count: int, tag: str) -> int:
    """Produces until `count` records or the broker refuses; returns how many were refused."""
    refused: list[str] = []

    def on_delivery(err: KafkaError | None, msg: Any) -> None:
        if err is None:
            figures.acked[(msg.partition(), msg.offset())] = msg.value()
        else:
            refused.append(err.name())

    for i in range(count):
        producer.produce(TOPIC, f"{tag}-{i}".encode() + b"." * 2000, callback=on_delivery)
        producer.poll(0)
        if refused:
            break
    producer.flush(60)
    for name in refused:
        figures.refused[name] = figures.refused.get(name, 0) + 1
    return len(refused)


def _fill(path: Path) -> None:
    try:
        with open(path, "wb", buffering=0) as f:
            while True:
                f.write(b"\0" * 4096)
    except OSError:  # ENOSPC: full to the last page (even creating it may fail)
        pass


def _commit(consumer: Consumer, offsets: dict[int, int]) -> Any:
    return consumer.commit(
        offsets=[TopicPartition(TOPIC, p, o) for p, o in offsets.items()], asynchronous=False
    )


def _fetch(consumer: Consumer) -> dict[int, int]:
    got = consumer.committed([TopicPartition(TOPIC, p) for p in range(PARTITIONS)], timeout=10)
    return {tp.partition: tp.offset for tp in got if tp.offset >= 0}


def _round(broker: MusterProcess, mnt: Path, figures: Figures, fs_bytes: int, n: int) -> None:
    producer = _producer(broker.bootstrap)
    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": GROUP, "enable.auto.commit": False}
    )
    try:
        # fill: produce until the file system is full and the broker says so
        refused = 0
        while refused == 0:
            refused = _produce(producer, figures, 2000, f"r{n}")
        # and the last pages too (tmpfs hands out 4 KiB pages: a small commit
        # record may still fit after a produce batch did not)
        filler = mnt / f"filler-{n}"
        _fill(filler)
        # while full: every produce refused cleanly, commits answered, fetch exact
        for _ in range(3):
            took, _ = timed(lambda: _produce(producer, figures, 5, f"full{n}"))
            figures.slowest_answer_full_s = max(figures.slowest_answer_full_s, took)
        want = {p: 1000 * n + p for p in range(PARTITIONS)}
        took, result = timed(lambda: _commit(consumer, want))
        figures.slowest_answer_full_s = max(figures.slowest_answer_full_s, took)
        if isinstance(result, KafkaException):
            name = result.args[0].name()
            figures.commit_errors[name] = figures.commit_errors.get(name, 0) + 1
        elif isinstance(result, Exception):
            raise result
        else:  # a commit small enough to fit is fine too, if it is really there
            figures.commits_acked += 1
            figures.last_commit = want
        took, fetched = timed(lambda: _fetch(consumer))
        figures.slowest_answer_full_s = max(figures.slowest_answer_full_s, took)
        if isinstance(fetched, Exception):
            raise AssertionError(f"OffsetFetch failed while the disk was full: {fetched!r}")
        if fetched != figures.last_commit:
            figures.commits_lost += 1
        # space returns: no restart, produce and commit work again
        filler.unlink(missing_ok=True)
        resize_fs(mnt, fs_bytes * (n + 2))
        started = time.monotonic()
        wait_until(lambda: _produce(producer, figures, 1, f"back{n}") == 0, 60, "produce again")
        want = {p: 1000 * n + 500 + p for p in range(PARTITIONS)}
        wait_until(
            lambda: not isinstance(timed(lambda: _commit(consumer, want))[1], Exception),
            60,
            "commit again",
        )
        figures.resume_s.append(time.monotonic() - started)
        figures.commits_acked += 1
        figures.last_commit = want
        if _fetch(consumer) != want:
            figures.commits_lost += 1
        figures.rounds += 1
    finally:
        consumer.close()
        producer.flush(10)


def _check_everything(broker: MusterProcess, figures: Figures) -> None:
    ends: dict[int, int] = {}
    for p, o in figures.acked:
        ends[p] = max(ends.get(p, 0), o + 1)
    got = wait_until(lambda: _read_or_none(broker, ends), 120, "acked records readable")
    figures.lost = sum(1 for key, value in figures.acked.items() if got.get(key) != value)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": GROUP})
    try:
        fetched = wait_until(lambda: _fetch_or_none(consumer), 60, "OffsetFetch")
    finally:
        consumer.close()
    if fetched != figures.last_commit:
        figures.commits_lost += 1


def _read_or_none(
    broker: MusterProcess, ends: dict[int, int]
) -> dict[tuple[int, int], bytes] | None:
    try:
        return read_all(broker.bootstrap, TOPIC, PARTITIONS, ends)
    except KafkaException:
        return None


def _fetch_or_none(consumer: Consumer) -> dict[int, int] | None:
    try:
        return _fetch(consumer)
    except KafkaException:
        return None


def run(rounds: int, fs_mib: int, workdir: Path | None = None) -> Figures:
    figures = Figures()
    fs_bytes = fs_mib << 20
    with small_fs(fs_bytes) as mnt:
        broker = MusterProcess(mnt / "data", {"log.segment.bytes": str(1 << 20)})
        if workdir is not None:
            broker.log_path = workdir / "disk-faults-broker.log"
        try:
            broker.start()
            create_topic(broker.bootstrap, TOPIC, PARTITIONS)
            for n in range(rounds):
                _round(broker, mnt, figures, fs_bytes, n)
            _check_everything(broker, figures)
            broker.kill()
            broker.start()
            _check_everything(broker, figures)
            broker.stop()
            for p in range(PARTITIONS):  # reopened as after a crash: nothing to cut
                plog = SegmentLog(mnt / "data" / f"{TOPIC}-{p}", TOPIC, p)
                figures.truncations += plog.recovered_truncations
                plog.close()
        finally:
            broker.close()
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--fs-mib", type=int, default=8)
    args = parser.parse_args(argv)
    figures = run(args.rounds, args.fs_mib)
    print(figures.line())
    bad = figures.lost or figures.commits_lost or figures.truncations
    return 1 if bad or figures.slowest_answer_full_s > ANSWER_BOUND_S else 0


if __name__ == "__main__":
    sys.exit(main())
