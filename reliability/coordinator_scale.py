"""Campaign: the group coordinator at scale — loading 10M offset records, then expiring them.

1. A data directory is prepared with muster's own log code: G groups (default
   100,000), each with one OffsetCommit of 100 partitions (G x 100 records, 10M by
   default) in the `__consumer_offsets` partition Kafka's hash gives the group,
   committed 8 days ago (past the default 7-day `offsets.retention.minutes`).
2. `muster serve` starts on it. From the moment the port opens, a raw-socket
   client asks OffsetFetch (v8) for a group that lives in the partition loaded last,
   and counts the answers COORDINATOR_LOAD_IN_PROGRESS until the offset is served.
   The broker's RSS is sampled throughout.
3. Once served, the client commits and fetches its own group in a loop, timing
   every request, while the offset expiry (first run `--expiry-after-ms` after
   start) drops every loaded group's offsets. Reported: the longest request and
   the p99 during the run, and that the expired groups are really empty afterwards.

    .venv/bin/python reliability/coordinator_scale.py              # 100,000 groups, 10M records
    .venv/bin/python reliability/coordinator_scale.py --groups 1000 # a short run (CI's size)

The closing line: `coordinator-scale: 10,000,000 records, 100,000 groups, served after
X s, N answers COORDINATOR_LOAD_IN_PROGRESS, peak RSS M MiB; expiry: longest request
L ms, p99 P ms, K groups emptied`.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "bench"), str(Path(__file__).resolve().parent), str(ROOT)]

import common  # noqa: E402  (bench/common.py: brokers on free ports, stopped on exit)
from campaign_support import RawClient, rss_mib  # noqa: E402
from coordinator_load import LOADED_RE, create_offsets_topic, wait_for_line  # noqa: E402

OFFSETS_TOPIC = "__consumer_offsets"
NUM_PARTITIONS = 50
PARTS = 100
TOPIC = "scale-topic"
DAY_MS = 86_400_000
LOAD_IN_PROGRESS = 14


def group_name(i: int) -> str:
    return f"scale-group-{i:06d}"


def prepare(data_dir: Path, groups: int) -> float:
    """Writes groups x 100 OffsetCommit records, 8 days old; seconds taken."""
    from muster.config import BrokerConfig
    from muster.coordinator.partitioning import partition_for
    from muster.log.manager import LogManager
    from muster.records.batch import build_batch
    from muster.records.offsets_topic import OffsetCommitValue, offset_commit_record

    create_offsets_topic(data_dir)
    started = time.monotonic()
    mgr = LogManager(data_dir, BrokerConfig())
    mgr.load()
    logs = {p: mgr.get(OFFSETS_TOPIC, p) for p in range(NUM_PARTITIONS)}
    ts = int(time.time() * 1000) - 8 * DAY_MS
    try:
        for g in range(groups):
            group = group_name(g)
            records = [
                offset_commit_record(group, TOPIC, p, OffsetCommitValue(1000 + p, -1, "", ts))
                for p in range(PARTS)
            ]
            log = logs[partition_for(group, NUM_PARTITIONS)]
            assert log is not None
            log.append(build_batch(records, timestamp_ms=ts), ts)
        mgr.flush_all()
    finally:
        mgr.close()
    return time.monotonic() - started


def last_loaded_group(groups: int) -> str:
    """A group of the partition the broker loads last (the highest)."""
    from muster.coordinator.partitioning import partition_for

    best = max(range(groups), key=lambda g: partition_for(group_name(g), NUM_PARTITIONS))
    return group_name(best)


class Wire(RawClient):
    """The two requests the campaign times, over one raw connection."""

    def fetch_offset(self, group: str, partition: int) -> tuple[int, int]:
        """(error code, committed offset) of one partition of TOPIC."""
        answer = self.call(
            9,
            8,
            {
                "groups": [
                    {
                        "group_id": group,
                        "topics": [{"name": TOPIC, "partition_indexes": [partition]}],
                    }
                ]
            },
        )
        g = answer.groups[0]
        if g.error_code:
            return int(g.error_code), -1
        p = g.topics[0].partitions[0]
        return int(p.error_code), int(p.committed_offset)

    def commit(self, group: str, offset: int) -> int:
        answer = self.call(
            8,
            8,
            {
                "group_id": group,
                "generation_id_or_member_epoch": -1,
                "member_id": "",
                "topics": [
                    {
                        "name": TOPIC,
                        "partitions": [{"partition_index": 0, "committed_offset": offset}],
                    }
                ],
            },
        )
        return int(answer.topics[0].partitions[0].error_code)


@dataclass
class Figures:
    records: int = 0
    groups: int = 0
    prepare_s: float = 0.0
    listening_s: float = 0.0
    served_s: float = 0.0
    load_in_progress: int = 0
    loaded_log_ms: int = 0
    peak_rss_mib: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)
    # wall-clock start of each timed request (to line the slowest up with a profile)
    started_at: list[float] = field(default_factory=list)
    emptied: int = 0
    checked: int = 0
    expiry_s: float = -1.0  # from the pass's start until the sampled groups were empty


def run(
    groups: int, expiry_after_ms: int, probe_s: float, keep: bool, max_probe_s: float = 900.0
) -> Figures:
    fig = Figures(records=groups * PARTS, groups=groups)
    data = common.temp_data_dir("muster-scale-")
    try:
        print(f"preparing {fig.records:,} records for {groups:,} groups in {data} ...", flush=True)
        fig.prepare_s = prepare(data, groups)
        print(f"  written in {fig.prepare_s:.1f} s", flush=True)
        probe = last_loaded_group(groups)
        port = common.free_port()
        settings = {
            "offsets.retention.check.interval.ms": str(expiry_after_ms),
            "group.initial.rebalance.delay.ms": "0",
        }
        broker = common.Broker(
            name="muster",
            argv=common.muster_argv(data, "127.0.0.1", port, settings),
            host="127.0.0.1",
            port=port,
            log_path=common.RESULTS_DIR / "logs" / f"muster-scale-{port}.log",
            data_dir=data,
        )
        stop = threading.Event()
        peak = [0.0]

        def sample() -> None:
            while not stop.is_set() and broker.proc is not None:
                try:
                    peak[0] = max(peak[0], rss_mib(broker.proc.pid))
                except OSError:
                    return
                time.sleep(0.1)

        t0 = time.monotonic()
        broker.start(timeout=300)
        fig.listening_s = time.monotonic() - t0
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            wire = Wire(port, timeout=60)
            while True:
                error, offset = wire.fetch_offset(probe, PARTS - 1)
                if error == LOAD_IN_PROGRESS:
                    fig.load_in_progress += 1
                    time.sleep(0.01)
                    continue
                if error or offset != 1000 + PARTS - 1:
                    raise RuntimeError(
                        f"loaded group {probe} answered error {error} offset {offset}"
                    )
                break
            fig.served_s = time.monotonic() - t0
            m = wait_for_line(broker.log_path, LOADED_RE, 300, broker.proc)
            fig.loaded_log_ms = int(m.group(2))
            common.create_topic(broker.bootstrap, TOPIC, PARTS)
            # commits and fetches of a live group while every loaded group expires:
            # for probe_s at least, and on until the sampled groups are all empty
            # (the pass is over) or max_probe_s
            # the pass starts expiry_after_ms after the shards were loaded
            expiry_started = t0 + fig.served_s + expiry_after_ms / 1000
            sample = list(range(0, groups, max(1, groups // 200)))
            pending = sorted(set(sample) | {groups - 1})
            n = 0
            now = time.monotonic()
            until, give_up, next_check = now + probe_s, now + max_probe_s, now
            while (now := time.monotonic()) < until or (pending and now < give_up):
                if pending and now >= next_check:
                    next_check = now + 1.0
                    while pending and wire.fetch_offset(group_name(pending[0]), 0) == (0, -1):
                        pending.pop(0)
                    if not pending:
                        fig.expiry_s = time.monotonic() - expiry_started
                n += 1
                started = time.perf_counter()
                error = wire.commit("scale-live", n)
                if error:
                    raise RuntimeError(f"live commit failed with error {error}")
                if wire.fetch_offset("scale-live", 0) != (0, n):
                    raise RuntimeError("live commit not read back")
                fig.latencies_ms.append((time.perf_counter() - started) * 1000)
                fig.started_at.append(time.time() - (time.perf_counter() - started))
            for g in sample:
                fig.checked += 1
                if wire.fetch_offset(group_name(g), 0) == (0, -1):
                    fig.emptied += 1
        finally:
            stop.set()
            fig.peak_rss_mib = max(peak[0], fig.peak_rss_mib)
            broker.stop()
    finally:
        if not keep:
            shutil.rmtree(data, ignore_errors=True)
    return fig


def closing_line(fig: Figures) -> str:
    lat = sorted(fig.latencies_ms)
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else 0.0
    return (
        f"coordinator-scale: {fig.records:,} records, {fig.groups:,} groups, "
        f"served after {fig.served_s:.1f} s (load {fig.loaded_log_ms / 1000:.1f} s), "
        f"{fig.load_in_progress:,} answers COORDINATOR_LOAD_IN_PROGRESS, "
        f"peak RSS {fig.peak_rss_mib:,.0f} MiB; expiry: longest request "
        f"{max(lat, default=0):.0f} ms, p99 {p99:.1f} ms, median "
        f"{statistics.median(lat) if lat else 0:.1f} ms over {len(lat):,} commit+fetch, "
        f"pass over after {fig.expiry_s:.0f} s, "
        f"{fig.emptied}/{fig.checked} sampled groups emptied"
    )


def slowest(fig: Figures, n: int = 5) -> str:
    """The n slowest requests: when they started (epoch s) and how long they took."""
    worst = sorted(zip(fig.latencies_ms, fig.started_at, strict=True), reverse=True)[:n]
    return ", ".join(f"{ms:.0f} ms at {at:.3f}" for ms, at in worst)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--groups", type=int, default=100_000, help="groups of 100 offsets each")
    ap.add_argument(
        "--expiry-after-ms", type=int, default=30000, help="offsets.retention.check.interval.ms"
    )
    ap.add_argument("--probe-seconds", type=float, default=60.0, help="live requests timed for")
    ap.add_argument(
        "--max-probe-seconds",
        type=float,
        default=900.0,
        help="probing goes on past --probe-seconds until the expiry pass is over, at most this",
    )
    ap.add_argument("--keep", action="store_true", help="keep the data directory")
    args = ap.parse_args(argv)
    common.install_signal_handlers()
    try:
        fig = run(
            args.groups, args.expiry_after_ms, args.probe_seconds, args.keep, args.max_probe_seconds
        )
    finally:
        common.stop_all()
    print(f"slowest: {slowest(fig)}", flush=True)
    print(closing_line(fig), flush=True)
    return 0 if fig.emptied == fig.checked else 1


if __name__ == "__main__":
    raise SystemExit(main())
