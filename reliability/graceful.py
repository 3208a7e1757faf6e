"""Graceful shutdown under load: SIGTERM while producers and committers run.

    .venv/bin/python reliability/graceful.py [--seconds 5]

The crash loop's third-party clients (reliability/crash_loop.py) run for
`--seconds`, then the broker gets SIGTERM. Checked:
- it exits 0 within its drain bound (requests already read are answered,
  for at most 3 s, then connections close);
- the stop was clean: `.clean-shutdown` written, and every partition holds a
  producer-state snapshot at its log end;
- the next start needs no recovery scan. How: a copy of the data directory
  is opened the way the broker opens it (LogManager.load, which sees the
  clean marker), with Segment.recover and the producer-state replay counted:
  the bytes scanned must be only each segment's tail past its last index
  entry (at most index.interval.bytes plus one batch), and no batch replayed;
- after the restart every acknowledged record and commit is there, and the
  records written twice (a write stored but not answered) are counted:
  Kafka's system tests expect none after a clean shutdown.
Closing line: `graceful: SIGTERM under load, exit 0 in X s; N acked records,
0 lost, D duplicates; C acked commits, 0 lost; next start: scanned B of T
bytes, 0 batches replayed, P/P producer snapshots`.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]

import crash_loop  # noqa: E402
from campaign_support import (  # noqa: E402
    MusterProcess,
    add_keep_option,
    campaign_workdir,
    create_topic,
    read_all,
)

from muster.config import BrokerConfig  # noqa: E402
from muster.log import segment, segment_log  # noqa: E402
from muster.log.manager import CLEAN_SHUTDOWN_FILE, LogManager  # noqa: E402
from muster.log.producer_recovery import PRODUCER_SNAPSHOT  # noqa: E402


@dataclass
class Figures:
    exit_code: int | None = None
    stop_s: float = 0.0
    clean_marker: bool = False
    snapshots: int = 0
    partitions: int = 0
    scanned: int = 0
    total_bytes: int = 0
    tail_bound_exceeded: int = 0
    replayed: int = 0
    acked: int = 0
    lost: int = 0
    duplicates: int = 0
    commits: int = 0
    commits_lost: int = 0

    def line(self) -> str:
        return (
            f"graceful: SIGTERM under load, exit {self.exit_code} in {self.stop_s:.1f}s; "
            f"{self.acked:,} acked records, {self.lost} lost, {self.duplicates} duplicates; "
            f"{self.commits:,} acked commits, {self.commits_lost} lost; next start: "
            f"clean marker {self.clean_marker}, scanned {self.scanned:,} of "
            f"{self.total_bytes:,} bytes ({self.tail_bound_exceeded} tails over the bound), "
            f"{self.replayed} batches replayed, {self.snapshots}/{self.partitions} "
            f"producer snapshots"
        )


def measure_next_start(data_dir: Path, figures: Figures) -> None:
    """Opens a copy as the broker would, counting what recovery reads."""
    copy = data_dir.parent / "next-start-copy"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(data_dir, copy)
    figures.clean_marker = (copy / CLEAN_SHUTDOWN_FILE).exists()
    for part in copy.iterdir():
        if part.is_dir():
            figures.partitions += 1
            figures.snapshots += (part / PRODUCER_SNAPSHOT).exists()
            figures.total_bytes += sum(p.stat().st_size for p in part.glob("*.log"))
    recover, replay = segment.Segment.recover, segment_log.SegmentLog._replay
    bound = BrokerConfig()["log.index.interval.bytes"] + (1 << 20)

    def counting_recover(seg: Any, start: int, check_crc: bool) -> Any:
        scanned = seg.size - start
        figures.scanned += scanned
        figures.tail_bound_exceeded += scanned > bound
        return recover(seg, start, check_crc)

    def counting_replay(log: Any, seg: Any) -> None:
        figures.replayed += sum(1 for _ in seg.iter_headers(0))
        replay(log, seg)

    segment.Segment.recover = counting_recover  # type: ignore[method-assign]
    segment_log.SegmentLog._replay = counting_replay  # type: ignore[method-assign]
    try:
        manager = LogManager(copy, BrokerConfig())
        manager.load()
        manager.close()
    finally:
        segment.Segment.recover = recover  # type: ignore[method-assign]
        segment_log.SegmentLog._replay = replay  # type: ignore[method-assign]
        shutil.rmtree(copy, ignore_errors=True)


def run(seconds: float, workdir: Path) -> Figures:
    figures = Figures()
    acked = crash_loop.Acked()
    broker = MusterProcess(workdir / "data", {"log.segment.bytes": str(64 << 10)})
    broker.start()
    try:
        create_topic(broker.bootstrap, crash_loop.TOPIC, crash_loop.PARTITIONS)
        create_topic(broker.bootstrap, crash_loop.TXN_TOPIC, 2)
        stop = threading.Event()
        threads = [
            threading.Thread(target=w, args=(broker.bootstrap, acked, stop))
            for w in crash_loop.WORKERS
        ]
        for t in threads:
            t.start()
        time.sleep(seconds)
        started = time.monotonic()
        figures.exit_code = broker.stop()
        figures.stop_s = time.monotonic() - started
        stop.set()
        measure_next_start(broker.data_dir, figures)
        broker.start()
        for t in threads:  # retries of what was not answered land now: count them
            t.join(120)
        loose = crash_loop.Figures()
        crash_loop.verify(broker, acked, loose)
        figures.acked, figures.lost = loose.acked, loose.lost + loose.moved
        figures.commits, figures.commits_lost = loose.commits, loose.commits_lost
        ends = {p: 0 for p in range(crash_loop.PARTITIONS)}
        for _, p, o in acked.records:
            ends[p] = max(ends[p], o + 1)
        stored = read_all(broker.bootstrap, crash_loop.TOPIC, crash_loop.PARTITIONS, ends)
        counts = Counter(stored.values())
        figures.duplicates = sum(n - 1 for n in counts.values() if n > 1)
    finally:
        broker.close()
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    add_keep_option(parser)
    args = parser.parse_args(argv)
    figures = run(args.seconds, campaign_workdir(args.keep, "muster-graceful-"))
    print(figures.line())
    ok = (
        figures.exit_code == 0
        and figures.clean_marker
        and figures.replayed == 0
        and figures.tail_bound_exceeded == 0
        and figures.lost == figures.commits_lost == 0
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
