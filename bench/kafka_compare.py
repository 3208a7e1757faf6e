"""muster against Apache Kafka 4.4, every figure of issue #21 item 4 in one run.

The same clients on both brokers, the brokers alternating between runs (run 1
muster first, run 2 Kafka first, ...), a fresh broker process per section and
run, medians over ``--runs``; one table of muster/Kafka ratios against the
issue's targets at the end. Kafka is the single-node KRaft broker of
bench/common.start_kafka (tests/support/kafka.py: Maven's 4.4.0 jars, -Xmx768m,
SerialGC).

Group settings are the same on both brokers (GROUP_ALIKE):
group.initial.rebalance.delay.ms=0, offsets.topic.num.partitions=50, session
bounds 6 s .. 30 min (both brokers' defaults but the delay, written out so a
change of default on either side does not skew the figures); consumer-protocol
heartbeat 5 s / session 45 s are both brokers' defaults.

Durability: Kafka acknowledges before any fsync. Commits and produce/fetch run
muster twice, at its default (``muster.fsync=always``: every write fsynced
before it is answered) and at Kafka's durability (``muster.fsync=never``), and
their targets are held at the same durability on both brokers (the 'never'
rows). Group formation and rebalances run muster at its default, the TLS
section at ``muster.fsync=never``.

Sections (``--only`` picks some):
  commits     sync commits/s of one confluent-kafka and one kafka-python consumer
              (bench/groups.py's loops), ``--commit-seconds`` each; broker CPU per
              commit
  groups      classic group formation of 20 on a 20-partition topic, rebalance on
              join (6th member) and on leave (close() of one of 6) -- groups.py's
              scenarios, confluent-kafka, session 10 s / heartbeat 1 s
  cp          consumer protocol (KIP-848): formation of 20, and scaling
              1 -> 20 -> 1 (``--cp-step`` members per step), with partitions
              revoked from staying members vs really moved (consumer_protocol.py)
  data        produce 100 B and 1 KiB with acks=all, then fetch them
              (produce_fetch.py's loops, ``--messages`` of 1 KiB, 10x as many
              of 100 B); MB/s, broker CPU ms per MB; RSS idle (2 s after start)
              and the peak RSS by the end of the load (VmHWM); start-up from
              spawn to the first ApiVersions answer (fresh directory; Kafka's
              `kafka-storage format` is done before and not counted)
  restart     ``--offsets`` committed offsets (groups of 1,000 partitions: 10
              topics x 100 partitions, one OffsetCommit each, over the wire on
              both), then kill -9 and time spawn -> every one of 20 sampled
              groups answers its committed offset (OffsetFetch); the data is
              prepared once per broker, each run is one kill -9 + restart
  tls         produce 1 KiB acks=all on SASL_SSL (SCRAM-SHA-512, TLS) vs
              PLAINTEXT of the same broker; cost = SASL_SSL MB/s / PLAINTEXT MB/s

    PYTHONPATH=$PWD/src:$PWD .venv/bin/python bench/kafka_compare.py            # full
    PYTHONPATH=$PWD/src:$PWD .venv/bin/python bench/kafka_compare.py --smoke    # minutes
    ... bench/kafka_compare.py --only commits,groups --runs 3 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import common
import consumer_protocol as cp
import groups
import produce_fetch as pf
from rich.markup import escape
from rich.table import Table
from startup import fetch_offset  # raw OffsetFetch v8: (error, offset)

from reliability.campaign_support import RawClient

SECTIONS = ("commits", "groups", "cp", "data", "restart", "tls")
GROUP_ALIKE = {
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "50",
    "group.min.session.timeout.ms": "6000",
    "group.max.session.timeout.ms": "1800000",
}
NEVER = {"muster.fsync": "never"}
RESTART_TOPICS, RESTART_PARTITIONS = 10, 100  # a group commits 1,000 partitions
PROBES = 20
SCRAM_USER, SCRAM_PASSWORD = "bench", "bench-secret"

Values = dict[str, dict[str, list[float]]]  # broker -> figure -> samples


def say(msg: str) -> None:
    common.console.print(f"[dim]{escape(msg)}[/dim]")


# ---------------------------------------------------------------------------
# brokers


def start(name: str, settings: dict[str, str] | None = None) -> common.Broker:
    """muster (its defaults + settings) or Kafka (GROUP_ALIKE + settings)."""
    settings = {**GROUP_ALIKE, **(settings or {})}
    if name == "kafka":
        return common.start_kafka(settings)
    return common.start_muster(settings)


def rss_kb(pid: int, field: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return float(line.split()[1])
    return 0.0


def api_versions(port: int) -> bool:
    try:
        raw = RawClient(port, timeout=2)
    except OSError:
        return False
    try:
        return int(raw.call(18, 0, {}).error_code) == 0
    except (OSError, ConnectionError):
        return False
    finally:
        raw.close()


def first_answer(b: common.Broker, t0: float, timeout: float = 120) -> float:
    """Seconds from t0 (spawn) until the broker answers ApiVersions."""
    while time.monotonic() - t0 < timeout:
        if api_versions(b.port):
            return time.monotonic() - t0
        if not b.alive():
            raise RuntimeError(f"{b.name} exited; log:\n{b.log_tail(15)}")
        time.sleep(0.01)
    raise RuntimeError(f"{b.name}: no ApiVersions answer in {timeout:.0f} s")


def timed_start(name: str, settings: dict[str, str] | None = None) -> tuple[common.Broker, float]:
    """A broker on a fresh directory and the seconds from spawn to its first
    answer. Kafka's storage is formatted before the clock starts."""
    settings = {**GROUP_ALIKE, **(settings or {})}
    if name == "kafka":
        from tests.support.kafka import KafkaProcess

        data_dir = common.temp_data_dir("kafka-bench-")
        ref = KafkaProcess(data_dir, settings)
        b = common.Broker(
            name="kafka",
            argv=common.kafka_argv(ref.command()),  # formats the storage
            host="127.0.0.1",
            port=ref.port,
            log_path=common.RESULTS_DIR / "logs" / f"kafka-{ref.port}.log",
            data_dir=data_dir,
        )
    else:
        port = common.free_port()
        data_dir = common.temp_data_dir("muster-bench-")
        b = common.Broker(
            name=name,
            argv=common.muster_argv(data_dir, "127.0.0.1", port, settings),
            host="127.0.0.1",
            port=port,
            log_path=common.RESULTS_DIR / "logs" / f"muster-{port}.log",
            data_dir=data_dir,
        )
    t0 = time.monotonic()
    b.start(120)
    return b, first_answer(b, t0)


# ---------------------------------------------------------------------------
# sections: each runs against fresh brokers and adds samples to values[label]


JAVA_SRC = Path(__file__).resolve().parent / "java" / "SyncCommits.java"


def java_committer_command() -> list[str] | None:
    """`java ... SyncCommits`, compiled against Kafka's jars into the project's
    cache on first use (tests/support/java.py); None without a JDK."""
    from tests.support.java import compiled
    from tests.support.kafka import LOG4J, classpath

    if shutil.which("javac") is None or shutil.which("java") is None:
        return None
    out = compiled(JAVA_SRC.parent)
    return [
        "java",
        "-Xmx256m",
        f"-Dlog4j2.configurationFile={LOG4J}",
        "-Dkafka.log.file=/dev/null",
        "-cp",
        f"{classpath()}:{out}",
        "SyncCommits",
    ]


def java_committer(bootstrap: str, topic: str, seconds: float, warmup: float) -> tuple[int, float]:
    cmd = java_committer_command()
    if cmd is None:
        raise RuntimeError("no JDK (javac/java) on PATH")
    done = subprocess.run(
        [*cmd, bootstrap, topic, str(seconds), str(warmup)],
        capture_output=True,
        text=True,
        timeout=seconds + warmup + 120,
        check=False,
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"SyncCommits exited {done.returncode}: {done.stderr[-1500:]}")
    n, elapsed = lines[-1].split()
    return int(n), float(elapsed)


def sec_commits(name: str, label: str, args: argparse.Namespace, out: Values) -> None:
    with start(name, NEVER if label == "muster-never" else None) as b:
        topic = f"kc-commit-{uuid.uuid4().hex[:6]}"
        common.create_topic(b.bootstrap, topic, 1)
        s, w = args.commit_seconds, args.warmup
        loops: list[tuple[str, Callable[[float], tuple[int, float]]]] = [
            ("commits_ck", lambda t: groups.confluent_committer(b.bootstrap, topic, t)),
            ("commits_kp", lambda t: groups.kafka_python_committer(b.bootstrap, topic, t)),
        ]
        for key, fn in loops:
            # the same loop untimed first: a JVM broker compiles its hot path, and a
            # fresh Kafka answers NOT_COORDINATOR while __consumer_offsets is loading
            for attempt in range(10):
                try:
                    groups.run_in_thread(lambda fn=fn: fn(max(w, 0.2)), w + 90)
                    break
                except Exception as e:
                    if attempt == 9:
                        raise
                    say(f"  {label} {key} warm-up: {e}; again")
                    time.sleep(1)
            cpu0 = common.cpu_seconds(b.proc.pid)  # type: ignore[union-attr]
            n, el = groups.run_in_thread(lambda fn=fn: fn(s), s + 90)
            cpu_us = (common.cpu_seconds(b.proc.pid) - cpu0) / max(n, 1) * 1e6  # type: ignore[union-attr]
            add(out, label, key, n / el)
            add(out, label, key + "_cpu_us", cpu_us)
            say(f"  {label} {key}: {n / el:,.0f}/s, {cpu_us:,.0f} us broker CPU each")
        if args.java:
            n, el = java_committer(b.bootstrap, topic, s, max(w, 1.0))
            add(out, label, "commits_java", n / el)
            say(f"  {label} commits_java: {n / el:,.0f}/s")


def sec_groups(name: str, label: str, args: argparse.Namespace, out: Values) -> None:
    with start(name) as b:
        topic = f"kc-groups-{uuid.uuid4().hex[:6]}"
        common.create_topic(b.bootstrap, topic, groups.PARTITIONS)
        f20 = groups.formation(b.bootstrap, topic, 20, b.alive)
        add(out, label, "form20_s", f20)
        join_s, leave_s = groups.join_and_leave(b.bootstrap, topic, b.alive)
        add(out, label, "join_s", join_s)
        add(out, label, "leave_s", leave_s)
        say(f"  {label} formation of 20 {f20:.2f} s, join {join_s:.2f} s, leave {leave_s:.2f} s")
        # a join or leave is noticed at the members' next heartbeat (1 s apart), so
        # one sample is mostly the heartbeat's phase: take several per run, each
        # a new group of 5 on the same broker
        for _ in range(args.rebalances - 1):
            join_s, leave_s = groups.join_and_leave(b.bootstrap, topic, b.alive)
            add(out, label, "join_s", join_s)
            add(out, label, "leave_s", leave_s)
            say(f"  {label} join {join_s:.2f} s, leave {leave_s:.2f} s")


def sec_cp(name: str, label: str, args: argparse.Namespace, out: Values) -> None:
    setup = f"{name}-consumer"
    cp.BROKER_SETTINGS = dict(GROUP_ALIKE)
    got = cp.one_run(setup, 20, 0, {"formation"})
    add(out, label, "cp_form20_s", got["formation_s"])
    sc = cp.scaling_run(setup, 20, args.cp_step)
    for k in ("up_s", "down_s", "revoked", "moved"):
        add(out, label, f"cp_{k}", sc[k])
    say(
        f"  {label} consumer protocol: formation of 20 {got['formation_s']:.2f} s; "
        f"1->20 {sc['up_s']:.2f} s, 20->1 {sc['down_s']:.2f} s, "
        f"revoked {sc['revoked']:.0f} / moved {sc['moved']:.0f}"
    )


def sec_data(name: str, label: str, args: argparse.Namespace, out: Values) -> None:
    settings = NEVER if label == "muster-never" else None
    b, first = timed_start(name, settings)
    with b:
        pid = b.proc.pid  # type: ignore[union-attr]
        add(out, label, "start_s", first)
        time.sleep(2.0)
        add(out, label, "rss_idle_mb", rss_kb(pid) / 1024)
        if args.warmup > 0:  # untimed: a JVM broker compiles its produce/fetch paths
            topic = f"kc-warm-{uuid.uuid4().hex[:6]}"
            common.create_topic(b.bootstrap, topic, 1)
            n = max(1000, int(args.messages * args.warmup / 10))
            pf.produce(b.bootstrap, topic, 1024, n, "all")
            pf.fetch(b.bootstrap, topic, 1024, n)
        for size in (100, 1024):
            n = args.messages * (10 if size == 100 else 1)
            topic = f"kc-data-{size}-{uuid.uuid4().hex[:6]}"
            common.create_topic(b.bootstrap, topic, 1)
            mb = n * size / 1e6
            for kind in ("produce", "fetch"):
                cpu0 = common.cpu_seconds(pid)
                if kind == "produce":
                    secs = pf.produce(b.bootstrap, topic, size, n, "all")
                else:
                    secs = pf.fetch(b.bootstrap, topic, size, n)
                cpu = common.cpu_seconds(pid) - cpu0
                add(out, label, f"{kind}{size}_mbs", mb / secs)
                add(out, label, f"{kind}{size}_cpu_ms_per_mb", cpu * 1000 / mb)
                say(
                    f"  {label} {kind} {size} B: {mb / secs:.1f} MB/s, "
                    f"{cpu * 1000 / mb:.1f} ms broker CPU per MB"
                )
        add(out, label, "rss_load_mb", rss_kb(pid, "VmHWM") / 1024)
        say(
            f"  {label} start {first:.2f} s; RSS idle {out[label]['rss_idle_mb'][-1]:.0f} MB, "
            f"peak {out[label]['rss_load_mb'][-1]:.0f} MB"
        )


# --- restart after kill -9 ---------------------------------------------------


def expected_offset(g: int, t: int, p: int) -> int:
    return 1 + g * 7 + t * 1000 + p


def commit_offsets(port: int, topics: list[str], n_groups: int) -> None:
    raw = RawClient(port, timeout=120)
    try:
        # Kafka creates __consumer_offsets on the first FindCoordinator (a raw
        # OffsetCommit alone gets COORDINATOR_NOT_AVAILABLE forever)
        for _ in range(600):
            a = raw.call(10, 3, {"key": "kc-restart-0", "key_type": 0})
            if int(a.error_code) == 0:
                break
            time.sleep(0.1)
        else:
            raise RuntimeError(f"FindCoordinator: error {int(a.error_code)}")
        for g in range(n_groups):
            body = {
                "group_id": f"kc-restart-{g}",
                "generation_id_or_member_epoch": -1,
                "member_id": "",
                "group_instance_id": None,
                "topics": [
                    {
                        "name": topic,
                        "partitions": [
                            {
                                "partition_index": p,
                                "committed_offset": expected_offset(g, t, p),
                                "committed_leader_epoch": -1,
                                "committed_metadata": "",
                            }
                            for p in range(RESTART_PARTITIONS)
                        ],
                    }
                    for t, topic in enumerate(topics)
                ],
            }
            for _ in range(200):
                a = raw.call(8, 8, body)
                errors = {int(p.error_code) for t in a.topics for p in t.partitions}
                if errors == {0}:
                    break
                if errors - {14, 15, 16}:  # load in progress, not available, not coordinator
                    raise RuntimeError(f"OffsetCommit errors {errors}")
                time.sleep(0.1)
            else:
                raise RuntimeError(f"OffsetCommit kept failing: {errors}")
    finally:
        raw.close()


@dataclass
class Prepared:
    name: str
    argv: Callable[[], list[str]]
    port: int
    data_dir: Path
    topics: list[str]
    n_groups: int
    proc: subprocess.Popen | None = None


def prepare_restart(name: str, offsets: int) -> Prepared:
    """A broker holding `offsets` committed offsets, left running."""
    n_groups = max(1, offsets // (RESTART_TOPICS * RESTART_PARTITIONS))
    topics = [f"kc-restart-t{t}" for t in range(RESTART_TOPICS)]
    if name == "kafka":
        from tests.support.kafka import KafkaProcess

        data_dir = common.temp_data_dir("kafka-bench-restart-")
        ref = KafkaProcess(data_dir, dict(GROUP_ALIKE))
        ref.command()  # format once
        prep = Prepared(
            name, lambda: common.kafka_argv(ref.command()), ref.port, data_dir, topics, n_groups
        )
    else:
        data_dir = common.temp_data_dir("muster-bench-restart-")
        port = common.free_port()
        prep = Prepared(
            name,
            lambda: common.muster_argv(data_dir, "127.0.0.1", port, GROUP_ALIKE),
            port,
            data_dir,
            topics,
            n_groups,
        )
    spawn(prep)
    try:
        first_answer_port(prep)
        bootstrap = f"127.0.0.1:{prep.port}"
        for topic in topics:
            common.create_topic(bootstrap, topic, RESTART_PARTITIONS, timeout=120)
        t0 = time.monotonic()
        commit_offsets(prep.port, topics, n_groups)
    except BaseException:
        discard(prep)
        raise
    say(
        f"  {name}: {n_groups * RESTART_TOPICS * RESTART_PARTITIONS:,} offsets committed "
        f"in {time.monotonic() - t0:.1f} s"
    )
    return prep


def spawn(prep: Prepared) -> None:
    log = common.RESULTS_DIR / "logs" / f"{prep.name}-restart-{prep.port}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as f:
        prep.proc = subprocess.Popen(
            prep.argv(),
            stdin=subprocess.DEVNULL,
            stdout=f,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=common._pdeathsig,
        )


def first_answer_port(prep: Prepared, timeout: float = 120) -> None:
    t0 = time.monotonic()
    while not api_versions(prep.port):
        if prep.proc is not None and prep.proc.poll() is not None:
            raise RuntimeError(f"{prep.name} exited with {prep.proc.returncode}")
        if time.monotonic() - t0 > timeout:
            raise RuntimeError(f"{prep.name}: no answer in {timeout:.0f} s")
        time.sleep(0.05)


def kill9(prep: Prepared) -> None:
    if prep.proc is not None and prep.proc.poll() is None:
        os.kill(prep.proc.pid, signal.SIGKILL)
        prep.proc.wait(30)
    prep.proc = None


def probes(prep: Prepared) -> list[tuple[str, str, int, int]]:
    step = max(1, prep.n_groups // PROBES)
    out = []
    for i, g in enumerate(range(prep.n_groups - 1, -1, -step)):
        if i >= PROBES:
            break
        t, p = i % RESTART_TOPICS, (i * 37) % RESTART_PARTITIONS
        out.append((f"kc-restart-{g}", prep.topics[t], p, expected_offset(g, t, p)))
    return out


def timed_restart(prep: Prepared, timeout: float = 300) -> float:
    """kill -9, spawn, and the seconds until every probe reads its offset."""
    kill9(prep)
    want = probes(prep)
    t0 = time.monotonic()
    spawn(prep)
    pending = list(want)
    while pending:
        if time.monotonic() - t0 > timeout:
            raise RuntimeError(f"{prep.name}: {len(pending)} groups not served in {timeout:.0f} s")
        if prep.proc is not None and prep.proc.poll() is not None:
            raise RuntimeError(f"{prep.name} exited with {prep.proc.returncode} on restart")
        try:
            group, topic, part, offset = pending[0]
            err, got = fetch_offset(prep.port, group, topic, part, timeout=2)
        except (OSError, ConnectionError):
            time.sleep(0.01)
            continue
        if err == 0 and got == offset:
            pending.pop(0)
            continue
        if err not in (0, 14, 15, 16):
            raise RuntimeError(f"{prep.name}: OffsetFetch error {err}")
        if err == 0 and got != offset and got != -1:
            raise RuntimeError(f"{prep.name}: {group} read {got}, expected {offset}")
        time.sleep(0.01)
    return time.monotonic() - t0


def discard(prep: Prepared) -> None:
    kill9(prep)
    shutil.rmtree(prep.data_dir, ignore_errors=True)


# --- TLS ---------------------------------------------------------------------


def tls_brokers(name: str, certs: Path) -> tuple[common.Broker, dict[str, str]]:
    """A broker with a PLAINTEXT and a SASL_SSL (SCRAM-SHA-512) listener, the
    SCRAM user created; returns it and listener -> bootstrap."""
    if name != "kafka":
        import security

        return security.start(certs, [f"{k}={v}" for k, v in {**GROUP_ALIKE, **NEVER}.items()])
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    from tests.support.kafka import KafkaProcess

    data_dir = common.temp_data_dir("kafka-bench-tls-")
    ref = KafkaProcess(data_dir, dict(GROUP_ALIKE))
    plain, tls = ref.port, common.free_port()
    c = ref.controller_port
    ref.settings.update(
        {
            "listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_SSL://127.0.0.1:{tls},"
            f"CONTROLLER://127.0.0.1:{c}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_SSL://127.0.0.1:{tls}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,"
            "CONTROLLER:PLAINTEXT",
            "sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": (
                "org.apache.kafka.common.security.scram.ScramLoginModule required;"
            ),
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(certs / "broker.pem"),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(certs / "ca.pem"),
        }
    )
    b = common.Broker(
        name="kafka",
        argv=common.kafka_argv(ref.command()),
        host="127.0.0.1",
        port=plain,
        log_path=common.RESULTS_DIR / "logs" / f"kafka-tls-{plain}.log",
        data_dir=data_dir,
    ).start(120)
    common.wait_for_port("127.0.0.1", tls, 60, b.proc)
    admin = AdminClient({"bootstrap.servers": b.bootstrap, "logger": common.RDK_LOGGER})
    upsert = UserScramCredentialUpsertion(
        SCRAM_USER,
        ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096),
        SCRAM_PASSWORD.encode(),
    )
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(30)
    return b, {"PLAINTEXT": f"127.0.0.1:{plain}", "SASL_SSL": f"127.0.0.1:{tls}"}


def sec_tls(name: str, label: str, args: argparse.Namespace, out: Values, run: int) -> None:
    import security

    certs = Path(tempfile.mkdtemp(prefix="kc-certs-"))
    try:
        from muster.security.certs import make_certs

        make_certs(certs)
        b, boot = tls_brokers(name, certs)
        with b:
            n = args.messages
            listeners = ("PLAINTEXT", "SASL_SSL") if run % 2 == 0 else ("SASL_SSL", "PLAINTEXT")
            mbs: dict[str, float] = {}
            cpu_ms: dict[str, float] = {}
            for listener in listeners:
                conf = security.client_conf(listener, certs)
                topic = f"kc-tls-{uuid.uuid4().hex[:6]}"
                common.create_topic(b.bootstrap, topic, 1)
                secs = None
                for _ in range(3):  # SCRAM credentials reach Kafka's listener shortly after
                    try:
                        cpu0 = common.cpu_seconds(b.proc.pid)  # type: ignore[union-attr]
                        secs = pf.produce(boot[listener], topic, 1024, n, "all", conf)
                        cpu = common.cpu_seconds(b.proc.pid) - cpu0  # type: ignore[union-attr]
                        break
                    except Exception as e:
                        say(f"  {label} {listener}: {e}; retrying")
                        time.sleep(2)
                if secs is None:
                    raise RuntimeError(f"{label}: produce over {listener} failed")
                mbs[listener] = n * 1024 / 1e6 / secs
                cpu_ms[listener] = cpu * 1e3 / (n * 1024 / 1e6)
                add(out, label, f"tls_{listener.lower()}_mbs", mbs[listener])
            kept = mbs["SASL_SSL"] / mbs["PLAINTEXT"]
            # what TLS costs is what it adds per MB, CPU and time: the share kept
            # alone calls the same added cost dearer on a faster plaintext path
            added_cpu = cpu_ms["SASL_SSL"] - cpu_ms["PLAINTEXT"]
            added_s = 1e3 / mbs["SASL_SSL"] - 1e3 / mbs["PLAINTEXT"]
            add(out, label, "tls_kept", kept)
            add(out, label, "tls_added_cpu_ms_per_mb", added_cpu)
            add(out, label, "tls_added_ms_per_mb", added_s)
            say(
                f"  {label} produce 1 KiB: PLAINTEXT {mbs['PLAINTEXT']:.1f} MB/s, "
                f"SASL_SSL {mbs['SASL_SSL']:.1f} MB/s (keeps {kept:.2f}); TLS adds "
                f"{added_cpu:.2f} ms broker CPU and {added_s:.2f} ms per MB"
            )
    finally:
        shutil.rmtree(certs, ignore_errors=True)


# ---------------------------------------------------------------------------
# results


def add(out: Values, label: str, key: str, v: float) -> None:
    out.setdefault(label, {}).setdefault(key, []).append(v)


@dataclass(frozen=True)
class Row:
    label: str
    key: str
    unit: str
    higher_is_better: bool
    target: float | None  # on muster/Kafka, oriented: >= target when higher is better
    muster: str = "muster"  # which muster run: "muster" (fsync=always) or "muster-never"
    digits: int = 2


ROWS = (
    Row("sync commits/s, confluent-kafka, fsync=always", "commits_ck", "/s", True, None, digits=0),
    Row("sync commits/s, kafka-python, fsync=always", "commits_kp", "/s", True, None, digits=0),
    Row("sync commits/s, Java, fsync=always", "commits_java", "/s", True, None, digits=0),
    Row(
        "broker CPU per commit, ck, fsync=always", "commits_ck_cpu_us", "us", False, None, digits=0
    ),
    Row(
        "sync commits/s, confluent-kafka, fsync=never",
        "commits_ck",
        "/s",
        True,
        1.0,
        "muster-never",
        0,
    ),
    Row(
        "sync commits/s, kafka-python, fsync=never",
        "commits_kp",
        "/s",
        True,
        1.0,
        "muster-never",
        0,
    ),
    Row("sync commits/s, Java, fsync=never", "commits_java", "/s", True, 1.0, "muster-never", 0),
    Row(
        "broker CPU per commit, ck, fsync=never",
        "commits_ck_cpu_us",
        "us",
        False,
        None,
        "muster-never",
        0,
    ),
    Row("formation of 20, classic", "form20_s", "s", False, 1.0),
    Row("rebalance on join (5 -> 6)", "join_s", "s", False, 1.0),
    Row("rebalance on leave (6 -> 5)", "leave_s", "s", False, 1.0),
    Row("formation of 20, consumer protocol", "cp_form20_s", "s", False, 1.0),
    Row("scaling 1 -> 20, consumer protocol", "cp_up_s", "s", False, 1.0),
    Row("scaling 20 -> 1, consumer protocol", "cp_down_s", "s", False, 1.0),
    Row("partitions revoked from staying members", "cp_revoked", "", False, None, digits=0),
    Row("partitions moved away from them", "cp_moved", "", False, None, digits=0),
    Row("start-up to first answer", "start_s", "s", False, 1.0),
    Row("restart after kill -9 to groups served", "restart_s", "s", False, 1.0),
    Row("RSS idle", "rss_idle_mb", "MB", False, 1.0, digits=0),
    Row("RSS peak under produce/fetch load", "rss_load_mb", "MB", False, 1.0, digits=0),
    Row("produce 100 B acks=all, fsync=always", "produce100_mbs", "MB/s", True, None),
    Row("produce 1 KiB acks=all, fsync=always", "produce1024_mbs", "MB/s", True, None),
    Row("fetch 100 B, fsync=always", "fetch100_mbs", "MB/s", True, None),
    Row("fetch 1 KiB, fsync=always", "fetch1024_mbs", "MB/s", True, None),
    Row("produce 100 B acks=all, fsync=never", "produce100_mbs", "MB/s", True, 0.5, "muster-never"),
    Row(
        "produce 1 KiB acks=all, fsync=never", "produce1024_mbs", "MB/s", True, 0.5, "muster-never"
    ),
    Row("fetch 100 B, fsync=never", "fetch100_mbs", "MB/s", True, 0.5, "muster-never"),
    Row("fetch 1 KiB, fsync=never", "fetch1024_mbs", "MB/s", True, 0.5, "muster-never"),
    Row(
        "broker CPU per MB, produce 1 KiB (never)",
        "produce1024_cpu_ms_per_mb",
        "ms",
        False,
        None,
        "muster-never",
        1,
    ),
    Row(
        "broker CPU per MB, fetch 1 KiB (never)",
        "fetch1024_cpu_ms_per_mb",
        "ms",
        False,
        None,
        "muster-never",
        1,
    ),
    Row(
        "broker CPU per MB, produce 100 B (never)",
        "produce100_cpu_ms_per_mb",
        "ms",
        False,
        None,
        "muster-never",
        1,
    ),
    Row(
        "TLS: produce 1 KiB PLAINTEXT (never)",
        "tls_plaintext_mbs",
        "MB/s",
        True,
        None,
        "muster-never",
    ),
    Row(
        "TLS: produce 1 KiB SASL_SSL (never)",
        "tls_sasl_ssl_mbs",
        "MB/s",
        True,
        None,
        "muster-never",
    ),
    Row(
        "TLS: share of PLAINTEXT kept (SASL_SSL/PLAINTEXT)",
        "tls_kept",
        "",
        True,
        None,
        "muster-never",
    ),
    Row(
        "TLS: broker CPU it adds per MB",
        "tls_added_cpu_ms_per_mb",
        "ms",
        False,
        1.0,
        "muster-never",
    ),
    Row("TLS: time it adds per MB", "tls_added_ms_per_mb", "ms", False, 1.0, "muster-never"),
)


def summarize(values: Values) -> list[dict]:
    rows = []
    for r in ROWS:
        m = common.median(values.get(r.muster, {}).get(r.key, []))
        k = common.median(values.get("kafka", {}).get(r.key, []))
        if m is None and k is None:
            continue
        ratio = common.ratio(m, k)
        met = None
        if ratio is not None and r.target is not None:
            met = ratio >= r.target if r.higher_is_better else ratio <= 1 / r.target
        rows.append({**r.__dict__, "muster_value": m, "kafka_value": k, "ratio": ratio, "met": met})
    return rows


def print_summary(rows: list[dict], runs: int, upto: bool = False) -> None:
    of = f"up to {runs}" if upto else str(runs)
    t = Table(title=f"muster vs Apache Kafka 4.4, medians of {of} run(s)", title_justify="left")
    for h in ("figure", "muster", "Kafka", "muster/Kafka", "target", "met"):
        t.add_column(h, justify="left" if h == "figure" else "right")
    for r in rows:
        target = "-"
        if r["target"] is not None:
            bound = r["target"] if r["higher_is_better"] else 1 / r["target"]
            target = f"{'>=' if r['higher_is_better'] else '<='} {bound:.1f}"
        met = {None: "-", True: "[green]yes[/green]", False: "[red]no[/red]"}[r["met"]]
        unit = f" {r['unit']}" if r["unit"] else ""
        t.add_row(
            r["label"],
            common.fmt_num(r["muster_value"], r["digits"]) + unit,
            common.fmt_num(r["kafka_value"], r["digits"]) + unit,
            "-" if r["ratio"] is None else f"{r['ratio']:.2f}",
            target,
            met,
        )
    common.console.print(t)
    common.console.print(
        "muster/Kafka is the ratio of the values: for times, RSS and CPU lower is "
        "better (target <= 1.0); for rates higher is better. Rows without 'never' "
        "run muster at muster.fsync=always (Kafka never fsyncs before it answers); "
        "'never' rows run muster at muster.fsync=never, Kafka's durability."
    )


# the per-figure lines say() prints, read back by --from-log (a run cut short)
_NUM = r"([0-9][0-9,]*\.?[0-9]*)"
_SNUM = r"(-?[0-9][0-9,]*\.?[0-9]*)"
LOG_LINES = (
    (
        rf"(\S+) (commits_ck|commits_kp|commits_java): {_NUM}/s"
        rf"(?:, {_NUM} us broker CPU each)?",
        "commits",
    ),
    (rf"(\S+) formation of 20 {_NUM} s, join {_NUM} s, leave {_NUM} s", "groups"),
    (rf"(\S+) join {_NUM} s, leave {_NUM} s", "rebalance"),
    (
        rf"(\S+) consumer protocol: formation of 20 {_NUM} s; 1->20 {_NUM} s, 20->1 {_NUM} s, "
        rf"revoked {_NUM} / moved {_NUM}",
        "cp",
    ),
    (rf"(\S+) (produce|fetch) (100|1024) B: {_NUM} MB/s, {_NUM} ms broker CPU per MB", "data"),
    (rf"(\S+) start {_NUM} s; RSS idle {_NUM} MB, peak {_NUM} MB", "start"),
    (rf"(\S+) restart after kill -9: groups served in {_NUM} s", "restart"),
    (
        rf"(\S+) produce 1 KiB: PLAINTEXT {_NUM} MB/s, SASL_SSL {_NUM} MB/s \(keeps {_NUM}\)"
        rf"(?:; TLS adds {_SNUM} ms broker CPU and {_SNUM} ms per MB)?",
        "tls",
    ),
)


def values_from_log(text: str) -> Values:
    import re

    out: Values = {}
    for line in text.splitlines():
        for pattern, kind in LOG_LINES:
            m = re.match(r"\s*" + pattern + r"\s*$", line)
            if not m:
                continue
            g = [x.replace(",", "") if x else x for x in m.groups()]
            label, nums = g[0], [float(x) for x in g[1:] if x and x[0].isdigit()]
            if kind == "commits":
                add(out, label, g[1], float(g[2]))
                if g[3]:
                    add(out, label, g[1] + "_cpu_us", float(g[3]))
            elif kind == "groups":
                for key, v in zip(("form20_s", "join_s", "leave_s"), nums, strict=True):
                    add(out, label, key, v)
            elif kind == "rebalance":
                for key, v in zip(("join_s", "leave_s"), nums, strict=True):
                    add(out, label, key, v)
            elif kind == "cp":
                keys = ("cp_form20_s", "cp_up_s", "cp_down_s", "cp_revoked", "cp_moved")
                for key, v in zip(keys, nums, strict=True):
                    add(out, label, key, v)
            elif kind == "data":
                add(out, label, f"{g[1]}{g[2]}_mbs", float(g[3]))
                add(out, label, f"{g[1]}{g[2]}_cpu_ms_per_mb", float(g[4]))
            elif kind == "start":
                for key, v in zip(("start_s", "rss_idle_mb", "rss_load_mb"), nums, strict=True):
                    add(out, label, key, v)
            elif kind == "restart":
                add(out, label, "restart_s", nums[0])
            else:
                keys = ("tls_plaintext_mbs", "tls_sasl_ssl_mbs", "tls_kept")
                keys += ("tls_added_cpu_ms_per_mb", "tls_added_ms_per_mb")
                for key, v in zip(keys, [float(x) for x in g[1:] if x], strict=False):
                    add(out, label, key, v)
            break
    return out


# ---------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", default=",".join(SECTIONS), help="comma-separated sections")
    ap.add_argument("--commit-seconds", type=float, default=3.0)
    ap.add_argument("--messages", type=int, default=50_000, help="of 1 KiB (10x as many of 100 B)")
    ap.add_argument("--offsets", type=int, default=1_000_000, help="for restart after kill -9")
    ap.add_argument("--cp-step", type=int, default=1, help="members per scaling step")
    ap.add_argument(
        "--rebalances", type=int, default=5, help="join/leave samples per run and broker (5)"
    )
    ap.add_argument(
        "--warmup",
        type=float,
        default=1.0,
        help="seconds of untimed commits before each commit loop (and a produce/fetch "
        "warm-up of ~warmup/10 of --messages); 0 for none",
    )
    ap.add_argument(
        "--kafka-jvm",
        choices=("stock", "tests"),
        default="stock",
        help="stock: Kafka's own JVM options (kafka-server-start.sh: -Xmx1G -Xms1G, G1); "
        "tests: tests/support/kafka.py's (-Xmx768m, SerialGC, C1 only)",
    )
    ap.add_argument("--no-java", dest="java", action="store_false", help="skip the Java committer")
    ap.add_argument("--smoke", action="store_true", help="1 run, tiny sizes")
    ap.add_argument("--json", type=Path)
    ap.add_argument(
        "--from-log",
        type=Path,
        metavar="LOG",
        help="print the table from the per-figure lines of an earlier run's output "
        "(a run cut short), running nothing",
    )
    args = ap.parse_args(argv)
    if args.from_log:
        values = values_from_log(args.from_log.read_text(errors="replace"))
        runs = max((len(v) for b in values.values() for v in b.values()), default=0)
        print_summary(summarize(values), runs, upto=True)
        return 0
    if args.smoke:
        args.runs, args.commit_seconds, args.messages, args.offsets = 1, 1.0, 5_000, 10_000
        args.cp_step = max(args.cp_step, 5)
        args.rebalances = 1
    only = [s for s in args.only.split(",") if s]
    for s in only:
        if s not in SECTIONS:
            ap.error(f"unknown section {s!r} (known: {', '.join(SECTIONS)})")
    common.install_signal_handlers()
    common.KAFKA_JVM = common.KAFKA_STOCK_JVM if args.kafka_jvm == "stock" else None
    values: Values = {}
    failures: list[str] = []
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    load0 = os.getloadavg()

    def attempt(what: str, fn: Callable[[], None]) -> None:
        try:
            fn()
        except Exception as e:  # one failed figure does not end the run
            msg = f"{what}: {type(e).__name__}: {e}"
            failures.append(msg)
            common.console.print(f"[yellow]{escape(msg)}[/yellow]")

    prepared: dict[str, Prepared] = {}
    try:
        if "restart" in only:
            for name in ("muster", "kafka"):
                attempt(
                    f"{name} restart: prepare",
                    lambda name=name: prepared.__setitem__(
                        name, prepare_restart(name, args.offsets)
                    ),
                )
        for run in range(args.runs):
            order = ["muster", "kafka"] if run % 2 == 0 else ["kafka", "muster"]
            load = os.getloadavg()[0]
            say(f"run {run + 1}/{args.runs}: {' then '.join(order)} (load {load:.1f})")
            for section in only:
                for name in order:
                    labels = [name]
                    if section in ("data", "commits") and name == "muster":
                        labels = ["muster", "muster-never"]
                    if section == "tls" and name == "muster":
                        labels = ["muster-never"]
                    for label in labels:
                        what = f"run {run + 1} {label} {section}"
                        if section == "commits":
                            attempt(what, lambda n=name, lb=label: sec_commits(n, lb, args, values))
                        elif section == "groups":
                            attempt(what, lambda n=name, lb=label: sec_groups(n, lb, args, values))
                        elif section == "cp":
                            attempt(what, lambda n=name, lb=label: sec_cp(n, lb, args, values))
                        elif section == "data":
                            attempt(what, lambda n=name, lb=label: sec_data(n, lb, args, values))
                        elif section == "tls":
                            attempt(
                                what,
                                lambda n=name, lb=label, r=run: sec_tls(n, lb, args, values, r),
                            )
                        elif section == "restart" and name in prepared:

                            def restart(n: str = name) -> None:
                                s = timed_restart(prepared[n])
                                add(values, n, "restart_s", s)
                                say(f"  {n} restart after kill -9: groups served in {s:.2f} s")

                            attempt(what, restart)
    except (KeyboardInterrupt, SystemExit) as e:
        failures.append(f"interrupted ({type(e).__name__}): the table has the runs done so far")
    finally:
        for prep in prepared.values():
            discard(prep)
    rows = summarize(values)
    load1 = os.getloadavg()
    print_summary(rows, args.runs)
    common.console.print(
        f"started {started}; load average {load0[0]:.1f} at the start, {load1[0]:.1f} at the "
        f"end; {os.cpu_count()} CPUs; {platform.python_version()}; "
        f"offsets for restart: {args.offsets:,}; messages: {args.messages:,} x 1 KiB, "
        f"{args.messages * 10:,} x 100 B; Kafka JVM: {args.kafka_jvm}"
    )
    for f in failures:
        common.console.print(f"[red]failed: {escape(f)}[/red]")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "started": started,
                    "load": [load0, load1],
                    "args": {k: str(v) for k, v in vars(args).items()},
                    "values": values,
                    "summary": rows,
                    "failures": failures,
                },
                indent=1,
            )
        )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
