"""CPU seconds of the read paths' record-batch decoding, compared across source trees.

The client's `decode_records` (what `Consumer.poll` runs on every Fetch answer)
and the Spark source's `decode_into` + `Columns.to_arrow` (what each Spark
partition reader runs) decode the same bytes: uncompressed v2 batches of 1,000
records, built once by this process's muster. Each tree decodes them in a
process of its own (`PYTHONPATH=<tree>/src`), the trees alternating round by
round; a figure is the least process CPU time of `--reps` decodes in one
process, then the median over `--rounds`. CPU time, not wall time, so that a
loaded machine (other processes taking the cores) barely moves it; no broker
or socket is involved, which isolates the decoder from the network path that
client_throughput.py and spark_source.py also time.

    .venv/bin/python bench/decode_cpu.py --tree old=/path/old/src --tree new=src
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BATCH = 1_000
# (name, records, value size, keyed): the client bench's rows and the Spark bench's data
CASES = [
    ("client 100 B", 200_000, 100, False),
    ("client 1 KiB", 100_000, 1024, False),
    ("spark 100 B keyed", 200_000, 100, True),
]


def build(records: int, size: int, keyed: bool, batch: int = BATCH) -> bytes:
    from muster.records.batch import Record, build_batch

    value = b"x" * size
    out = bytearray()
    ts = 1_700_000_000_000
    for base in range(0, records, batch):
        n = min(batch, records - base)
        recs = [
            Record(b"%d" % (base + i) if keyed else None, value, timestamp=ts + i // 50)
            for i in range(n)
        ]
        out += build_batch(recs, base_offset=base, timestamp_ms=ts)
    return bytes(out)


def worker(path: str, reps: int) -> None:
    """Decodes each case `reps` times; prints {case: least CPU seconds} as JSON."""
    from muster.client.core.decode import decode_records
    from muster.spark.decode import Columns, decode_into

    data = pickle.loads(Path(path).read_bytes())
    best: dict[str, float] = {}
    for name, records, _size, _keyed in CASES:
        blob = data[name]
        times = []
        for _ in range(reps):
            t0 = time.process_time()
            if name.startswith("client"):
                recs, nxt = decode_records(("t", 0), blob, 0)
                n = len(recs)
            else:
                cols = Columns(False)
                nxt = decode_into(cols, blob, 0, records)
                n = cols.to_arrow("t", 0).num_rows
            times.append(time.process_time() - t0)
            recs = cols = None  # freed outside the timed part
            if n != records or nxt != records:
                raise RuntimeError(f"{name}: decoded {n} records, next {nxt}")
        best[name] = min(times)
    print(json.dumps(best))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--tree",
        action="append",
        metavar="NAME=SRC",
        default=[],
        help="a source tree to measure (repeat; the last is 'after', the others 'before')",
    )
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json", metavar="FILE")
    ap.add_argument(
        "--batch", type=int, default=BATCH, help="records a batch (librdkafka's: ~9,000 of 100 B)"
    )
    ap.add_argument("--worker", metavar="DATA", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.reps)
        return 0
    trees = dict(t.split("=", 1) for t in args.tree)
    if len(trees) < 2:
        ap.error("give at least two --tree NAME=SRC")
    data = {name: build(n, size, keyed, args.batch) for name, n, size, keyed in CASES}
    results: dict[str, dict[str, list[float]]] = {t: {c[0]: [] for c in CASES} for t in trees}
    loads = []
    with tempfile.NamedTemporaryFile(suffix=".pickle") as f:
        f.write(pickle.dumps(data))
        f.flush()
        for r in range(args.rounds):
            order = list(trees) if r % 2 == 0 else list(reversed(trees))
            for t in order:
                env = {**os.environ, "PYTHONPATH": str(Path(trees[t]).resolve())}
                cmd = [sys.executable, __file__, "--worker", f.name, "--reps", str(args.reps)]
                out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
                for name, secs in json.loads(out.stdout.splitlines()[-1]).items():
                    results[t][name].append(secs)
                loads.append(os.getloadavg()[0])
                print(f"round {r + 1} {t:>8}: {out.stdout.strip()}", flush=True)
    after = list(trees)[-1]
    medians = {t: {c: statistics.median(v) for c, v in results[t].items()} for t in trees}
    load = f"load 1-min {min(loads):.1f}..{max(loads):.1f}"
    print(f"\nmedian CPU seconds over {args.rounds} rounds ({load})")
    befores = [t for t in trees if t != after]
    head = "".join(f"{t:>10}" for t in trees) + "".join(f"  {after}/{t}" for t in befores)
    print(f"{'case':<20}{head}   (speed ratio: >1 faster after)")
    for name, *_ in CASES:
        row = "".join(f"{medians[t][name]:>10.3f}" for t in trees)
        for t in befores:
            width = len(f"  {after}/{t}")
            row += f"{medians[t][name] / medians[after][name]:>{width}.2f}"
        print(f"{name:<20}{row}")
    if args.json:
        out = {"trees": trees, "raw": results, "medians": medians, "loads": loads}
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
