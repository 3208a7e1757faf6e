"""A repeated log line of `muster serve` is let through once per window,
and the next one after it carries the count of those held back."""

from __future__ import annotations

import io
import logging
import sys

import pytest

from muster.repeat_filter import RepeatFilter, setup_logging


def _record(msg: str, *args: object, level: int = logging.INFO) -> logging.LogRecord:
    return logging.LogRecord("muster.server", level, __file__, 1, msg, args, None)


def test_repeats_are_held_back_then_counted() -> None:
    now = [0.0]
    limit = RepeatFilter(window_s=10, clock=lambda: now[0])
    passed = []
    for i in range(67):  # a client retrying Metadata for a missing topic
        now[0] = i * 0.7
        record = _record("metadata for unknown topic %s", "nosuch")
        if limit.filter(record):
            passed.append(record.getMessage())
    assert len(passed) == 5  # t = 0, 10.5, 21, 31.5, 42
    assert passed[0] == "metadata for unknown topic nosuch"
    assert passed[1].endswith("[14 more like this in the last 10 s not shown]")


def test_other_lines_debug_and_errors_pass() -> None:
    limit = RepeatFilter(window_s=10, clock=lambda: 0.0)
    assert limit.filter(_record("a %s", 1)) and limit.filter(_record("b %s", 1))
    assert not limit.filter(_record("a %s", 1))
    # the same problem from another client's connection is a repeat; another problem is not
    closing = "closing connection from %s: %s"
    assert limit.filter(_record(closing, "127.0.0.1:5000", "frame of -5 bytes"))
    assert not limit.filter(_record(closing, "127.0.0.1:5001", "frame of -5 bytes"))
    assert not limit.filter(_record(closing, "[::1]:5002", "frame of -5 bytes"))
    assert limit.filter(_record(closing, "127.0.0.1:5003", "a TLS handshake on PLAINTEXT"))
    # a bare "%s" template: the line itself decides what repeats
    assert limit.filter(_record("%s", "one line")) and limit.filter(_record("%s", "another"))
    assert all(limit.filter(_record("x", level=logging.DEBUG)) for _ in range(3))
    assert all(limit.filter(_record("y", level=logging.ERROR)) for _ in range(3))
    assert all(limit.filter(_record("z", level=logging.WARNING)) for _ in range(3))
    refused = _record("refused connection from %s", "127.0.0.1")
    refused.every_time = True
    assert limit.filter(refused) and limit.filter(refused)


def test_a_broker_started_in_process_logs_to_the_stderr_of_the_moment_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An embedded broker or a CLI test outlives the stderr it started under:
    a line logged after that stream closed goes to the current stderr (it
    used to raise 'I/O operation on closed file' at exit), and a second
    setup does not print each line twice."""
    root = logging.getLogger()
    before = list(root.handlers), root.level
    try:
        first = io.StringIO()
        monkeypatch.setattr(sys, "stderr", first)
        setup_logging("INFO")
        setup_logging("INFO")
        first.close()
        now = io.StringIO()
        monkeypatch.setattr(sys, "stderr", now)
        logging.getLogger("py4j.clientserver").info("Closing down clientserver connection")
        assert now.getvalue().count("Closing down clientserver connection") == 1
    finally:
        for h in [h for h in root.handlers if h not in before[0]]:
            root.removeHandler(h)
        root.setLevel(before[1])
