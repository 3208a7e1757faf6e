"""Debian's kcat (librdkafka 2.0.2) lists, produces, consumes and queries offsets."""

from __future__ import annotations

import json
import shutil
import subprocess

from tests.support.brokers import MusterProcess
from tests.wire.clients import create_topic

KCAT = shutil.which("kcat") or shutil.which("kafkacat")


def kcat(*args: str, stdin: str | None = None, timeout: float = 30) -> str:
    assert KCAT is not None, "kcat missing: `make install` (or .ci/run) installs it"
    done = subprocess.run(
        [KCAT, *args], input=stdin, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_kcat_metadata_produce_consume_query(shared_muster: MusterProcess) -> None:
    b = shared_muster.bootstrap
    create_topic(b, "kcat-topic", partitions=2)
    meta = json.loads(kcat("-b", b, "-L", "-J"))
    topics = {t["topic"]: t for t in meta["topics"]}
    assert len(topics["kcat-topic"]["partitions"]) == 2
    assert meta["brokers"][0]["name"] == b

    lines = [f"key{i}:value{i}" for i in range(50)]
    kcat("-b", b, "-P", "-t", "kcat-topic", "-p", "1", "-K", ":", stdin="\n".join(lines) + "\n")
    out = kcat(
        "-b", b, "-C", "-t", "kcat-topic", "-p", "1", "-o", "beginning", "-e", "-f", "%k=%s@%o\n"
    )
    assert out.splitlines() == [f"key{i}=value{i}@{i}" for i in range(50)]

    offsets = kcat("-b", b, "-Q", "-t", "kcat-topic:1:-1")
    assert "kcat-topic [1] offset 50" in offsets
    offsets = kcat("-b", b, "-Q", "-t", "kcat-topic:1:-2")
    assert "kcat-topic [1] offset 0" in offsets
