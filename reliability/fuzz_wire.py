"""Wire fuzzer: mutated request frames, seeded from real client sessions, against a running broker.

    .venv/bin/python reliability/fuzz_wire.py [--frames 1000000] [--seed 1] [--workers 8]

1. A broker starts (on disk, its own data directory) advertising a recording
   proxy; confluent-kafka and kafka-python run real sessions through it
   (reliability/capture.py) and every request frame they send is a seed.
2. `--frames` mutants (bit flips, interesting integers such as
   `ff ff ff ff 0f`, truncation, extension, splices, other api versions) are
   sent over raw sockets by several workers; each is classified: answered
   (a response with its correlation id), closed by the broker, or parked (no
   answer within 0.3 s: a long-polling Fetch, a JoinGroup waiting for its
   rebalance, an acks=0 Produce; the connection is kept and closed later).
3. Meanwhile a probe sends ApiVersions on a fresh connection every second
   (the broker must answer within PROBE_BOUND_S: no hang) and samples the
   broker's RSS (must stay under RSS_BOUND_MIB).
At the end the broker must be alive, serve a real client (produce and read
back with confluent-kafka), and have logged a line for each connection it
closed; handler tracebacks in its log are counted (each one is a bug).

Closing line: `fuzz-wire: N frames (S seeds, K api keys), A answered, C closed,
P parked, 0 crashes, probe max X ms, peak RSS M MiB, L close log lines, T tracebacks`.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import socket
import struct
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]

from campaign_support import MusterProcess, add_keep_option, campaign_workdir, rss_mib  # noqa: E402
from capture import RecordingProxy, api_keys, record_sessions  # noqa: E402
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402

PROBE_BOUND_S = 5.0
RSS_BOUND_MIB = 256
ANSWER_WAIT_S = 0.3
LATE_ANSWER_S = 2.0  # a parked request's last chance at the end
PARKED_PER_WORKER = 16
_INTERESTING = [
    b"\xff\xff\xff\xff",
    b"\x7f\xff\xff\xff",
    b"\x80\x00\x00\x00",
    b"\x00\x00\x00\x00",
    b"\xff\xff",
    b"\x7f\xff",
    b"\x80\x00",
    b"\xff\xff\xff\xff\x0f",  # an unsigned varint of 2**32 - 1
    b"\xfe\xff\xff\xff\x0f",
    b"\x80\x80\x80\x80\x80\x01",  # a varint too long
    b"\x00",
    b"\x01",
]


@dataclass
class Figures:
    frames: int = 0
    seeds: int = 0
    api_keys: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    parked_by_api: Counter[int] = field(default_factory=Counter)
    probe_max_ms: float = 0.0
    probe_failures: int = 0
    peak_rss_mib: float = 0.0
    crashed: bool = False
    close_log_lines: int = 0
    tracebacks: int = 0
    served_after: bool = False
    seconds: float = 0.0

    def line(self) -> str:
        o = self.outcomes
        return (
            f"fuzz-wire: {self.frames:,} frames ({self.seeds} seeds, {self.api_keys} api keys) "
            f"in {self.seconds:.0f}s, {o['answered']:,} answered, {o['closed']:,} closed, "
            f"{o['parked']:,} parked, {int(self.crashed)} crashes, "
            f"{self.probe_failures} probes unanswered, probe max {self.probe_max_ms:.0f} ms, "
            f"peak RSS {self.peak_rss_mib:.0f} MiB, {self.close_log_lines:,} close log lines, "
            f"{self.tracebacks} tracebacks, real client served after: {self.served_after}"
        )


def mutate(rng: random.Random, seeds: list[bytes], correlation_id: int) -> bytes:
    frame = bytearray(rng.choice(seeds))
    for _ in range(rng.choice((1, 1, 1, 2, 3, 8))):
        op = rng.randrange(8)
        n = len(frame)
        if n <= 4:  # cut to its api key: start again from a seed
            frame = bytearray(rng.choice(seeds))
            continue
        pos = rng.randrange(4, n) if n > 4 else 0
        if op == 0:  # flip a bit
            frame[pos] ^= 1 << rng.randrange(8)
        elif op == 1:  # a random byte
            frame[pos] = rng.randrange(256)
        elif op == 2:  # an interesting integer over what is there
            value = rng.choice(_INTERESTING)
            frame[pos : pos + len(value)] = value
        elif op == 3:  # cut short
            del frame[pos:]
        elif op == 4:  # random bytes appended or inserted
            frame[pos:pos] = rng.randbytes(rng.randrange(1, 64))
        elif op == 5:  # splice: the tail of another seed
            other = rng.choice(seeds)
            frame[pos:] = other[rng.randrange(len(other)) :]
        elif op == 6 and n >= 4:  # another version of the same api
            frame[2:4] = struct.pack(">h", rng.choice((0, 1, 2, 3, 4, 5, 7, 9, 11, 13, 99, -1)))
        elif op == 7 and n > pos + 1:  # repeat a chunk (arrays that grow)
            end = min(n, pos + rng.randrange(1, 32))
            frame[pos:pos] = frame[pos:end] * rng.randrange(2, 8)
    if len(frame) >= 8:
        frame[4:8] = struct.pack(">i", correlation_id)
    return bytes(frame)


def _connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _await_answer(sock: socket.socket, correlation_id: int, wait_s: float) -> str:
    """answered | closed | parked (no answer yet)."""
    sock.settimeout(wait_s)
    try:
        head = sock.recv(8, socket.MSG_WAITALL)
    except TimeoutError:
        return "parked"
    except OSError:
        return "closed"
    if len(head) < 8:
        return "closed"
    size, corr = struct.unpack(">ii", head)
    sock.settimeout(5)
    remaining = size - 4
    while remaining > 0:
        chunk = sock.recv(min(remaining, 1 << 20))
        if not chunk:
            return "closed"
        remaining -= len(chunk)
    if corr != correlation_id:
        raise AssertionError(f"answer for correlation id {corr}, expected {correlation_id}")
    return "answered"


def _settle(parked: tuple[socket.socket, int, int], wait_s: float) -> str:
    """A parked request's final outcome: answered late, closed, or still parked."""
    sock, correlation_id, _ = parked
    try:
        return _await_answer(sock, correlation_id, wait_s)
    except OSError:
        return "closed"
    finally:
        sock.close()


def _worker(
    port: int, seeds: list[bytes], seed: int, count: int, figures: Figures, lock: threading.Lock
) -> None:
    rng = random.Random(seed)
    parked: list[tuple[socket.socket, int, int]] = []  # (socket, correlation id, api key)
    sock: socket.socket | None = None
    local: Counter[str] = Counter()
    parked_api: Counter[int] = Counter()

    def settle(entry: tuple[socket.socket, int, int], wait_s: float) -> None:
        outcome = _settle(entry, wait_s)
        local[outcome] += 1
        if outcome == "parked":
            parked_api[entry[2]] += 1

    for i in range(count):
        if sock is None:
            sock = _connect(port)
        correlation_id = (seed * 1_000_003 + i) & 0x7FFFFFFF
        frame = mutate(rng, seeds, correlation_id)
        try:
            sock.sendall(struct.pack(">i", len(frame)) + frame)
            outcome = _await_answer(sock, correlation_id, ANSWER_WAIT_S)
        except OSError:
            outcome = "closed"
        if outcome == "answered":
            local[outcome] += 1
            continue
        if outcome == "parked":  # kept open: decided when it leaves the pool
            parked.append((sock, correlation_id, struct.unpack_from(">h", frame)[0]))
            if len(parked) > PARKED_PER_WORKER:
                settle(parked.pop(0), 0.05)
        else:
            local[outcome] += 1
            sock.close()
        sock = None
    for entry in parked:
        settle(entry, LATE_ANSWER_S)
    if sock is not None:
        sock.close()
    with lock:
        figures.outcomes.update(local)
        figures.parked_by_api.update(parked_api)


_API_VERSIONS_V0 = struct.pack(">hhih", 18, 0, 1, -1)


def _probe(port: int, pid: int, figures: Figures, stop: threading.Event) -> None:
    while not stop.wait(1.0):
        started = time.monotonic()
        try:
            with _connect(port) as sock:
                sock.sendall(struct.pack(">i", len(_API_VERSIONS_V0)) + _API_VERSIONS_V0)
                if _await_answer(sock, 1, PROBE_BOUND_S) != "answered":
                    figures.probe_failures += 1
        except (OSError, AssertionError):
            figures.probe_failures += 1
        figures.probe_max_ms = max(figures.probe_max_ms, (time.monotonic() - started) * 1000)
        with contextlib.suppress(OSError):
            figures.peak_rss_mib = max(figures.peak_rss_mib, rss_mib(pid))


def _served(bootstrap: str) -> bool:
    """A real client still produces and reads back (through the proxy)."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    delivered: list[tuple[int, int]] = []
    producer.produce(
        "after-fuzz",
        b"still here",
        on_delivery=lambda e, m: (
            delivered.append((m.partition(), m.offset())) if e is None else None
        ),
    )
    producer.flush(30)
    if not delivered:
        return False
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "after-fuzz"})
    try:
        consumer.assign([TopicPartition("after-fuzz", delivered[0][0], delivered[0][1])])
        for _ in range(30):
            msg = consumer.poll(1.0)
            if msg is not None and not msg.error():
                return msg.value() == b"still here"
    finally:
        consumer.close()
    return False


def run(frames: int, seed: int, workers: int, workdir: Path) -> Figures:
    figures = Figures()
    broker = MusterProcess(workdir / "data")
    proxy = RecordingProxy(broker.port)
    broker.settings["advertised.listeners"] = f"PLAINTEXT://127.0.0.1:{proxy.port}"
    started = time.monotonic()
    try:
        broker.start()
        assert broker.proc is not None
        seeds = [f for f in record_sessions(proxy) if len(f) >= 8]
        figures.seeds = len(seeds)
        figures.api_keys = len(set(api_keys(seeds)))
        stop = threading.Event()
        probe = threading.Thread(target=_probe, args=(broker.port, broker.proc.pid, figures, stop))
        probe.start()
        lock = threading.Lock()
        share = [frames // workers + (1 if w < frames % workers else 0) for w in range(workers)]
        threads = [
            threading.Thread(
                target=_worker, args=(broker.port, seeds, seed * 1000 + w, n, figures, lock)
            )
            for w, n in enumerate(share)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        stop.set()
        probe.join()
        figures.frames = sum(figures.outcomes.values())
        figures.crashed = broker.proc.poll() is not None
        if not figures.crashed:
            figures.served_after = _served(f"127.0.0.1:{proxy.port}")
        figures.seconds = time.monotonic() - started
    finally:
        broker.close()
        proxy.close()
    text = broker.log_text()
    figures.close_log_lines = sum(1 for line in text.splitlines() if "closing connection" in line)
    figures.tracebacks = text.count("Traceback (most recent call last)")
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=8)
    add_keep_option(parser)
    args = parser.parse_args(argv)
    workdir = campaign_workdir(args.keep, "muster-fuzz-")
    figures = run(args.frames, args.seed, args.workers, workdir)
    print(figures.line())
    print(f"parked by api key: {dict(sorted(figures.parked_by_api.items()))}; log: {workdir}")
    ok = (
        not figures.crashed
        and figures.served_after
        and figures.probe_failures == 0
        and figures.peak_rss_mib < RSS_BOUND_MIB
        and figures.tracebacks == 0
        and figures.close_log_lines >= figures.outcomes["closed"]
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
