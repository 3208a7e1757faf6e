"""The demo's producer: a burst of orders, then a steady trickle while the group churns."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from rich.console import Console
from rich.progress import Progress

from muster.client import Admin, KafkaError, NewTopic, Producer
from muster.demo.settings import EVENTS, PARTITIONS, TOPIC, TRICKLE_PER_SECOND, client_config


def _order(i: int) -> tuple[bytes, bytes]:
    customer = f"c{i % 97}"
    body = {"order": i, "customer": customer, "amount": (i * 37) % 500 + 1}
    return customer.encode(), json.dumps(body).encode()


def create_topic(bootstrap: str, console: Console) -> None:
    with Admin(client_config(bootstrap)) as admin:
        try:
            admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
            console.print(f"created topic [bold]{TOPIC}[/] with {PARTITIONS} partitions")
            return
        except KafkaError as exc:
            if exc.name != "TOPIC_ALREADY_EXISTS":
                raise
        console.print(f"topic [bold]{TOPIC}[/] exists already (data dir kept from an earlier run)")


def produce_burst(bootstrap: str, console: Console) -> None:
    producer = Producer(client_config(bootstrap, **{"linger.ms": 5, "acks": "all"}))
    errors: list[Any] = []
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("producing orders (acks=all, fsynced)", total=EVENTS)
        for i in range(EVENTS):
            key, value = _order(i)
            producer.produce(
                TOPIC, value, key=key, on_delivery=lambda e, _m: errors.append(e) if e else None
            )
            if i % 500 == 0:
                producer.poll(0)
                progress.update(task, completed=i)
        producer.flush(60)
        producer.close()
        progress.update(task, completed=EVENTS)
    if errors:
        raise RuntimeError(f"{len(errors)} deliveries failed: {errors[0]}")
    console.print(f"produced {EVENTS} orders, keyed by customer (Java-compatible partitioner)")


class OrderTrickle:
    """Keeps producing while the group churns, so that lag builds up during rebalances."""

    def __init__(self, bootstrap: str) -> None:
        self.produced = 0
        self.failed = 0
        self._producer = Producer(client_config(bootstrap, **{"linger.ms": 20, "acks": "all"}))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="order-trickle", daemon=True)

    def start(self) -> OrderTrickle:
        self._thread.start()
        return self

    def _count(self, err: Any, _msg: Any) -> None:
        if err:
            self.failed += 1
        else:
            self.produced += 1

    def _run(self) -> None:
        i = EVENTS
        tick = 0.05
        per_tick = max(1, int(TRICKLE_PER_SECOND * tick))
        while not self._stop.is_set():
            for _ in range(per_tick):
                key, value = _order(i)
                self._producer.produce(TOPIC, value, key=key, on_delivery=self._count)
                i += 1
            self._producer.poll(0)
            time.sleep(tick)
        self._producer.flush(30)
        self._producer.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)
