"""Broker CPU of one small request, in-process, compared across source trees.

request_path.py measures a real broker over a socket, where a loaded 2-core
machine moves every figure; this runs the same request kinds through the
broker's own request path with no socket and no client in the measured
process: a `Broker` started in-process (data in a temp dir,
``muster.fsync=never``, as the peers never fsync), one `PlainStream` on a fake
transport, each request frame encoded once up front and handed to
`data_received` as a receive would, the answer taken from the transport's
`write` and checked for errors. What is timed (`time.process_time`) is
everything a request costs the broker's Python from the receive to the
answer's bytes: cutting the frame, the checks, decoding, the handler, the
coordinator's step, the record, the append (a real `pwrite` to the segment
file), encoding. Not timed: epoll, recv and send (four syscalls per request
on the real path, request_path.py's figures include them).

Each tree runs in a process of its own (``PYTHONPATH=<tree>/src``), the trees
alternating round by round; a figure is the least µs per request of `--reps`
in one process, then the median over `--rounds`.

    .venv/bin/python bench/request_cpu.py --tree before=/path/old/src --tree after=src
    PYTHONPATH=src .venv/bin/python bench/request_cpu.py --worker --profile out.prof \
        --only OffsetCommit
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

KINDS = (
    "OffsetCommit",
    "Heartbeat",
    "JoinGroup+SyncGroup",
    "Metadata",
    "Fetch (empty)",
    "Produce (100 B, acks=1)",
)
TOPIC = "rc"
GROUP = "rc-group"


class FakeTransport:
    """What PlainStream and Connection ask of a transport; `write` keeps the answer."""

    def __init__(self) -> None:
        self.out: list[bytes] = []

    def write(self, data: Any) -> None:
        self.out.append(bytes(data))

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 50000) if name == "peername" else default

    def get_write_buffer_size(self) -> int:
        return 0

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        pass


class Client:
    """One connection's worth of requests, fed to the broker in-process."""

    def __init__(self, stream: Any, transport: FakeTransport) -> None:
        self.stream = stream
        self.transport = transport
        self.correlation = 0

    def frame(self, api_key: int, version: int, body: dict[str, Any]) -> bytes:
        from muster.protocol.client_codec import encode_request

        self.correlation += 1
        return encode_request(api_key, version, self.correlation, "bench", body)

    async def call(self, frame: bytes) -> bytes:
        """The answer (without its size prefix) to one frame."""
        out = self.transport.out
        self.stream.data_received(frame)
        while not out:
            await asyncio.sleep(0)
        answer = b"".join(out)
        out.clear()
        return answer[4:]

    async def decoded(self, api_key: int, version: int, body: dict[str, Any]) -> Any:
        from muster.protocol.client_codec import decode_response

        return decode_response(
            api_key, version, await self.call(self.frame(api_key, version, body))
        )[1]


def _string(s: str) -> bytes:
    raw = s.encode()
    return len(raw).to_bytes(2, "big") + raw


SUBSCRIPTION = b"\0\0\0\0\0\1" + _string(TOPIC) + b"\xff\xff\xff\xff"
ASSIGNMENT = b"\0\0\0\0\0\1" + _string(TOPIC) + b"\0\0\0\1\0\0\0\0\xff\xff\xff\xff"


async def steps(client: Client) -> dict[str, tuple[list[bytes], Callable[[bytes], None]]]:
    """kind -> (frames to send in turn, a check of each answer)."""
    from muster.protocol.client_codec import decode_response
    from muster.records.batch import build_batch

    def check(
        api_key: int, version: int, errors: Callable[[Any], list[int]]
    ) -> Callable[[bytes], None]:
        def run(answer: bytes) -> None:
            bad = [e for e in errors(decode_response(api_key, version, answer)[1]) if e]
            if bad:
                raise RuntimeError(f"api {api_key}: errors {bad}")

        return run

    for _ in range(200):  # the coordinator loads in the background
        a = await client.decoded(10, 3, {"key": GROUP, "key_type": 0})
        if int(a.error_code) == 0:
            break
        await asyncio.sleep(0.05)
    join = {
        "group_id": GROUP,
        "session_timeout": 30_000,
        "rebalance_timeout": 30_000,
        "member_id": "",
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": SUBSCRIPTION}],
        "reason": "bench",
    }
    a = await client.decoded(11, 7, join)
    join["member_id"] = a.member_id  # MEMBER_ID_REQUIRED first
    a = await client.decoded(11, 7, join)
    generation = int(a.generation_id)
    sync = {
        "group_id": GROUP,
        "generation_id": generation,
        "member_id": join["member_id"],
        "protocol_type": "consumer",
        "protocol_name": "range",
        "assignments": [{"member_id": join["member_id"], "assignment": ASSIGNMENT}],
    }
    await client.decoded(14, 5, sync)
    n = 2000

    def commit(i: int) -> bytes:
        return client.frame(
            8,
            8,
            {
                "group_id": f"{GROUP}-simple",
                "generation_id_or_member_epoch": -1,
                "member_id": "",
                "topics": [
                    {"name": TOPIC, "partitions": [{"partition_index": 0, "committed_offset": i}]}
                ],
            },
        )

    def commit_errors(r: Any) -> list[int]:
        return [int(p.error_code) for t in r.topics for p in t.partitions]

    heartbeat = {"group_id": GROUP, "generation_id": generation, "member_id": join["member_id"]}

    def produce(i: int) -> bytes:
        # a producer's frames differ (timestamps, values): each one is its own
        value = i.to_bytes(8, "big") * 12 + b"xxxx"
        batch = build_batch([(None, value)], timestamp_ms=int(time.time() * 1000) + i)
        body = {
            "transactional_id": None,
            "acks": 1,
            "timeout": 30_000,
            "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0, "records": batch}]}],
        }
        return client.frame(0, 9, body)

    def produce_errors(r: Any) -> list[int]:
        return [int(p.error_code) for t in r.responses for p in t.partition_responses]

    out = {
        "OffsetCommit": ([commit(i) for i in range(n)], check(8, 8, commit_errors)),
        "Heartbeat": ([client.frame(12, 4, heartbeat)] * n, check(12, 4, lambda r: [r.error_code])),
        "JoinGroup+SyncGroup": (
            [
                f
                for _ in range(n // 4)
                for f in (client.frame(11, 7, join), client.frame(14, 5, sync))
            ],
            lambda answer: None,  # joins and syncs alternate; each was checked once above
        ),
        "Metadata": (
            [client.frame(3, 9, {"topics": [{"name": TOPIC}], "allow_auto_topic_creation": False})]
            * n,
            check(3, 9, lambda r: [t.error_code for t in r.topics]),
        ),
        "Produce (100 B, acks=1)": ([produce(i) for i in range(n)], check(0, 9, produce_errors)),
    }
    # an empty fetch at the log end: the end is known only after the produces
    out["Fetch (empty)"] = ([], check(1, 11, lambda r: [r.error_code]))
    return out


async def run_worker(reps: int, only: list[str], profile: str | None) -> dict[str, float]:
    from muster.config import BrokerConfig
    from muster.server.broker import Broker
    from muster.server.connection import Connection
    from muster.server.plain_stream import PlainStream

    data = tempfile.mkdtemp(prefix="muster-request-cpu-")
    config = BrokerConfig({"muster.fsync": "never", "log.dirs": data})
    config.set("listeners", "PLAINTEXT://127.0.0.1:0")
    broker = Broker(config)
    await broker.start()
    await broker.loaded()
    state = broker.state
    assert state is not None
    state.logs.create_topic(TOPIC, 1, {})

    async def accept(reader: Any, writer: Any) -> None:
        await Connection(state, broker.table, reader, writer).serve()

    transport = FakeTransport()
    stream = PlainStream(accept)
    stream.connection_made(transport)  # type: ignore[arg-type]
    await asyncio.sleep(0)
    client = Client(stream, transport)
    plan = await steps(client)
    prof = None
    if profile:
        import cProfile

        prof = cProfile.Profile()
    out: dict[str, float] = {}
    for kind in KINDS:
        if only and kind not in only:
            continue
        frames, check = plan[kind]
        if kind == "Fetch (empty)":
            end = state.logs.get(TOPIC, 0).log_end_offset  # type: ignore[union-attr]
            frames = [fetch_frame(client, end)] * 2000
        for frame in frames[:50]:  # warm up: first-use imports and caches
            check(await client.call(frame))
        best = float("inf")
        for _ in range(reps):
            if prof is not None:
                prof.enable()
            c0 = time.process_time()
            for frame in frames:
                await client.call(frame)
            spent = time.process_time() - c0
            if prof is not None:
                prof.disable()
            best = min(best, spent / len(frames) * 1e6)
        check(await client.call(frames[0]))
        pairs = 2 if kind.startswith("Join") else 1
        out[kind] = best * pairs
    if prof is not None and profile:
        prof.dump_stats(profile)
    stream.feed_eof()
    await broker.stop()
    return out


def fetch_frame(client: Client, offset: int) -> bytes:
    body = {
        "replica_id": -1,
        "max_wait": 0,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": TOPIC,
                "partitions": [
                    {
                        "partition": 0,
                        "current_leader_epoch": -1,
                        "fetch_offset": offset,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1 << 20,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    return client.frame(1, 11, body)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tree", action="append", default=[], metavar="NAME=SRC")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", action="append", default=[], help="a request kind (repeat)")
    ap.add_argument("--worker", action="store_true", help="measure this process's tree once")
    ap.add_argument("--profile", help="cProfile the measured loops into this file (--worker)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if args.worker:
        import logging

        logging.basicConfig(level=logging.WARNING)
        result = asyncio.run(run_worker(args.reps, args.only, args.profile))
        print(json.dumps(result))
        return 0
    trees = dict(t.split("=", 1) for t in args.tree) or {"tree": "src"}
    results: dict[str, dict[str, list[float]]] = {t: {} for t in trees}
    loads = [os.getloadavg()[0]]
    for r in range(args.rounds):
        order = list(trees) if r % 2 == 0 else list(reversed(trees))
        for t in order:
            env = {**os.environ, "PYTHONPATH": str(Path(trees[t]).resolve())}
            cmd = [sys.executable, __file__, "--worker", "--reps", str(args.reps)]
            for kind in args.only:
                cmd += ["--only", kind]
            done = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
            for kind, us in json.loads(done.stdout.strip().splitlines()[-1]).items():
                results[t].setdefault(kind, []).append(us)
        print(f"round {r + 1}/{args.rounds} done, load {os.getloadavg()[0]:.2f}", flush=True)
    loads.append(os.getloadavg()[0])
    medians = {t: {k: statistics.median(v) for k, v in results[t].items()} for t in trees}
    names = list(trees)
    last = names[-1]
    print(
        f"broker µs CPU per request, in-process (median of {args.rounds} rounds; "
        f"load {loads[0]:.2f} -> {loads[1]:.2f})"
    )
    head = f"{'request':<26}" + "".join(f"{t:>10}" for t in names)
    head += "".join(f"  {last}/{t}" for t in names[:-1])
    print(head)
    for kind in KINDS:
        if kind not in medians[last]:
            continue
        row = f"{kind:<26}" + "".join(f"{medians[t].get(kind, float('nan')):>10.1f}" for t in names)
        for t in names[:-1]:
            row += f"  {medians[last][kind] / medians[t][kind]:>{len(last) + len(t) + 1}.2f}x"
        print(row)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {"trees": trees, "raw": results, "medians": medians, "loads": loads}, indent=1
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
