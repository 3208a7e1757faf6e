"""CPU seconds of the group coordinator's load, in-process, per source tree (issue 15).

Runs what ``server/group_runtime/service.py`` does after a restart without the
broker around it: opens a copy of a prepared data directory with ``LogManager``
and calls every shard runtime's ``load()`` (the collector off, as there), timing
each phase with ``time.process_time``. Run it with ``PYTHONPATH`` pointing at
each tree alternately to compare them; it uses only APIs that trees from before
issue 15 have too.

    PYTHONPATH=src .venv/bin/python bench/load_cpu.py prepare /tmp/prepared
    PYTHONPATH=src .venv/bin/python bench/load_cpu.py load /tmp/prepared [--profile out.prof]
"""

from __future__ import annotations

import argparse
import gc
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

OFFSETS_TOPIC = "__consumer_offsets"


def prepare(data_dir: Path, records: int) -> None:
    import coordinator_load as cl

    from muster.config import BrokerConfig
    from muster.log.manager import LogManager

    mgr = LogManager(data_dir, BrokerConfig())
    mgr.load()
    mgr.create_topic(OFFSETS_TOPIC, cl.NUM_PARTITIONS, {"cleanup.policy": "compact"})
    mgr.close()
    cl.write_records(data_dir, cl.variants(records)[0])


def load(prepared: Path, profile: str | None) -> dict[str, float]:
    import muster
    from muster.config import BrokerConfig
    from muster.log.manager import LogManager
    from muster.server.group_runtime.runtime import BackgroundLane, ShardRuntime

    work = Path(tempfile.mkdtemp(prefix="muster-load-cpu-")) / "data"
    shutil.copytree(prepared, work)
    out: dict[str, float] = {}
    try:
        config = BrokerConfig()
        c0 = time.process_time()
        mgr = LogManager(work, config)
        mgr.load()
        out["open_logs_cpu_s"] = time.process_time() - c0
        c0 = time.process_time()
        from muster.coordinator.shard import CoordinatorShard

        out["import_core_cpu_s"] = time.process_time() - c0
        count = mgr.topics()[OFFSETS_TOPIC].num_partitions
        lane = BackgroundLane()
        gc.disable()
        prof = None
        if profile:
            import cProfile

            prof = cProfile.Profile()
            prof.enable()
        c0 = time.process_time()
        w0 = time.perf_counter()
        total = 0
        for p in range(count):
            plog = mgr.get(OFFSETS_TOPIC, p)
            runtime = ShardRuntime(CoordinatorShard(p, config), plog, None, None, lane)  # type: ignore[arg-type]
            total += runtime.load()
        out["load_cpu_s"] = time.process_time() - c0
        out["load_wall_s"] = time.perf_counter() - w0
        if prof is not None:
            prof.disable()
            prof.dump_stats(profile)
        gc.enable()
        out["records"] = total
        mgr.close()
    finally:
        shutil.rmtree(work.parent, ignore_errors=True)
    out["tree"] = str(Path(muster.__file__).parent)  # type: ignore[assignment]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["prepare", "load"])
    ap.add_argument("data_dir", type=Path)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--profile", help="write a cProfile of the loads here")
    args = ap.parse_args()
    if args.what == "prepare":
        prepare(args.data_dir, args.records)
    else:
        print(json.dumps(load(args.data_dir, args.profile)))


if __name__ == "__main__":
    main()
