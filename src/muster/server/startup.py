"""What can go wrong when a broker starts, said in a line a person can act on.

The order is deliberate: the listener is bound before anything touches the
disk, so a broker that cannot listen leaves no data directory behind; then the
data directory is created and locked (Kafka's `.lock`) for the broker's
lifetime, so a second broker on the same directory stops instead of writing
the same logs.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import socket
import time
from pathlib import Path

LOCK_NAME = ".lock"

log = logging.getLogger("muster.broker")


class StartupError(Exception):
    """The broker cannot start; the message says what is wrong and what to do."""


def _reason(exc: OSError) -> str:
    if exc.errno is not None:
        return os.strerror(exc.errno).lower()
    return str(exc)


def bind_listener(host: str, port: int, what: str = "listener") -> socket.socket:
    """A TCP socket bound to HOST:PORT, or a StartupError saying why not."""
    sock = None
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
        # SO_REUSEADDR as asyncio.start_server sets it, so a restart does not wait
        # for the previous run's TIME_WAIT connections.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Bound but not listening: clients are refused until the broker is
        # ready, and asyncio.start_server(sock=...) calls listen() then. A
        # second broker's bind fails once this one listens (before that, its
        # listen() does: Broker.start turns either into a StartupError).
        sock.bind(address)
        return sock
    except OSError as exc:
        if sock is not None:
            sock.close()
        raise StartupError(listen_failed(host, port, exc, what)) from None


def listen_failed(host: str, port: int, exc: OSError, what: str = "listener") -> str:
    """What to tell a person when HOST:PORT cannot be bound or listened on."""
    where = f"{host or '0.0.0.0'}:{port}"
    if exc.errno == errno.EADDRINUSE:
        return (
            f"cannot listen on {where}: address already in use (another broker?).\n"
            "Stop whatever holds it or choose another port (--listen HOST:PORT)."
        )
    if exc.errno == errno.EACCES:
        return (
            f"cannot listen on {where}: permission denied (ports below 1024 need root).\n"
            "Choose a port above 1024 (--listen HOST:PORT)."
        )
    if isinstance(exc, socket.gaierror) or exc.errno == errno.EADDRNOTAVAIL:
        return (
            f"cannot listen on {where}: no such address on this machine ({_reason(exc)}).\n"
            f"Use an address of this machine for the {what}, e.g. 127.0.0.1."
        )
    return f"cannot listen on {where}: {_reason(exc)}."


class DataDirLock:
    """An exclusive flock on DATA_DIR/.lock holding the owner's pid.

    flock (not a pid file alone) because the kernel drops it when the process
    dies, even by kill -9, so a crashed broker never leaves a stale lock.
    """

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self._fd: int | None = None

    def acquire(self) -> DataDirLock:
        path = self.data_dir / LOCK_NAME
        try:
            missing = not self.data_dir.exists()
            self.data_dir.mkdir(parents=True, exist_ok=True)
            if missing:
                # created, parents included, as Kafka creates its log.dirs; said
                # in Kafka's words, so a mistyped --data-dir shows in the log
                log.info("Log directory %s not found, created it.", self.data_dir.absolute())
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StartupError(self._unusable(exc)) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise StartupError(
                f"data directory {self.data_dir} is in use by another muster broker "
                f"(pid {holder}).\n"
                "Stop that broker first, or give this one its own directory (--data-dir DIR)."
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        return self

    def _unusable(self, exc: OSError) -> str:
        where = self.data_dir
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            problem = f"data directory {where} is not writable ({_reason(exc)})"
        elif exc.errno in (errno.ENOENT, errno.ENOTDIR):
            problem = f"cannot create data directory {where} ({_reason(exc)})"
        else:
            problem = f"cannot use data directory {where} ({_reason(exc)})"
        return f"{problem}.\nChoose a directory this user can write (--data-dir DIR)."

    def release(self) -> None:
        if self._fd is None:
            return
        # The file stays (as Kafka's .lock does); only the flock goes.
        with contextlib.suppress(OSError):
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None


def process_age_s() -> float | None:
    """Seconds since this process started (Linux; None elsewhere): what the
    interpreter and the imports cost before the broker's own start."""
    try:
        with open("/proc/self/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22: starttime
        return time.clock_gettime(time.CLOCK_BOOTTIME) - started
    except (OSError, ValueError, IndexError, AttributeError):
        return None


class Phases:
    """How long each step of a start took, for the one line logged at the end."""

    def __init__(self) -> None:
        self._last = time.perf_counter()
        self.done: list[tuple[str, float]] = []

    def mark(self, name: str) -> None:
        now = time.perf_counter()
        self.done.append((name, (now - self._last) * 1000))
        self._last = now

    def summary(self) -> str:
        total = sum(ms for _, ms in self.done)
        steps = ", ".join(f"{name} {ms:.0f}" for name, ms in self.done)
        age = process_age_s()
        before = "" if age is None else f"; process start to listening {age * 1000:.0f} ms"
        return f"started in {total:.0f} ms ({steps} ms){before}"
