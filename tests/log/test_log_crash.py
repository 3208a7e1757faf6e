"""kill -9 test: a child appends and flushes (from a worker thread, as the
broker does) and reports flushed offsets; the parent SIGKILLs it mid-stream,
reopens the data dir and checks every reported-flushed record is intact."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from muster.log.manager import LogManager
from muster.records.batch import (
    Record,
    build_batch,
    iter_batches,
    iter_records,
    validate_batches,
)

CHILD = textwrap.dedent(
    """
    import sys, threading
    from pathlib import Path
    from muster.log.manager import LogManager
    from muster.records.batch import Record, build_batch

    mgr = LogManager(Path(sys.argv[1]), {"log.segment.bytes": 64 * 1024,
                                         "log.index.interval.bytes": 1024})
    mgr.load()
    mgr.create_topic("crash", 1, {})
    log = mgr.get("crash", 0)
    print("topic", flush=True)
    stop = threading.Event()

    def flusher():
        last = -1
        while not stop.is_set():
            log.flush()
            if log.flushed_offset != last:
                last = log.flushed_offset
                print("flushed", last, flush=True)

    threading.Thread(target=flusher, daemon=True).start()
    seq = 0
    while True:
        n = 1 + seq % 4
        recs = [Record(b"k%d" % (seq + i), b"value-%d" % (seq + i) * 20, (), seq + i)
                for i in range(n)]
        log.append(build_batch(recs, compression_type=seq % 5), seq)
        seq += n
    """
)


@pytest.mark.parametrize("tear", [False, True])
def test_flushed_records_survive_sigkill(tmp_path: Path, tear: bool) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    flushed = 0
    reports = 0
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "topic"  # create_topic returned
        for line in proc.stdout:
            word, value = line.split()
            assert word == "flushed"
            flushed = int(value)
            reports += 1
            if reports >= 30 and flushed > 2_000:
                break
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    if tear:  # as if the machine died mid-write: half a batch and junk at the end
        last = sorted((tmp_path / "crash-0").glob("*.log"))[-1]
        with open(last, "ab") as fh:
            fh.write(build_batch([Record(b"x", b"y" * 500)])[:300] + os.urandom(999))

    mgr = LogManager(tmp_path, {"log.segment.bytes": 64 * 1024})
    mgr.load()
    assert set(mgr.topics()) == {"crash"}
    log = mgr.get("crash", 0)
    assert log is not None
    assert log.log_end_offset >= flushed
    if tear:
        assert log.recovered_truncations == 1  # type: ignore[attr-defined]
    offset, seen = 0, []
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20)
        validate_batches(data)  # every stored batch has a good CRC
        for r in iter_records(data):
            seen.append((r.offset, r.key, r.value))
        offset = list(iter_batches(data))[-1].next_offset
    assert [s[0] for s in seen] == list(range(log.log_end_offset))
    for off, key, value in seen:
        assert key == b"k%d" % off and value == b"value-%d" % off * 20
    assert len(log.segments) > 1  # type: ignore[attr-defined]
