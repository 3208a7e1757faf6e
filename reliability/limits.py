"""Resource-limit campaign: hostile sizes and counts, each answered within a bound.

    .venv/bin/python reliability/limits.py [--idle 10000]

Two brokers: one with Kafka's defaults, one with tight limits
(`connections.max.idle.ms`=3000, `max.connections.per.ip`=50 with
`max.connections.per.ip.overrides`=127.0.0.2:60, `max.connections`=110,
`group.max.size`=3, `group.initial.rebalance.delay.ms`=1000). Cases, each with its bound:
- `--idle` idle connections held open at once (the fd limit is raised to
  the hard limit first), then a fresh request still answered;
- per-address and total connection caps: the connection past the cap is
  closed at once, with a log line;
- slowloris: a request sent one byte per second is cut off within
  2 x connections.max.idle.ms (the size within the idle time, then the rest
  within it too: muster's stated bound; Kafka has only the idle timer, which
  every byte resets);
- a frame announcing 2 GiB: closed at once (`socket.request.max.bytes`);
- a 1 MiB topic name in Metadata, CreateTopics and Produce: INVALID_TOPIC_EXCEPTION;
- 100,000 partitions: CreateTopics refused POLICY_VIOLATION as Kafka's
  controller refuses an operation past 10,000 records; ListOffsets, Fetch and
  Metadata naming 100,000 partitions or topics answered, while a probe on
  another connection measures how long the broker stalls for others;
- JoinGroup with 10 MB of member metadata, then SyncGroup: answered;
- group.max.size: the member past it gets GROUP_MAX_SIZE_REACHED.
The broker's RSS is sampled throughout and must stay under RSS_BOUND_MIB.
"""

from __future__ import annotations

import argparse
import contextlib
import resource
import select
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]

from campaign_support import MusterProcess, RawClient, add_keep_option, campaign_workdir, rss_mib  # noqa: E402

from tests.support.brokers import peer_closed  # noqa: E402

RSS_BOUND_MIB = 512
ANSWER_BOUND_S = 30.0  # every hostile request below is answered (or closed) within this
TIGHT = {
    "connections.max.idle.ms": "3000",
    "max.connections.per.ip": "50",
    "max.connections.per.ip.overrides": "127.0.0.2:60",
    "max.connections": "110",
    "group.max.size": "3",
    # the four joins of the group.max.size case meet in one rebalance: with no
    # delay the first one found the group Empty and completed a generation
    # alone, and the other three were then all admitted (Kafka's rule counts
    # the members awaiting the join, and drops the one that does not rejoin)
    "group.initial.rebalance.delay.ms": "1000",
}
HUGE_NAME = "t" * (1 << 20)


@dataclass
class Case:
    name: str
    seconds: float
    outcome: str
    ok: bool


@dataclass
class Figures:
    cases: list[Case] = field(default_factory=list)
    peak_rss_mib: float = 0.0
    probe_max_ms: float = 0.0
    # the case under way (named by the case before it starts) and, per case,
    # the longest probe that started or ended during it
    current: str = ""
    stalled_ms: dict[str, float] = field(default_factory=dict)

    def add(self, name: str, seconds: float, outcome: str, ok: bool) -> None:
        self.cases.append(Case(name, seconds, outcome, ok))

    def stall(self, name: str) -> str:
        return f"others stalled {self.stalled_ms.get(name, 0.0):.0f} ms"

    def line(self) -> str:
        failed = [c.name for c in self.cases if not c.ok]
        parts = "; ".join(f"{c.name}: {c.outcome} in {c.seconds:.2f}s" for c in self.cases)
        big_stall = max(
            (ms for name, ms in self.stalled_ms.items() if "100,000" in name), default=0.0
        )
        return (
            f"limits: {len(self.cases)} cases, {len(failed)} failed"
            f"{' (' + ', '.join(failed) + ')' if failed else ''}; {parts}; "
            f"others stalled at most {self.probe_max_ms:.0f} ms"
            f" (100,000 partitions: {big_stall:.0f} ms); peak RSS "
            f"{self.peak_rss_mib:.0f} MiB (bound {RSS_BOUND_MIB})"
        )


class Sampler:
    """Samples a broker's RSS and, on a connection of its own, how long an
    ApiVersions takes (how long the broker keeps everyone else waiting)."""

    def __init__(self, broker: MusterProcess, figures: Figures) -> None:
        self.broker, self.figures = broker, figures
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        assert self.broker.proc is not None
        client = RawClient(self.broker.port)
        while not self._stop.wait(0.2):
            with contextlib.suppress(OSError):
                rss = rss_mib(self.broker.proc.pid)
                self.figures.peak_rss_mib = max(self.figures.peak_rss_mib, rss)
            started, during = time.monotonic(), self.figures.current
            client.call(18, 3, {"client_software_name": "probe", "client_software_version": "1"})
            took = (time.monotonic() - started) * 1000
            self.figures.probe_max_ms = max(self.figures.probe_max_ms, took)
            for case in {during, self.figures.current}:
                stalled = self.figures.stalled_ms
                stalled[case] = max(stalled.get(case, 0.0), took)
        client.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _timed(call: Callable[[], Any]) -> tuple[float, Any]:
    started = time.monotonic()
    try:
        result = call()
    except (OSError, ConnectionError) as exc:
        result = exc
    return time.monotonic() - started, result


def _raise_fd_limit() -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def idle_connections(broker: MusterProcess, figures: Figures, count: int) -> None:
    assert broker.proc is not None
    before = rss_mib(broker.proc.pid)
    socks: list[socket.socket] = []
    started = time.monotonic()
    try:
        for _ in range(count):
            socks.append(socket.create_connection(("127.0.0.1", broker.port), timeout=10))
        held = time.monotonic() - started
        time.sleep(1.0)  # every one accepted by now
        alive = sum(1 for s in socks[:: max(1, count // 200)] if not peer_closed(s, 0.001))
        took, answer = _timed(lambda: _api_versions(broker.port))
        grown = rss_mib(broker.proc.pid) - before
        ok = not isinstance(answer, Exception) and alive == len(socks[:: max(1, count // 200)])
        figures.add(
            f"{count:,} idle connections",
            held,
            f"all held, +{grown:.0f} MiB RSS, a new request answered in {took * 1000:.0f} ms",
            ok,
        )
    finally:
        for s in socks:
            s.close()


def _api_versions(port: int) -> Any:
    client = RawClient(port)
    try:
        return client.call(18, 3, {"client_software_name": "x", "client_software_version": "1"})
    finally:
        client.close()


def connection_caps(broker: MusterProcess, figures: Figures) -> None:
    socks: dict[str, list[socket.socket]] = {}
    time.sleep(0.5)  # the start-up port probe's connection is released by now
    started = time.monotonic()
    # 50 from .1 (5 more refused), 60 from .2 by its override (5 more refused),
    # then .3 finds 110 held: max.connections=110, all 10 refused
    for source, n in (("127.0.0.1", 55), ("127.0.0.2", 65), ("127.0.0.3", 10)):
        socks[source] = []
        for _ in range(n):
            s = socket.socket()
            s.bind((source, 0))
            s.connect(("127.0.0.1", broker.port))
            socks[source].append(s)
        time.sleep(0.2)  # accepted (or refused) before the next address connects
    every = [s for group in socks.values() for s in group]
    readable, _, _ = select.select(every, [], [], 0.5)
    closed = {id(s) for s in readable if peer_closed(s, 0.1)}
    took = time.monotonic() - started
    refused = {src: sum(1 for s in group if id(s) in closed) for src, group in socks.items()}
    for s in every:
        s.close()
    logged = broker.log_text().count("refused connection from")
    ok = list(refused.values()) == [5, 5, 10] and logged >= 20
    figures.add(
        "connection caps",
        took,
        f"{refused['127.0.0.1']}/55 refused over max.connections.per.ip=50, "
        f"{refused['127.0.0.2']}/65 over its override 60, "
        f"{refused['127.0.0.3']}/10 over max.connections=110, {logged} log lines",
        ok,
    )


def slowloris(broker: MusterProcess, figures: Figures) -> None:
    idle_s = int(broker.settings["connections.max.idle.ms"]) / 1000
    frame = _frame(18, 3, b"\x02x\x021\x00")
    sock = socket.create_connection(("127.0.0.1", broker.port))
    started = time.monotonic()
    closed_after = None
    for byte in frame:
        try:
            sock.sendall(bytes([byte]))
        except OSError:
            closed_after = time.monotonic() - started
            break
        if peer_closed(sock, 1.0):
            closed_after = time.monotonic() - started
            break
    sock.close()
    ok = closed_after is not None and closed_after <= 2 * idle_s + 2
    outcome = (
        f"closed after {closed_after:.1f}s (bound 2 x {idle_s:.0f}s)"
        if closed_after is not None
        else "never closed"
    )
    figures.add("slowloris (1 byte/s)", closed_after or 0.0, outcome, ok)


def _frame(api_key: int, version: int, body: bytes) -> bytes:
    header = struct.pack(">hhih", api_key, version, 1, 1) + b"x" + b"\x00"
    return struct.pack(">i", len(header) + len(body)) + header + body


def huge_frame(broker: MusterProcess, figures: Figures) -> None:
    sock = socket.create_connection(("127.0.0.1", broker.port))
    started = time.monotonic()
    sock.sendall(struct.pack(">i", 2**31 - 1) + b"\x00\x03\x00\x0c")
    closed = peer_closed(sock, ANSWER_BOUND_S)
    took = time.monotonic() - started
    sock.close()
    figures.add("frame announcing 2 GiB", took, "closed" if closed else "kept open", closed)


def _call(broker: MusterProcess, api_key: int, version: int, body: dict[str, Any]) -> Any:
    client = RawClient(broker.port, timeout=ANSWER_BOUND_S * 4)
    try:
        return client.call(api_key, version, body)
    finally:
        client.close()


def huge_topic_name(broker: MusterProcess, figures: Figures) -> None:
    calls = {
        "Metadata": lambda: (
            _call(
                broker,
                3,
                12,
                {
                    "topics": [{"name": HUGE_NAME, "topic_id": None}],
                    "allow_auto_topic_creation": True,
                    "include_topic_authorized_operations": False,
                },
            )
            .topics[0]
            .error_code
        ),
        "CreateTopics": lambda: (
            _call(
                broker,
                19,
                7,
                {
                    "topics": [_new_topic(HUGE_NAME, 1)],
                    "timeout_ms": 5000,
                    "validate_only": False,
                },
            )
            .topics[0]
            .error_code
        ),
        "Produce": lambda: (
            _call(
                broker,
                0,
                9,
                {
                    "transactional_id": None,
                    "acks": 1,
                    "timeout_ms": 5000,
                    "topic_data": [
                        {"name": HUGE_NAME, "partition_data": [{"index": 0, "records": b""}]}
                    ],
                },
            )
            .responses[0]
            .partition_responses[0]
            .error_code
        ),
    }
    for api, call in calls.items():
        took, code = _timed(call)
        ok = not isinstance(code, Exception) and int(code) == 17 and took < ANSWER_BOUND_S
        name = getattr(code, "name", repr(code)).upper()
        figures.add(f"1 MiB topic name in {api}", took, name, ok)
    longest = max(len(line) for line in broker.log_text().splitlines())
    figures.add("log lines stay short", 0.0, f"longest {longest:,} chars", longest < 4096)


def _new_topic(name: str, partitions: int) -> dict[str, Any]:
    return {
        "name": name,
        "num_partitions": partitions,
        "replication_factor": 1,
        "assignments": [],
        "configs": [],
    }


def hundred_thousand_partitions(broker: MusterProcess, figures: Figures) -> None:
    n = 100_000
    took, code = _timed(
        lambda: (
            _call(
                broker,
                19,
                7,
                {
                    "topics": [_new_topic("hundred-k", n)],
                    "timeout_ms": 30000,
                    "validate_only": False,
                },
            )
            .topics[0]
            .error_code
        )
    )
    name = getattr(code, "name", repr(code)).upper()
    figures.add("CreateTopics 100,000 partitions", took, name, name == "POLICY_VIOLATION")
    _call(
        broker,
        19,
        7,
        {"topics": [_new_topic("few", 4)], "timeout_ms": 30000, "validate_only": False},
    )
    bodies = {
        "ListOffsets": (
            2,
            7,
            {
                "replica_id": -1,
                "isolation_level": 0,
                "topics": [
                    {
                        "name": "few",
                        "partitions": [
                            {"partition_index": i, "current_leader_epoch": -1, "timestamp": -1}
                            for i in range(n)
                        ],
                    }
                ],
            },
        ),
        "Fetch": (
            1,
            12,
            {
                "replica_id": -1,
                "max_wait": 100,
                "min_bytes": 1,
                "max_bytes": 1 << 20,
                "isolation_level": 0,
                "session_id": 0,
                "session_epoch": -1,
                "topics": [
                    {
                        "topic": "few",
                        "partitions": [
                            {
                                "partition": i,
                                "current_leader_epoch": -1,
                                "fetch_offset": 0,
                                "last_fetched_epoch": -1,
                                "log_start_offset": -1,
                                "partition_max_bytes": 1 << 20,
                            }
                            for i in range(n)
                        ],
                    }
                ],
                "forgotten_topics_data": [],
                "rack_id": "",
            },
        ),
        "Metadata": (
            3,
            12,
            {
                "topics": [{"name": f"absent-{i}", "topic_id": None} for i in range(n)],
                "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False,
            },
        ),
    }
    for api, (key, version, body) in bodies.items():
        figures.current = f"{api} naming 100,000"
        took, answer = _timed(
            lambda key=key, version=version, body=body: _call(broker, key, version, body)
        )
        ok = not isinstance(answer, Exception) and took < ANSWER_BOUND_S
        time.sleep(0.5)  # the probe in flight ends, in this case
        figures.current = ""
        name = f"{api} naming 100,000"
        outcome = f"answered, {figures.stall(name)}" if ok else repr(answer)[:80]
        figures.add(name, took, outcome, ok)


def _join_body(group: str, member: str, metadata: bytes) -> dict[str, Any]:
    return {
        "group_id": group,
        "session_timeout": 30000,
        "rebalance_timeout": 30000,
        "member_id": member,
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": metadata}],
        "reason": None,
    }


def _join(client: RawClient, group: str, member: str, metadata: bytes) -> Any:
    return client.call(11, 7, _join_body(group, member, metadata))


def _join_as_member(client: RawClient, group: str, metadata: bytes) -> Any:
    first = _join(client, group, "", metadata)
    if int(first.error_code) != 79:  # MEMBER_ID_REQUIRED
        return first
    return _join(client, group, first.member_id, metadata)


def big_join(broker: MusterProcess, figures: Figures) -> None:
    client = RawClient(broker.port, timeout=ANSWER_BOUND_S * 2)
    try:
        metadata = b"m" * (10 << 20)
        took, joined = _timed(lambda: _join_as_member(client, "big-join", metadata))
        ok = not isinstance(joined, Exception) and int(joined.error_code) == 0
        outcome = "joined" if ok else repr(joined)[:80]
        figures.add("JoinGroup with 10 MB metadata", took, outcome, ok and took < ANSWER_BOUND_S)
        if not ok:
            return
        sync = {
            "group_id": "big-join",
            "generation_id": joined.generation_id,
            "member_id": joined.member_id,
            "group_instance_id": None,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignments": [{"member_id": joined.member_id, "assignment": b"a" * 16}],
        }
        took, synced = _timed(lambda: client.call(14, 5, sync))
        code = getattr(getattr(synced, "error_code", None), "name", repr(synced)).upper()
        figures.add("SyncGroup after it", took, code, took < ANSWER_BOUND_S)
    finally:
        client.close()


def group_max_size(broker: MusterProcess, figures: Figures) -> None:
    clients = [RawClient(broker.port) for _ in range(4)]
    started = time.monotonic()
    try:
        ids = [_join(c, "capped", "", b"").member_id for c in clients]  # MEMBER_ID_REQUIRED
        for client, member in zip(clients, ids, strict=True):  # all four rejoin at once
            client.send(11, 7, _join_body("capped", member, b""))
        # the broker may read the four sockets in any order: whichever join it
        # handles fourth is the one refused
        codes = [c.receive(11, 7).error_code for c in clients]
        took = time.monotonic() - started
    finally:
        for client in clients:
            client.close()
    names = sorted(getattr(code, "name", repr(code)).upper() for code in codes)
    ok = names == ["GROUP_MAX_SIZE_REACHED", "NONE", "NONE", "NONE"]
    outcome = "GROUP_MAX_SIZE_REACHED, the 3 others joined" if ok else ", ".join(names)
    figures.add("group.max.size=3, 4th member", took, outcome, ok)


@contextlib.contextmanager
def _broker(workdir: Path, name: str, settings: dict[str, str]) -> Iterator[MusterProcess]:
    broker = MusterProcess(workdir / name, settings)
    broker.start()
    try:
        yield broker
    finally:
        broker.close()


def run(idle: int, workdir: Path) -> Figures:
    figures = Figures()
    hard = _raise_fd_limit()
    idle = min(idle, hard - 500)
    with _broker(workdir, "plain", {}) as broker:
        sampler = Sampler(broker, figures)
        try:
            idle_connections(broker, figures, idle)
            huge_frame(broker, figures)
            huge_topic_name(broker, figures)
            hundred_thousand_partitions(broker, figures)
            big_join(broker, figures)
        finally:
            sampler.stop()
    with _broker(workdir, "tight", TIGHT) as broker:
        connection_caps(broker, figures)
        slowloris(broker, figures)
        group_max_size(broker, figures)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle", type=int, default=10_000)
    add_keep_option(parser)
    args = parser.parse_args(argv)
    workdir = campaign_workdir(args.keep, "muster-limits-")
    figures = run(args.idle, workdir)
    for case in figures.cases:
        print(f"  {'ok ' if case.ok else 'BAD'} {case.name}: {case.outcome} ({case.seconds:.2f}s)")
    print(figures.line())
    ok = all(c.ok for c in figures.cases) and figures.peak_rss_mib < RSS_BOUND_MIB
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
