"""`kcat -G` (Debian kcat, librdkafka's balanced consumer) consumes and commits via muster."""

from __future__ import annotations

import shutil
import subprocess

from tests.support.brokers import MusterProcess
from tests.wire.clients import create_topic
from tests.wire.group_helpers import (
    all_partitions,
    committed_offsets,
    group_muster,  # noqa: F401 - fixture
    produce_values,
)

KCAT = shutil.which("kcat") or shutil.which("kafkacat")


def kcat_group_consume(bootstrap: str, group: str, topic: str) -> list[tuple[int, int, str]]:
    """One `kcat -G` run to the end of every partition; returns (partition, offset, value)."""
    assert KCAT is not None, "kcat missing: `make install` (or .ci/run) installs it"
    done = subprocess.run(
        [
            KCAT,
            "-b",
            bootstrap,
            "-G",
            group,
            topic,
            "-e",
            "-q",
            "-X",
            "auto.offset.reset=earliest",
            "-X",
            "session.timeout.ms=6000",
            "-X",
            "heartbeat.interval.ms=500",
            "-f",
            "%p %o %s\n",
        ],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stderr
    out = []
    for line in done.stdout.splitlines():
        p, o, v = line.split(" ", 2)
        out.append((int(p), int(o), v))
    return out


def test_kcat_group_consumes_and_commits(group_muster: MusterProcess) -> None:  # noqa: F811
    b = group_muster.bootstrap
    topic, group = "kcat-g-topic", "kcat-g-group"
    create_topic(b, topic, partitions=3)
    first = [f"one-{i}".encode() for i in range(60)]
    produce_values(b, topic, first, 3)

    got = kcat_group_consume(b, group, topic)
    assert sorted(v for _p, _o, v in got) == sorted(x.decode() for x in first)
    consumed = {(topic, p): sum(1 for pp, _o, _v in got if pp == p) for p in range(3)}
    assert consumed == {(topic, p): 20 for p in range(3)}
    assert committed_offsets(b, group, sorted(all_partitions(topic, 3))) == consumed

    # a second run of the same group starts at the commits: only new messages
    second = [f"two-{i}".encode() for i in range(9)]
    produce_values(b, topic, second, 3)
    got2 = kcat_group_consume(b, group, topic)
    assert sorted(v for _p, _o, v in got2) == sorted(x.decode() for x in second)
    assert min(o for _p, o, _v in got2) == 20
    assert committed_offsets(b, group, sorted(all_partitions(topic, 3))) == {
        (topic, p): 23 for p in range(3)
    }
