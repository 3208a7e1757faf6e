"""Rate-limited logging for `muster serve`: the same INFO line
(same logger, level and text, client addresses aside) is let through at most
once per window; the next one after the window says how many
were held back. A client retrying a request (e.g. Metadata for a topic that
does not exist, several times a second) then costs one line per window, not
one per retry. Lines that differ in more than a client's address pass: a
frame too large and a TLS handshake on a plaintext port are two problems, and
a person needs to see each. DEBUG (every request, on purpose), WARNING and
ERROR lines pass as they are: a refused connection or a bad frame is an event
an operator counts, one line each (the connection limits' own tests count
them), and so are INFO lines logged with `extra={"every_time": True}` (a
connection refused over the connection limits)."""

from __future__ import annotations

import logging
import re
import sys
import time
from collections.abc import Callable

WINDOW_S = 10.0
# a client's address (host:port, IPv4 or [IPv6]): the same line from another
# connection is a repeat
_ADDRESS = re.compile(r"(?:\d{1,3}(?:\.\d{1,3}){3}|\[[0-9a-fA-F:.]+\]):\d+")
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class RepeatFilter(logging.Filter):
    def __init__(self, window_s: float = WINDOW_S, clock: Callable[[], float] = time.monotonic):
        super().__init__()
        self.window_s = window_s
        self.clock = clock
        # (logger, level, text) -> [when the last one went out, how many held back since]
        self._seen: dict[tuple[str, int, str], list[float]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.INFO or getattr(record, "every_time", False):
            return True
        text = _ADDRESS.sub("<client>", record.getMessage())
        key = (record.name, record.levelno, text)
        now = self.clock()
        entry = self._seen.get(key)
        if entry is not None and now - entry[0] < self.window_s:
            entry[1] += 1
            return False
        held = int(entry[1]) if entry is not None else 0
        self._seen[key] = [now, 0]
        if held:
            record.msg = (
                f"{record.msg} [{held} more like this in the last {self.window_s:g} s not shown]"
            )
        return True


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever sys.stderr is when a line is logged, not the one it
    was made with: a broker started in-process (an embedded broker, a CLI
    test's runner) outlives the stream it started under, and a line logged
    later (py4j closing at exit, say) must not hit a closed file."""

    @property  # type: ignore[override]
    def stream(self) -> object:
        return sys.stderr

    @stream.setter
    def stream(self, _value: object) -> None:
        pass


def setup_logging(level: str = "INFO", window_s: float = WINDOW_S) -> None:
    """The broker's log format on stderr, with repeats rate-limited. Done
    before the broker starts, whose own logging.basicConfig then keeps it.
    A second call (a second broker in one process) replaces the first
    handler instead of printing every line twice."""
    handler = _StderrHandler()
    handler.setFormatter(logging.Formatter(FORMAT))
    handler.addFilter(RepeatFilter(window_s))
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _StderrHandler)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
