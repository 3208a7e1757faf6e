"""`muster demo`: the broker on its embedded defaults, driven by real Kafka clients.

It starts the broker in this process, produces events with confluent-kafka,
forms a consumer group, makes it churn (a member joins, one leaves), and then
shows the group's assignment, committed offsets, lag and the recorded causes
of each rebalance.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from muster.config import BrokerConfig
from muster.server.broker import Broker

TOPIC = "demo.orders"
GROUP = "demo-analytics"
PARTITIONS = 6
EVENTS = 6000


class BrokerThread:
    """A broker with its own event loop in a background thread."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.loop = asyncio.new_event_loop()
        self.broker = Broker(config)
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, name="muster-broker", daemon=True)

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self.broker.start())
        except BaseException as exc:
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        self.loop.run_forever()

    def start(self) -> BrokerThread:
        self._thread.start()
        self._ready.wait(60)
        if self._error is not None:
            raise self._error
        return self

    def stop(self) -> None:
        fut = asyncio.run_coroutine_threadsafe(self.broker.stop(), self.loop)
        fut.result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(30)

    @property
    def bootstrap(self) -> str:
        host, port = self.config.listen
        return f"{host}:{self.broker.port or port}"


@dataclass
class Member:
    """One group member polling in its own thread, as an application would."""

    name: str
    bootstrap: str
    consumed: int = 0
    assignments: list[list[int]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> Member:
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": GROUP,
                "client.id": self.name,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": True,
                "auto.commit.interval.ms": 500,
                "session.timeout.ms": 6000,
            }
        )

        def on_assign(c: Any, parts: list[TopicPartition]) -> None:
            self.assignments.append(sorted(p.partition for p in parts))

        consumer.subscribe([TOPIC], on_assign=on_assign)
        try:
            while not self._stop.is_set():
                msg = consumer.poll(0.2)
                if msg is not None and not msg.error():
                    self.consumed += 1
        finally:
            consumer.close()  # commits, then LeaveGroup: a clean departure

    @property
    def current(self) -> list[int]:
        return self.assignments[-1] if self.assignments else []

    def leave(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)


def _wait(cond: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.1)
    return cond()


def _assignment_table(title: str, members: list[Member]) -> Table:
    table = Table(title=title)
    table.add_column("member")
    table.add_column("partitions")
    table.add_column("consumed", justify="right")
    for m in members:
        table.add_row(m.name, ", ".join(map(str, m.current)) or "-", str(m.consumed))
    return table


def _covered(members: list[Member]) -> bool:
    parts = [p for m in members for p in m.current]
    return sorted(parts) == list(range(PARTITIONS))


def produce_events(bootstrap: str, console: Console) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    fut = admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC]
    try:
        fut.result(15)
        console.print(f"created topic [bold]{TOPIC}[/] with {PARTITIONS} partitions")
    except KafkaException as exc:
        if exc.args[0].name() != "TOPIC_ALREADY_EXISTS":
            raise
        console.print(f"topic [bold]{TOPIC}[/] exists already (data dir kept from an earlier run)")
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    errors: list[Any] = []
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("producing orders (acks=all, fsynced)", total=EVENTS)
        for i in range(EVENTS):
            order = {"order": i, "customer": f"c{i % 97}", "amount": (i * 37) % 500 + 1}
            producer.produce(
                TOPIC,
                json.dumps(order).encode(),
                key=order["customer"].encode(),
                on_delivery=lambda err, _m: errors.append(err) if err else None,
            )
            if i % 500 == 0:
                producer.poll(0)
                progress.update(task, completed=i)
        producer.flush(60)
        progress.update(task, completed=EVENTS)
    if errors:
        raise RuntimeError(f"{len(errors)} deliveries failed: {errors[0]}")
    console.print(f"produced {EVENTS} orders, keyed by customer (Java-compatible partitioner)")


def rebalance_story(bootstrap: str) -> list[str]:
    """The group's recorded rebalances, one line each, from __muster_group_events."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "muster-demo-reader",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition("__muster_group_events", 0, 0)])
    lines: list[str] = []
    started: dict[int, dict[str, Any]] = {}
    try:
        _low, high = consumer.get_watermark_offsets(
            TopicPartition("__muster_group_events", 0), timeout=10
        )
        seen = 0
        while seen < high:
            batch = consumer.consume(500, 1.0)
            if not batch:
                break
            for msg in batch:
                seen = msg.offset() + 1
                if msg.error() or msg.key() != GROUP.encode():
                    continue
                event = json.loads(msg.value())
                if event["type"] == "RebalanceStarted":
                    started[event["generation"]] = event
                elif event["type"] == "RebalanceCompleted":
                    causes = ", ".join(event["causes"]) or "?"
                    lines.append(
                        f"generation {event['generation']}: {event['member_count']} members, "
                        f"caused by {causes}, took {event['duration_ms']} ms "
                        f"(join waited for {event['waited_for']})"
                    )
    finally:
        consumer.close()
    return lines


def run_scenario(bootstrap: str, console: Console) -> None:
    produce_events(bootstrap, console)
    members = [Member(f"member-{i}", bootstrap).start() for i in range(3)]
    # group.initial.rebalance.delay.ms (3 s by default) lets all three join one rebalance
    _wait(lambda: _covered(members) and all(m.current for m in members), 60)
    _wait(lambda: sum(m.consumed for m in members) >= EVENTS, 60)
    console.print(_assignment_table(f"group {GROUP}: 3 members formed one group", members))
    newcomer = Member("member-3", bootstrap).start()
    members.append(newcomer)
    _wait(lambda: _covered(members) and bool(newcomer.current), 60)
    console.print(_assignment_table("a 4th member joined: partitions rebalanced", members))
    leaving = members.pop(0)
    leaving.leave()
    _wait(lambda: _covered(members), 60)
    console.print(_assignment_table(f"{leaving.name} left the group cleanly", members))
    for m in members:
        m.leave()
    table = Table(title="why the group rebalanced (from __muster_group_events)")
    table.add_column("rebalance")
    for line in rebalance_story(bootstrap):
        table.add_row(line)
    console.print(table)


def run(config: BrokerConfig, keep_serving: bool) -> None:
    console = Console()
    broker = BrokerThread(config).start()
    console.print(
        f"[bold green]muster is serving[/] on {broker.bootstrap}, data in {config.data_dir}/"
    )
    try:
        run_scenario(broker.bootstrap, console)
        console.print(
            "\nLook further:\n"
            f"  .venv/bin/muster groups describe {GROUP} -b {broker.bootstrap}\n"
            f"  .venv/bin/muster consume {TOPIC} --offset earliest --max-messages 5 "
            f"-b {broker.bootstrap}\n"
            f"  kcat -b {broker.bootstrap} -L"
        )
        if keep_serving:
            console.print("\nThe broker keeps serving; Ctrl-C stops it.")
            threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        broker.stop()
        console.print("muster stopped")
