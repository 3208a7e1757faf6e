"""CPU seconds of the Spark source's partition reader, compared across source trees.

`muster.spark.fetch.read_range` (Fetch requests, the record-batch decoding and
the Arrow build that each Spark task runs) reads one partition of N keyed
100 B records produced by librdkafka (its batches, ~7,000 records each), with
no Spark around it: Spark's JVM makes an end-to-end read's CPU too noisy to
compare on a shared machine. Each tree reads in a process of its own
(`PYTHONPATH=<tree>/src`), the trees alternating round by round; a figure is
the least process CPU time of `--reps` reads in one process, then the median
over `--rounds`. The broker (this process's muster) is not counted.

    .venv/bin/python bench/spark_reader_cpu.py --tree old=/path/old/src --tree new=src
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def worker(bootstrap: str, topic: str, records: int, reps: int) -> None:
    from muster.spark.fetch import FetchRange, read_range

    r = FetchRange(
        bootstrap=bootstrap,
        topic=topic,
        partition=0,
        start=0,
        end=records,
        include_headers=False,
        fail_on_data_loss=True,
        max_bytes=4 * 1024 * 1024,
        timeout_s=30.0,
    )
    times = []
    for _ in range(reps):
        t0 = time.process_time()
        rows = sum(b.num_rows for b in read_range(r))
        times.append(time.process_time() - t0)
        if rows != records:
            raise RuntimeError(f"read {rows} rows, expected {records}")
    print(json.dumps(min(times)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--tree",
        action="append",
        metavar="NAME=SRC",
        default=[],
        help="a source tree to measure (repeat; the last is 'after')",
    )
    ap.add_argument("--records", type=int, default=500_000)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--worker", nargs=2, metavar=("BOOTSTRAP", "TOPIC"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(*args.worker, args.records, args.reps)
        return 0
    trees = dict(t.split("=", 1) for t in args.tree)
    if len(trees) < 2:
        ap.error("give at least two --tree NAME=SRC")

    import common
    from spark_source import produce

    results: dict[str, list[float]] = {t: [] for t in trees}
    loads = []
    with common.running("muster") as b:
        common.create_topic(b.bootstrap, "reader-cpu", 1)
        produce(b.bootstrap, "reader-cpu", args.records, 1)
        for r in range(args.rounds):
            for t in list(trees) if r % 2 == 0 else list(reversed(trees)):
                env = {**os.environ, "PYTHONPATH": str(Path(trees[t]).resolve())}
                cmd = [sys.executable, __file__, "--worker", b.bootstrap, "reader-cpu"]
                cmd += ["--records", str(args.records), "--reps", str(args.reps)]
                out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
                results[t].append(json.loads(out.stdout.splitlines()[-1]))
                loads.append(os.getloadavg()[0])
                print(f"round {r + 1} {t:>8}: {results[t][-1]:.3f} s", flush=True)
    after = list(trees)[-1]
    med = {t: statistics.median(v) for t, v in results.items()}
    load = f"load {min(loads):.1f}..{max(loads):.1f}"
    print(f"\nmedian CPU seconds over {args.rounds} rounds ({load})")
    for t in trees:
        print(f"{t:>8}: {med[t]:.3f} s   {after} vs {t}: {med[t] / med[after]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
