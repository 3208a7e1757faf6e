"""Server time of the console's pages with 1,000 groups and 10,000 partitions.

Starts a muster broker (in memory) on a free port, creates 20 topics of 500
partitions, 1,000 groups with committed offsets (no members), then asks each
page `--runs` times through the ASGI app (no HTTP stack, the same event loop)
and prints the median and worst server time per page (the page's own
`Server-Timing` figure).

    .venv/bin/python bench/console_pages.py [--groups 1000] [--topics 20] [--partitions 500]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from starlette.testclient import TestClient

from muster.client import Admin, NewTopic
from muster.console.app import create_app
from tests.support.brokers import MusterProcess


def setup(bootstrap: str, groups: int, topics: int, partitions: int) -> None:
    admin = Admin({"bootstrap.servers": bootstrap})
    try:
        admin.create_topics([NewTopic(f"bench-{t:02d}", partitions) for t in range(topics)])
        for g in range(groups):
            topic = f"bench-{g % topics:02d}"
            admin.alter_group_offsets(f"group-{g:04d}", {(topic, p): 0 for p in range(8)})
    finally:
        admin.close()


def server_ms(response: object) -> float:
    header = response.headers["Server-Timing"]  # type: ignore[attr-defined]
    return float(header.split("dur=")[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--partitions", type=int, default=500)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        broker = MusterProcess(
            Path(tmp) / "data", settings={"muster.storage": "memory", "muster.log.level": "INFO"}
        ).start()
        try:
            setup(broker.bootstrap, args.groups, args.topics, args.partitions)
            pages = [
                "/",
                "/stats",
                "/groups",
                "/groups?page=15&q=group-0",
                "/groups/group-0123",
                "/topics",
                "/topics/bench-07",
                "/topics/bench-07?page=4",
                "/topics/bench-07/messages?partition=3",
            ]
            with TestClient(create_app({"bootstrap.servers": broker.bootstrap})) as http:
                print(
                    f"{args.groups} groups, {args.topics * args.partitions} partitions; "
                    f"server time per page over {args.runs} runs (first run excluded)"
                )
                for path in pages:
                    http.get(path)  # connections, caches
                    times = []
                    for _ in range(args.runs):
                        response = http.get(path)
                        assert response.status_code == 200, (path, response.status_code)
                        times.append(server_ms(response))
                    print(
                        f"  {path:42s} median {statistics.median(times):7.1f} ms"
                        f"   max {max(times):7.1f} ms"
                    )
        finally:
            broker.close()


if __name__ == "__main__":
    main()
