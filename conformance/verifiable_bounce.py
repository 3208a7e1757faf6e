"""Kafka's system-test workload, VerifiableProducer + VerifiableConsumer (the
kafka-tools 4.4 classes Kafka's tests/kafkatest/services run), against muster
or Kafka 4.4: a producer at a fixed rate, a group of consumers, consumers
bounced (clean stop, then kill -9) and the broker kill -9ed and restarted, then
checked the way consumer_test.py checks it:

- every record the producer saw acknowledged was consumed;
- committed offsets of a partition never go backwards;
- no partition owned by two members at once (a member's assignment is what
  its partitions_assigned/revoked/lost events say; a killed member owns
  nothing from the moment it is killed).

    python conformance/verifiable_bounce.py                     # muster and Kafka, each protocol
    python conformance/verifiable_bounce.py --brokers muster --protocols classic --messages 3000

tests/javacli/test_verifiable.py runs a short version on muster.
"""

from __future__ import annotations

import argparse
import json
import queue
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.java import VERIFIABLE_CONSUMER, VERIFIABLE_PRODUCER, program_command

# member overlap shorter than this is the order two processes' stdout reached us in
OVERLAP_GRACE_S = 1.0


@dataclass
class Report:
    broker: str
    protocol: str
    acked: int = 0
    consumed_distinct: int = 0
    missing: list[tuple[int, int]] = field(default_factory=list)
    backwards: list[str] = field(default_factory=list)
    overlaps: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    events: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not (self.missing or self.backwards or self.overlaps or self.errors)

    def summary(self) -> dict[str, Any]:
        return {
            "broker": self.broker,
            "protocol": self.protocol,
            "ok": self.ok,
            "acked": self.acked,
            "consumed_distinct": self.consumed_distinct,
            "missing": self.missing[:10],
            "missing_count": len(self.missing),
            "backwards": self.backwards[:10],
            "overlaps": self.overlaps[:10],
            "errors": self.errors[:10],
            "seconds": round(self.seconds, 1),
            "events": self.events,
        }


class Workload:
    """The producer and members' event streams merged in arrival order, with the
    three checks run as the events arrive."""

    def __init__(self, bootstrap: str, topic: str, group: str, protocol: str) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.group = group
        self.protocol = protocol
        self.events: queue.Queue[tuple[str, dict[str, Any] | None]] = queue.Queue()
        self.procs: dict[str, subprocess.Popen[str]] = {}
        self.acked: set[tuple[int, int]] = set()
        self.consumed: set[tuple[int, int]] = set()
        self.committed: dict[int, int] = {}
        self.owned: dict[str, set[int]] = {}
        self.overlap_since: dict[int, float] = {}
        self.backwards: list[str] = []
        self.overlaps: list[str] = []
        self.errors: list[str] = []
        self.producer_done = False
        self.kinds: dict[str, int] = {}

    def _reader(self, name: str, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("{"):
                try:
                    self.events.put((name, json.loads(line)))
                except json.JSONDecodeError:
                    pass
        self.events.put((name, None))

    def _spawn(self, name: str, main_class: str, *args: str) -> None:
        proc = subprocess.Popen(
            program_command(main_class, *args, heap="128m"),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.procs[name] = proc
        threading.Thread(target=self._reader, args=(name, proc), daemon=True).start()

    def start_producer(self, messages: int, throughput: int) -> None:
        self._spawn(
            "producer",
            VERIFIABLE_PRODUCER,
            "--bootstrap-server",
            self.bootstrap,
            "--topic",
            self.topic,
            "--max-messages",
            str(messages),
            "--throughput",
            str(throughput),
            "--acks",
            "-1",
        )

    def start_member(self, name: str) -> None:
        args = [
            "--bootstrap-server",
            self.bootstrap,
            "--topic",
            self.topic,
            "--group-id",
            self.group,
            "--group-protocol",
            self.protocol,
            "--reset-policy",
            "earliest",
        ]
        if self.protocol == "classic":  # the consumer protocol takes neither
            args += [
                "--session-timeout",
                "10000",
                "--assignment-strategy",
                "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
            ]
        self.owned[name] = set()
        self._spawn(name, VERIFIABLE_CONSUMER, *args)

    def stop_member(self, name: str, hard: bool) -> None:
        proc = self.procs[name]
        if hard:
            proc.kill()
            self.owned[name] = set()  # a dead process owns nothing
            self.overlap_since.clear()
        else:
            proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.errors.append(f"{name} did not stop within 30 s of SIGTERM")
            proc.kill()
            proc.wait()
        self.owned[name] = set()
        self.drain(0.2)

    def drain(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                name, event = self.events.get(timeout=left)
            except queue.Empty:
                break
            self.handle(name, event)
        self._check_overlaps()

    def handle(self, name: str, event: dict[str, Any] | None) -> None:
        if event is None:
            if name == "producer":
                self.producer_done = True
            return
        kind = event.get("name")
        self.kinds[str(kind)] = self.kinds.get(str(kind), 0) + 1
        if kind == "producer_send_success":
            self.acked.add((event["partition"], event["offset"]))
        elif kind == "records_consumed":
            for part in event.get("partitions", []):
                for offset in range(part["minOffset"], part["maxOffset"] + 1):
                    self.consumed.add((part["partition"], offset))
        elif kind == "offsets_committed" and event.get("success"):
            for commit in event.get("offsets", []):
                p, offset = commit["partition"], commit["offset"]
                if offset < self.committed.get(p, -1):
                    self.backwards.append(
                        f"partition {p}: {name} committed {offset} after {self.committed[p]}"
                    )
                self.committed[p] = max(offset, self.committed.get(p, -1))
        elif kind in ("partitions_assigned", "partitions_revoked", "partitions_lost"):
            parts = {p["partition"] for p in event.get("partitions", [])}
            if kind == "partitions_assigned":
                # incremental (cooperative-sticky and the consumer protocol):
                # the callback names only what was added
                self.owned[name] = self.owned.get(name, set()) | parts
            else:
                self.owned[name] = self.owned.get(name, set()) - parts
            self._check_overlaps()

    def _check_overlaps(self) -> None:
        now = time.monotonic()
        owners: dict[int, list[str]] = {}
        for member, parts in self.owned.items():
            for p in parts:
                owners.setdefault(p, []).append(member)
        shared = {p: m for p, m in owners.items() if len(m) > 1}
        for p in list(self.overlap_since):
            if p not in shared:
                del self.overlap_since[p]
        for p, members in shared.items():
            since = self.overlap_since.setdefault(p, now)
            if now - since > OVERLAP_GRACE_S:
                note = f"partition {p} owned by {sorted(members)} for over {OVERLAP_GRACE_S}s"
                if note not in self.overlaps:
                    self.overlaps.append(note)

    def close(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)


def run(
    broker: Any,
    name: str,
    protocol: str,
    messages: int = 2000,
    throughput: int = 250,
    partitions: int = 3,
    members: int = 2,
) -> Report:
    """One bounce run against a started `broker` (MusterProcess or KafkaProcess)."""
    began = time.monotonic()
    topic, group = f"bounce-{protocol}", f"bounce-g-{protocol}"
    create_topic(broker.bootstrap, topic, partitions)
    load = Workload(broker.bootstrap, topic, group, protocol)
    report = Report(name, protocol)

    def wait_for(what: str, done: Any, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            if time.monotonic() > deadline:
                load.errors.append(f"timed out ({timeout:.0f} s) waiting until {what}")
                return
            load.drain(0.5)

    def owns(member: str) -> Any:
        return lambda: bool(load.owned.get(member))

    def consumed_more(n: int) -> Any:
        # or everything, once the producer is through
        target = min(len(load.consumed) + n, messages)
        return lambda: len(load.consumed) >= target

    try:
        names = [f"c{i}" for i in range(members)]
        for member in names:
            load.start_member(member)
        for member in names:
            wait_for(f"{member} owns partitions", owns(member))
        load.start_producer(messages, throughput)
        wait_for("records are consumed", consumed_more(throughput))
        # a clean bounce, then a hard one, of a member
        load.stop_member(names[0], hard=False)
        load.start_member(names[0])
        wait_for(f"{names[0]} owns partitions again", owns(names[0]))
        wait_for("records are consumed", consumed_more(throughput // 2))
        load.stop_member(names[-1], hard=True)
        load.start_member(names[-1])
        wait_for(f"{names[-1]} owns partitions again", owns(names[-1]))
        wait_for("records are consumed", consumed_more(throughput // 2))
        # the broker kill -9ed and restarted under load
        broker.restart(hard=True)
        wait_for("records are consumed after the broker's restart", consumed_more(throughput // 2))
        wait_for("the producer finished", lambda: load.producer_done, 120)
        wait_for("every acknowledged record is consumed", lambda: load.acked <= load.consumed)
        for member in names:
            load.stop_member(member, hard=False)
    finally:
        load.close()
    report.acked = len(load.acked)
    report.consumed_distinct = len(load.consumed)
    report.missing = sorted(load.acked - load.consumed)
    report.backwards = load.backwards
    report.overlaps = load.overlaps
    report.errors += load.errors
    if report.acked < messages:
        report.errors.append(f"only {report.acked} of {messages} records acknowledged")
    report.events = dict(sorted(load.kinds.items()))
    report.seconds = time.monotonic() - began
    return report


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--brokers", default="muster,kafka")
    parser.add_argument("--protocols", default="classic,consumer")
    parser.add_argument("--messages", type=int, default=3000)
    parser.add_argument("--throughput", type=int, default=300)
    args = parser.parse_args(argv)
    from tests.support.brokers import MusterProcess
    from tests.support.kafka import KafkaProcess

    failed = 0
    for name in args.brokers.split(","):
        for protocol in args.protocols.split(","):
            folder = Path(tempfile.mkdtemp(prefix=f"bounce-{name}-"))
            broker: Any = (
                MusterProcess(folder / "data") if name == "muster" else KafkaProcess(folder)
            )
            broker.start()
            try:
                report = run(broker, name, protocol, args.messages, args.throughput)
            finally:
                broker.close()
            print(json.dumps(report.summary()), flush=True)
            failed += not report.ok
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
