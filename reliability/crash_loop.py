"""Broker crash loop: kill -9 at random moments under produce, transactions and commits.

    .venv/bin/python reliability/crash_loop.py [--restarts 100] [--seed 1]

Third-party clients run throughout, each in its own thread:
- confluent-kafka, idempotent, acks=all; kafka-python, acks=all: records
  acknowledged at (partition, offset) are remembered;
- confluent-kafka transactional: a transaction of a few records is begun,
  produced and committed over and over; a commit that returns is acknowledged,
  one that fails is aborted (or fenced by the next init);
- confluent-kafka and kafka-python consumers of two groups commit increasing
  explicit offsets synchronously: a commit that returns is acknowledged.
The broker is killed with SIGKILL after a random 0.3-2.5 s of service and
restarted, `--restarts` times. Afterwards (broker up):
- every acknowledged record is read back (read_committed) at exactly its
  offset with its value (lost / moved counted);
- every committed transaction is wholly visible, every other one wholly
  invisible (half-visible counted);
- OffsetFetch returns, per group and partition, the last acknowledged
  commit or a later one that was attempted (lost counted);
- log consistency: after one more kill -9, every partition directory is
  opened as the broker does and checked: batches contiguous and CRC-valid,
  indexes agreeing with the data, producer state rebuilt equal to a replay,
  high watermark at or past every acknowledged offset.
Then the torn-write checks (reliability/torn_writes.py) run on the data dir.

Closing line: `crash-loop: N restarts, A acked records, 0 lost, 0 moved,
T acked transactions, 0 half visible, C acked commits, 0 lost, log check ok`.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]

import torn_writes  # noqa: E402
from campaign_support import (  # noqa: E402
    MusterProcess,
    add_keep_option,
    campaign_workdir,
    create_topic,
    read_all,
    wait_until,
)
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402
from kafka import KafkaConsumer, KafkaProducer  # noqa: E402
from kafka.structs import OffsetAndMetadata  # noqa: E402
from kafka.structs import TopicPartition as KpTopicPartition  # noqa: E402
from log_check import check_data_dir  # noqa: E402

from muster.coordinator.partitioning import partition_for  # noqa: E402

TOPIC, TXN_TOPIC, PARTITIONS = "crash", "crash-txn", 3
GROUPS = {"confluent": "crash-group-ck", "kafka-python": "crash-group-kp"}


@dataclass
class Acked:
    lock: threading.Lock = field(default_factory=threading.Lock)
    records: dict[tuple[str, int, int], bytes] = field(default_factory=dict)
    txn_records: dict[str, list[tuple[int, int, bytes]]] = field(default_factory=dict)
    txn_committed: set[str] = field(default_factory=set)
    commits: dict[tuple[str, int], int] = field(default_factory=dict)  # last acked
    attempted: dict[tuple[str, int], set[int]] = field(default_factory=lambda: defaultdict(set))
    n_commits: int = 0
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def record(self, topic: str, partition: int, offset: int, value: bytes) -> None:
        with self.lock:
            self.records[(topic, partition, offset)] = value

    def error(self, where: str) -> None:
        with self.lock:
            self.errors[where] += 1


@dataclass
class Figures:
    restarts: int = 0
    acked: int = 0
    lost: int = 0
    moved: int = 0
    txns: int = 0
    txns_aborted_or_unknown: int = 0
    half_visible: int = 0
    commits: int = 0
    commits_lost: int = 0
    log_problems: list[str] = field(default_factory=list)
    partitions_checked: int = 0
    client_errors: dict[str, int] = field(default_factory=dict)
    torn: list[torn_writes.Outcome] = field(default_factory=list)

    def line(self) -> str:
        check = "ok" if not self.log_problems else f"{len(self.log_problems)} problems"
        return (
            f"crash-loop: {self.restarts} restarts, {self.acked:,} acked records, "
            f"{self.lost} lost, {self.moved} moved, {self.txns:,} acked transactions, "
            f"{self.half_visible} half visible ({self.txns_aborted_or_unknown:,} aborted "
            f"or unacknowledged, none visible), {self.commits:,} acked commits, "
            f"{self.commits_lost} lost, log check {check} ({self.partitions_checked} partitions); "
            f"torn writes: {len(self.torn)} cases, {self._count('recovered')} recovered, "
            f"{self._count('refused')} refused with a message, {self._count('WRONG')} wrong"
        )

    def _count(self, verdict: str) -> int:
        return sum(1 for o in self.torn if o.verdict == verdict)


def _confluent_producer(bootstrap: str, acked: Acked, stop: threading.Event) -> None:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "message.timeout.ms": 120000,
        }
    )

    def on_delivery(err: Any, msg: Any) -> None:
        if err is None:
            acked.record(TOPIC, msg.partition(), msg.offset(), msg.value())
        else:
            acked.error("confluent produce")

    n = 0
    while not stop.is_set():
        try:
            producer.produce(
                TOPIC, f"ck-{n}".encode(), partition=n % PARTITIONS, on_delivery=on_delivery
            )
            n += 1
        except BufferError:
            producer.poll(0.1)
        producer.poll(0.002 if n % 20 else 0.02)
    producer.flush(120)


def _kafka_python_producer(bootstrap: str, acked: Acked, stop: threading.Event) -> None:
    producer = KafkaProducer(
        bootstrap_servers=bootstrap, acks="all", retries=2**31 - 1, request_timeout_ms=30000
    )
    n = 0
    while not stop.is_set():
        value = f"kp-{n}".encode()

        def ok(meta: Any, value: bytes = value) -> None:
            acked.record(TOPIC, meta.partition, meta.offset, value)

        fut = producer.send(TOPIC, value, partition=n % PARTITIONS)
        fut.add_callback(ok)
        fut.add_errback(lambda _exc: acked.error("kafka-python produce"))
        n += 1
        if n % 50 == 0:
            time.sleep(0.02)
    producer.flush(120)
    producer.close(30)


def _collect(into: list[tuple[int, int, bytes]]) -> Any:
    def on_delivery(err: Any, msg: Any) -> None:
        if err is None:
            into.append((msg.partition(), msg.offset(), msg.value()))

    return on_delivery


def _transactions(bootstrap: str, acked: Acked, stop: threading.Event) -> None:
    producer: Producer | None = None
    n = 0
    while not stop.is_set():
        try:
            if producer is None:
                producer = Producer(
                    {
                        "bootstrap.servers": bootstrap,
                        "transactional.id": "crash-txn-producer",
                        "transaction.timeout.ms": 20000,
                    }
                )
                producer.init_transactions(60)
            txn = f"t{n}"
            n += 1
            delivered: list[tuple[int, int, bytes]] = []
            acked.txn_records[txn] = delivered
            producer.begin_transaction()
            for i in range(5):
                producer.produce(
                    TXN_TOPIC,
                    f"{txn}-{i}".encode(),
                    partition=i % 2,
                    on_delivery=_collect(delivered),
                )
            producer.commit_transaction(60)
            with acked.lock:
                acked.txn_committed.add(txn)
        except KafkaException as exc:
            acked.error("transaction")
            error = exc.args[0]
            if producer is not None and error.txn_requires_abort():
                try:
                    producer.abort_transaction(60)
                except KafkaException:
                    producer = None
            elif producer is not None and not error.retriable():
                producer = None  # fatal or fenced: a new producer fences the old one
            time.sleep(0.2)


def _confluent_committer(bootstrap: str, acked: Acked, stop: threading.Event) -> None:
    group = GROUPS["confluent"]
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False}
    )
    n = 1
    while not stop.is_set():
        offsets = [TopicPartition(TOPIC, p, n * 10 + p) for p in range(PARTITIONS)]
        with acked.lock:
            for tp in offsets:
                acked.attempted[(group, tp.partition)].add(tp.offset)
        try:
            result = consumer.commit(offsets=offsets, asynchronous=False)
            if all(tp.error is None for tp in result):
                with acked.lock:
                    for tp in offsets:
                        acked.commits[(group, tp.partition)] = tp.offset
                    acked.n_commits += 1
        except KafkaException:
            acked.error("confluent commit")
            time.sleep(0.1)
        n += 1
        time.sleep(0.01)
    consumer.close()


def _kafka_python_committer(bootstrap: str, acked: Acked, stop: threading.Event) -> None:
    group = GROUPS["kafka-python"]
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        request_timeout_ms=30000,
    )
    n = 1
    while not stop.is_set():
        offsets = {
            KpTopicPartition(TOPIC, p): OffsetAndMetadata(n * 10 + p, "", -1)
            for p in range(PARTITIONS)
        }
        with acked.lock:
            for tp, om in offsets.items():
                acked.attempted[(group, tp.partition)].add(om.offset)
        try:
            consumer.commit(offsets)
            with acked.lock:
                for tp, om in offsets.items():
                    acked.commits[(group, tp.partition)] = om.offset
                acked.n_commits += 1
        except Exception:  # kafka-python raises assorted errors while the broker is down
            acked.error("kafka-python commit")
            time.sleep(0.2)
        n += 1
        time.sleep(0.01)
    consumer.close()


WORKERS = (
    _confluent_producer,
    _kafka_python_producer,
    _transactions,
    _confluent_committer,
    _kafka_python_committer,
)


def _committed(bootstrap: str, group: str) -> dict[int, int] | None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        got = consumer.committed([TopicPartition(TOPIC, p) for p in range(PARTITIONS)], timeout=15)
        return {tp.partition: tp.offset for tp in got}
    except KafkaException:
        return None
    finally:
        consumer.close()


def verify(broker: MusterProcess, acked: Acked, figures: Figures) -> None:
    figures.acked = len(acked.records)
    ends = {p: 0 for p in range(PARTITIONS)}
    for _, p, o in acked.records:
        ends[p] = max(ends[p], o + 1)
    got = wait_until(lambda: _read_or_none(broker, TOPIC, PARTITIONS, ends), 180, "acked records")
    for (_, p, o), value in acked.records.items():
        seen = got.get((p, o))
        if seen is None:
            figures.lost += 1
        elif seen != value:
            figures.moved += 1
    # transactions: committed ones wholly visible, the rest wholly invisible
    tends = {p: 0 for p in range(2)}
    for recs in acked.txn_records.values():
        for p, o, _ in recs:
            tends[p] = max(tends[p], o + 1)
    visible = wait_until(lambda: _read_or_none(broker, TXN_TOPIC, 2, tends), 180, "txn records")
    values = set(visible.values())
    for txn in acked.txn_records:
        names = {f"{txn}-{i}".encode() for i in range(5)}
        shown = len(names & values)
        if txn in acked.txn_committed:
            figures.txns += 1
            if shown != 5:
                figures.half_visible += 1
        else:
            figures.txns_aborted_or_unknown += 1
            if shown not in (0, 5):  # an unacknowledged commit may have landed whole
                figures.half_visible += 1
    figures.commits = acked.n_commits
    for group in GROUPS.values():
        fetched = wait_until(lambda g=group: _committed(broker.bootstrap, g), 60, "OffsetFetch")
        for p in range(PARTITIONS):
            last = acked.commits.get((group, p))
            now = fetched.get(p, -1)
            if last is not None and (now < last or now not in acked.attempted[(group, p)]):
                figures.commits_lost += 1
    figures.client_errors = dict(acked.errors)


def _delete_some(broker: MusterProcess) -> dict[int, int]:
    """DeleteRecords below offset 20 of partition 0; {partition: new log start}."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    done = admin.delete_records([TopicPartition(TOPIC, 0, 20)])
    for future in done.values():
        future.result(timeout=30)
    return {0: 20}


def _read_or_none(broker: MusterProcess, topic: str, n: int, ends: dict[int, int]) -> Any:
    try:
        return read_all(broker.bootstrap, topic, n, ends)
    except KafkaException:
        return None


def run(restarts: int, seed: int, workdir: Path) -> tuple[Figures, Acked, MusterProcess]:
    rng = random.Random(seed)
    figures = Figures()
    acked = Acked()
    # small segments: rolls, closed segments' indexes and producer snapshots
    broker = MusterProcess(workdir / "data", {"log.segment.bytes": str(64 << 10)})
    broker.start()
    create_topic(broker.bootstrap, TOPIC, PARTITIONS)
    create_topic(broker.bootstrap, TXN_TOPIC, 2)
    stop = threading.Event()
    threads = [
        threading.Thread(target=w, args=(broker.bootstrap, acked, stop), name=w.__name__)
        for w in WORKERS
    ]
    for t in threads:
        t.start()
    try:
        for _ in range(restarts):
            time.sleep(rng.uniform(0.3, 2.5))
            broker.kill()
            broker.start()
            figures.restarts += 1
        time.sleep(3.0)  # the clients catch up with the last restart
        stop.set()
        for t in threads:
            t.join(180)
        verify(broker, acked, figures)
        floor = _delete_some(broker)  # so that log-start-offset.json exists too
        broker.kill()  # the checks see the directory as a crash leaves it
        pristine = workdir / "after-crash"
        shutil.rmtree(pristine, ignore_errors=True)
        shutil.copytree(broker.data_dir, pristine)
        problems, checked = check_data_dir(broker.data_dir, acked.records)
        figures.log_problems, figures.partitions_checked = problems, checked
        groups = {g: acked.attempted for g in GROUPS.values()}
        offsets_partition = partition_for(GROUPS["confluent"], 50)
        for kind in torn_writes.targets(pristine, TOPIC, offsets_partition):
            for mode in torn_writes.MODES:
                figures.torn.append(
                    torn_writes.check_case(
                        pristine,
                        workdir,
                        kind,
                        mode,
                        TOPIC,
                        PARTITIONS,
                        acked.records,
                        floor,
                        groups,
                        offsets_partition,
                    )
                )
    except BaseException:
        stop.set()
        broker.close()
        raise
    return figures, acked, broker


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--restarts", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    add_keep_option(parser)
    args = parser.parse_args(argv)
    workdir = campaign_workdir(args.keep, "muster-crash-")
    figures, _, broker = run(args.restarts, args.seed, workdir)
    broker.close()
    print(f"client errors while the broker was down: {figures.client_errors}")
    for problem in figures.log_problems[:20]:
        print("  log:", problem)
    for o in figures.torn:
        print(f"  torn {o.kind} ({o.mode}): {o.verdict} {o.detail[:200]}")
    print(figures.line())
    bad = figures.lost or figures.moved or figures.half_visible or figures.commits_lost
    wrong = any(o.verdict == "WRONG" for o in figures.torn)
    return 1 if bad or figures.log_problems or wrong else 0


if __name__ == "__main__":
    sys.exit(main())
