"""At-least-once under member kills: every produced record is consumed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from muster.client import Producer
from tests.support.brokers import MusterProcess
from tests.wire.clients import create_topic

ROOT = Path(__file__).parents[2]


@pytest.fixture
def quick_broker(tmp_path):
    broker = MusterProcess(tmp_path / "data", {"group.min.session.timeout.ms": "1000"}).start()
    try:
        yield broker
    finally:
        broker.close()


def test_at_least_once_when_a_member_is_killed(quick_broker, topic_name, tmp_path):
    bootstrap = quick_broker.bootstrap
    create_topic(bootstrap, topic_name, 4)
    n = 3000
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(n):
        producer.produce(topic_name, b"%d" % i, key=b"%d" % i)
    assert producer.flush(20) == 0
    producer.close()
    group = f"{topic_name}-alo"
    outputs = [tmp_path / f"c{i}.out" for i in range(3)]
    procs = []
    # a mixed group: two muster members (the first gets killed) and a confluent one
    kinds = ["muster", "muster", "confluent"]
    for out, kind in zip(outputs, kinds, strict=True):
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "tests.client.consumer_proc",
                    bootstrap,
                    group,
                    topic_name,
                    kind,
                ],
                stdout=open(out, "w"),
                stderr=subprocess.STDOUT,
                cwd=ROOT,
            )
        )
    try:
        # kill one member once it has processed something
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and outputs[0].stat().st_size < 200:
            time.sleep(0.05)
        os.kill(procs[0].pid, signal.SIGKILL)
        procs[0].wait()
        for p in procs[1:]:
            p.wait(timeout=60)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    seen: set[int] = set()
    for out in outputs:
        for line in out.read_text().splitlines():
            if line and not line.startswith("#"):
                seen.add(int(line))
    assert seen == set(range(n)), f"lost {sorted(set(range(n)) - seen)[:20]}"
    # every member took part, the killed one included
    assert all(out.read_text().strip() for out in outputs)
