"""Run librdkafka 2.15.1's own integration tests against muster, one fresh broker per test.

See ../shared/conformance/librdkafka.md. Build the test runner first with
``conformance/build_librdkafka.sh`` (``make conformance`` does both).

    .venv/bin/python conformance/run.py                 # group + produce lists
    .venv/bin/python conformance/run.py --group         # §4a consumer-group/offset list
    .venv/bin/python conformance/run.py --produce       # §4b produce/fetch/offset list
    .venv/bin/python conformance/run.py --tests 0018,0030
    .venv/bin/python conformance/run.py --tests 0061:without   # only sub-tests named *without*
    .venv/bin/python conformance/run.py --noautocreate  # 0045 variants, 0107, 0111
    .venv/bin/python conformance/run.py --group --group-protocol consumer   # KIP-848 mode
    .venv/bin/python conformance/run.py --share         # share-consumer tests (KIP-932)
    .venv/bin/python conformance/run.py --share --peer kafka   # the same on Kafka 4.4

For each test number: start ``python -m muster serve`` on a fresh data dir and a free
port, write ``test.conf``, run ``TESTS=<n> ./test-runner -p1 -L`` (with
LD_LIBRARY_PATH=../src:../src-cpp and TEST_KAFKA_VERSION=3.1.0) under a per-test
timeout, stop the broker, and collect pass/fail plus the first ``### Test ... failed
at`` line. Logs go to conformance/results/<time>/. The last line printed is
``N passed, N failed``; the exit code is 0 only when nothing failed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "bench"))

import common  # noqa: E402  (bench/common.py: ports, broker processes, rich console)
from rich.markup import escape  # noqa: E402
from rich.table import Table  # noqa: E402

# fmt: off
# §4a: consumer-group / offset tests, plus two that talk to a broker and exist since
# 2.0.2's list was made or were missed: 0069 (partitions added under a group) and 0140
# (C++ commit metadata).
GROUP_TESTS = [
    "0018", "0019", "0020", "0026", "0029", "0030", "0033", "0040", "0042", "0045",
    "0050", "0051", "0056", "0060", "0061", "0064", "0069", "0083", "0084", "0089",
    "0091", "0093", "0099", "0102", "0113", "0118", "0122", "0130", "0132", "0137",
    "0140",
]
# §4b: plain produce / fetch / offset-lookup tests, including the sockem ones that work
# against an external broker, and the transaction tests 0103 and 0129.
PRODUCE_TESTS = [
    "0001", "0002", "0003", "0005", "0007", "0008", "0011", "0012", "0013", "0014",
    "0015", "0016", "0017", "0021", "0022", "0031", "0034", "0035", "0036", "0038",
    "0039", "0041", "0044", "0048", "0053", "0054", "0055", "0057", "0059", "0063",
    "0065", "0067", "0070", "0073", "0082", "0085", "0086", "0090", "0092", "0110",
    "0112", "0114", "0123", "0125",
    "0049", "0068", "0075", "0076", "0088", "0094",
    "0103", "0129",
]
# Share-consumer tests (KIP-932) that talk to a broker. 0182, 0183 and 0186 run
# on librdkafka's mock cluster only (TEST_F_LOCAL), as do the *_local variants
# of 0173, 0176, 0178, 0179, 0180 and 0184: `-L` leaves them out.
SHARE_TESTS = [
    "0170", "0171", "0172", "0173", "0174", "0175", "0176", "0177", "0178", "0179",
    "0180", "0181", "0184", "0185",
]
# fmt: on
# They need a broker that says it is 4.2 or later (TEST_BRKVER(4, 2, 0, 0)).
SHARE_KAFKA_VERSION = "4.4.0"
# librdkafka's own test clusters for 4.2+ (tests/cluster_testing.py) let a
# group lock records for 1 s: 0173 and 0176 set share.record.lock.duration.ms
# to 3000, under Kafka's default floor of 15000.
SHARE_SETTINGS = {"group.share.min.record.lock.duration.ms": "1000"}


def is_share_test(test: str) -> bool:
    return "0170" <= test <= "0186"


# Tests of the 'noautocreate' scenario: run with -s noautocreate against a broker with
# auto.create.topics.enable=false (selecting 0045 then runs only its noautocreate variants).
NOAUTOCREATE_TESTS = ["0045", "0107", "0111"]

# The librdkafka test framework's default scenario is Kafka with these settings
# (tests/scenarios/default.json); replication factor is 1 on a single broker.
MUSTER_SETTINGS = {
    "group.initial.rebalance.delay.ms": "0",
    "auto.create.topics.enable": "true",
    "num.partitions": "4",
}

# With group.protocol=consumer the suite drops its consumers' session.timeout.ms
# (6 s in the tests that time members out, e.g. 0113 t_max): the session is the
# broker's. Kafka's 45 s default would outlast those tests' 30 s budgets.
CONSUMER_PROTOCOL_SETTINGS = {"group.consumer.session.timeout.ms": "6000"}

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]|\x1b\(B")
SUMMARY_ROW = re.compile(r"^\|\s*(\d{4}_\S+)\s*\|\s*([A-Z][A-Z ]*?)\s*\|\s*([\d.]+)s\s*\|\s*(.*)$")
FAILED_AT = re.compile(r'^### Test "(.*?)" failed at (.*?) ###\s*$')
STATE_LINE = re.compile(r"^=+ Test (\S+) (PASSED|FAILED|SKIPPED) =+")
# a sub-test verdict: "[0018_cgrp_term / 10.4s] [ do_test:194: with_queue=false: PASS (10.49s) ]"
SUB_PASS = re.compile(r"\[ .+: PASS \([\d.]+s\) \]\s*$")


@dataclass(frozen=True)
class PlanItem:
    test: str
    scenario: str | None = None
    subtests: str | None = None  # SUBTESTS filter
    settings: tuple[tuple[str, str], ...] = ()  # broker settings for this item only


def parse_test_item(item: str) -> PlanItem:
    """``NNNN[:SUBSTR][@KEY=VALUE[;KEY=VALUE...]]`` from --tests."""
    head, _, extra = item.partition("@")
    num, _, sub = head.partition(":")
    settings = tuple(
        (k.strip(), v.strip())
        for k, _, v in (kv.partition("=") for kv in extra.split(";") if kv.strip())
    )
    return PlanItem(num.zfill(4), None, sub or None, settings)


@dataclass
class Result:
    test: str
    status: str = "failed"  # passed | failed | skipped
    rc: int | None = None
    seconds: float = 0.0
    entries: dict[str, str] = field(default_factory=dict)  # runner test name -> state
    failure: str = ""  # first '### Test ... failed at' line and the line after it
    note: str = ""
    log: str = ""
    label: str = ""  # the plan item as printed: number, sub-test filter, settings
    broker_failed: bool = False  # the broker did not start or died during the test
    earlier_failures: list[str] = field(default_factory=list)  # one per failed attempt
    sub_passed: int = 0  # sub-tests that printed PASS (the test may still skip a later one)


def default_build_dir() -> Path:
    return Path(os.environ.get("BUILD_DIR", HERE / ".build")) / "librdkafka-2.15.1"


def parse_output(text: str, res: Result) -> None:
    lines = [ANSI.sub("", ln) for ln in text.splitlines()]
    for i, ln in enumerate(lines):
        if SUB_PASS.search(ln):
            res.sub_passed += 1
        m = SUMMARY_ROW.match(ln.strip())
        if m and m.group(1) != "<MAIN>":
            res.entries[m.group(1)] = m.group(2)
            continue
        m = STATE_LINE.match(ln.strip())
        if m:
            res.entries.setdefault(m.group(1), m.group(2))
            continue
        if not res.failure:
            m = FAILED_AT.match(ln.strip())
            if m:
                name, where = m.group(1), m.group(2)
                where = re.sub(r" at \w{3} \w{3} +\d+ [\d:]+ \d{4}:?$", "", where)
                msg = []
                for nxt in lines[i + 1 : i + 4]:
                    nxt = nxt.strip()
                    if not nxt or nxt.startswith(("[", "###", "%")):
                        break
                    msg.append(nxt)
                res.failure = f"{name} at {where}: {' | '.join(msg)}"
                entry = name.split(" (", 1)[0]
                if re.match(r"^\d{4}_", entry):
                    res.entries.setdefault(entry, "FAILED")


def classify(res: Result, timed_out: bool) -> None:
    states = set(res.entries.values())
    if timed_out:
        res.status, res.note = "failed", res.note or "timeout"
    elif res.rc == 0 and "FAILED" not in states and "RUNNING" not in states:
        if states and states <= {"SKIPPED"} and res.sub_passed:
            # e.g. 0018 over --sasl-ssl: its broker sub-tests pass, its mock-cluster
            # one skips itself ("Mock cluster does not support SSL/SASL"), and a
            # skip marks the whole test SKIPPED
            res.status = "passed"
            res.note = res.note or f"{res.sub_passed} sub-test(s) passed, the rest skipped"
        elif states and states <= {"SKIPPED"}:
            res.status = "skipped"
        elif not states:
            res.status, res.note = "skipped", "no test selected"
        else:
            res.status = "passed"
    else:
        res.status = "failed"
        if res.rc is not None and (res.rc < 0 or res.rc > 128):
            signum = -res.rc if res.rc < 0 else res.rc - 128
            with contextlib.suppress(ValueError):
                res.note = res.note or f"runner ended by {signal.Signals(signum).name}"


def kafka_argv(port: int, data_dir: Path, settings: dict[str, str]) -> list[str]:
    """Apache Kafka 4.4 (tests/support/kafka.py: single-node KRaft from Maven's
    jars) on `port`, its storage formatted in `data_dir`."""
    sys.path.insert(0, str(REPO))
    from tests.support.kafka import KafkaProcess

    kafka = KafkaProcess(data_dir, settings)
    kafka.port = port
    return kafka.command()


def broker_argv(
    args: argparse.Namespace, port: int, data_dir: Path, extra_settings: dict[str, str]
) -> list[str]:
    if args.peer == "tansu":
        return common.tansu_argv("127.0.0.1", port)
    if args.peer == "kafka":  # muster's settings are Kafka's names
        settings = {**MUSTER_SETTINGS, **extra_settings}
        settings.update(dict(kv.split("=", 1) for kv in args.set))
        return kafka_argv(port, data_dir, settings)
    if args.broker_cmd:
        cmd = args.broker_cmd.format(port=port, data_dir=data_dir, host="127.0.0.1")
        return shlex.split(cmd)
    settings = dict(MUSTER_SETTINGS)
    if args.group_protocol == "consumer":
        settings.update(CONSUMER_PROTOCOL_SETTINGS)
    settings.update(extra_settings)
    if args.sasl_ssl:
        settings.update(sasl_ssl_settings(args.certs, port))
    settings.update(dict(kv.split("=", 1) for kv in args.set))
    argv = common.muster_argv(data_dir, "127.0.0.1", port, settings, args.python)
    if args.sasl_ssl:  # the one listener is SASL_SSL (`listeners`), not --listen's PLAINTEXT
        i = argv.index("--listen")
        del argv[i : i + 2]
    return argv


# --sasl-ssl: the broker's only listener is SASL_SSL; the JAAS admin creates the
# SCRAM-SHA-512 user the tests connect as (test.conf), over the wire.
SASL_ADMIN, SASL_ADMIN_PW = "admin", "admin-secret"
SCRAM_USER, SCRAM_PW = "conformance", "conformance-secret"


def sasl_ssl_settings(certs: Path, port: int) -> dict[str, str]:
    jaas = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'user_{SASL_ADMIN}="{SASL_ADMIN_PW}";'
    )
    return {
        "listeners": f"SASL_SSL://127.0.0.1:{port}",
        "ssl.keystore.location": str(certs / "broker.pem"),
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": jaas,
    }


def sasl_ssl_client_conf(certs: Path) -> list[str]:
    return [
        "security.protocol=SASL_SSL",
        "sasl.mechanism=SCRAM-SHA-512",
        f"sasl.username={SCRAM_USER}",
        f"sasl.password={SCRAM_PW}",
        f"ssl.ca.location={certs / 'ca.pem'}",
    ]


def add_scram_user(certs: Path, port: int) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient(
        {
            "bootstrap.servers": f"127.0.0.1:{port}",
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "PLAIN",
            "sasl.username": SASL_ADMIN,
            "sasl.password": SASL_ADMIN_PW,
            "ssl.ca.location": str(certs / "ca.pem"),
            "logger": common.RDK_LOGGER,
        }
    )
    upsert = UserScramCredentialUpsertion(
        SCRAM_USER, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), SCRAM_PW.encode()
    )
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(30)


# test-runner processes in flight: an interrupt kills them (worker threads never see it)
RUNNING: set[subprocess.Popen[bytes]] = set()


def run_one(
    args: argparse.Namespace, item: PlanItem, tests_dir: Path, out: Path, attempt: int = 1
) -> Result:
    test, scenario = item.test, item.scenario
    subtests = item.subtests or args.subtests
    res = Result(test=test)
    port = common.free_port()
    data_dir = Path(tempfile.mkdtemp(prefix=f"muster-conf-{test}-"))
    suffix = (
        (f"-{scenario}" if scenario else "")
        + (f"-{re.sub(r'[^A-Za-z0-9_]', '_', subtests)}" if subtests else "")
        + (f".attempt{attempt}" if attempt > 1 else "")
    )
    log_path = out / f"{test}{suffix}.log"
    res.log = str(log_path)
    extra = {"auto.create.topics.enable": "false"} if scenario == "noautocreate" else {}
    if is_share_test(test):
        extra.update(SHARE_SETTINGS)
    extra.update(item.settings)
    broker = common.Broker(
        name=args.peer or "muster",
        argv=broker_argv(args, port, data_dir, extra),
        host="127.0.0.1",
        port=port,
        log_path=out / f"{test}{suffix}.broker.log",
        data_dir=data_dir,
    )
    unset = ("CLUSTER_ID", "LISTENER_URL", "ADVERTISED_LISTENER_URL", "STORAGE_ENGINE")
    t0 = time.monotonic()
    try:
        broker.start(timeout=args.broker_start_timeout, unset=unset)
        if args.sasl_ssl:
            add_scram_user(args.certs, port)
    except Exception as e:  # broker did not come up: the test fails, the run goes on
        res.status, res.note, res.broker_failed = "failed", "broker did not start", True
        res.failure = str(e).splitlines()[0]
        return res

    # One conf file per test in this run's log directory (RDKAFKA_TEST_CONF), never the
    # shared tests/test.conf: two runs at the same time must not see each other's port.
    conf = out / f"{test}{suffix}.test.conf"
    conf.write_text(
        f"bootstrap.servers=127.0.0.1:{port}\n"
        "broker.address.family=v4\n"
        + "".join(f"{kv}\n" for kv in args.client_conf)
        + "".join(f"{kv}\n" for kv in (sasl_ssl_client_conf(args.certs) if args.sasl_ssl else []))
    )
    env = dict(os.environ)
    env.update(
        {
            "TESTS": test,
            "LD_LIBRARY_PATH": "../src:../src-cpp",
            "TEST_KAFKA_VERSION": args.kafka_version
            or (SHARE_KAFKA_VERSION if is_share_test(test) else "3.1.0"),
            "RDKAFKA_TEST_CONF": str(conf),
        }
    )
    for k in (
        "KAFKA_PATH",
        "BROKERS",
        "ZK_ADDRESS",
        "TESTS_SKIP",
        "SUBTESTS",
        "TEST_CONSUMER_GROUP_PROTOCOL",
    ):
        env.pop(k, None)
    # The suite's own switch: every consumer it creates gets group.protocol=<this>, and
    # tests that mean only one protocol skip themselves or take their other branch.
    if args.group_protocol != "classic":
        env["TEST_CONSUMER_GROUP_PROTOCOL"] = args.group_protocol
    if subtests:
        env["SUBTESTS"] = subtests
    cmd = ["./test-runner", "-p1", "-L"]
    if scenario:
        cmd += ["-s", scenario]
    timed_out = False
    with open(log_path, "wb") as logf:
        proc = subprocess.Popen(
            cmd,
            cwd=tests_dir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=logf,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        RUNNING.add(proc)
        try:
            res.rc = proc.wait(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            res.rc = proc.wait()
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            broker.stop()
            raise
        finally:
            RUNNING.discard(proc)
    res.seconds = time.monotonic() - t0
    broker_alive = broker.alive()
    broker_rc = broker.stop()
    parse_output(log_path.read_text(errors="replace"), res)
    if not broker_alive:
        res.note = f"broker exited (rc {broker_rc}) during the test"
        res.broker_failed = True
    classify(res, timed_out)
    if not broker_alive and res.status == "passed":
        res.status = "failed"
    return res


def print_table(results: list[Result], group_protocol: str) -> None:
    t = Table(
        title=f"librdkafka 2.15.1 integration tests (group.protocol={group_protocol})",
        title_justify="left",
    )
    t.add_column("test", max_width=36, overflow="fold")
    t.add_column("result")
    t.add_column("time", justify="right")
    t.add_column("rc", justify="right")
    t.add_column("first failure / note", overflow="fold")
    colour = {"passed": "green", "failed": "red", "skipped": "yellow"}
    for r in results:
        names = ", ".join(
            n if s in ("PASSED", "FAILED") else f"{n} ({s.lower()})" for n, s in r.entries.items()
        )
        detail = r.failure or r.note
        if r.failure and r.note:
            detail = f"{r.note}: {r.failure}"
        if r.earlier_failures:
            tries = "; ".join(r.earlier_failures)
            detail = f"{detail}; " if detail else ""
            attempts = len(r.earlier_failures) + 1
            if r.status == "passed":
                detail += f"passed on attempt {attempts} after: {tries}"
            else:
                detail += f"failed all {attempts} attempts; the earlier ones: {tries}"
        if r.label and r.label != r.test:  # a sub-test filter or settings: say which
            names = r.label + (f": {names}" if names else "")
        t.add_row(
            escape(names or r.test),
            f"[{colour[r.status]}]{r.status}[/]",
            f"{r.seconds:.0f}s",
            "-" if r.rc is None else str(r.rc),
            escape(detail),
        )
    common.console.print(t)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--group", action="store_true", help="the §4a group/offset list")
    ap.add_argument("--produce", action="store_true", help="the §4b produce/fetch list")
    ap.add_argument(
        "--share", action="store_true", help="the share-consumer list (KIP-932: 0170-0185)"
    )
    ap.add_argument(
        "--noautocreate",
        action="store_true",
        help="the noautocreate scenario (auto.create.topics.enable=false)",
    )
    ap.add_argument(
        "--tests",
        help="comma-separated test numbers, each optionally NNNN:SUBSTR to run only the "
        "sub-tests whose name contains SUBSTR, and @KEY=VALUE[;KEY=VALUE] for broker "
        "settings of that item only (overrides the lists)",
    )
    ap.add_argument("--timeout", type=float, default=600, help="seconds per test (600)")
    ap.add_argument(
        "--jobs", type=int, default=1, help="tests run side by side, each on its own broker (1)"
    )
    ap.add_argument(
        "--retries",
        type=int,
        default=0,
        help="re-run a failed test up to N more times, each on a fresh broker (0); a test "
        "whose broker died is never re-run, and every retry is listed in the table",
    )
    ap.add_argument(
        "--build-dir",
        type=Path,
        default=None,
        help="librdkafka source tree (default conformance/.build/librdkafka-2.15.1)",
    )
    ap.add_argument(
        "--out", type=Path, default=None, help="log directory (default conformance/results/<time>)"
    )
    ap.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="extra muster --set option"
    )
    ap.add_argument(
        "--client-conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra line for test.conf (e.g. debug=cgrp,protocol)",
    )
    ap.add_argument(
        "--sasl-ssl",
        action="store_true",
        help="the broker listens on SASL_SSL only; tests connect with SCRAM-SHA-512 over TLS",
    )
    ap.add_argument("--subtests", help="SUBTESTS filter passed to the runner (all tests)")
    ap.add_argument(
        "--kafka-version",
        default=None,
        help="TEST_KAFKA_VERSION (3.1.0; 4.4.0 for the share-consumer tests)",
    )
    ap.add_argument(
        "--group-protocol",
        choices=["classic", "consumer"],
        default="classic",
        help="consumer group protocol of every test consumer (TEST_CONSUMER_GROUP_PROTOCOL); "
        "'consumer' is KIP-848 (classic)",
    )
    ap.add_argument("--python", default=sys.executable, help=argparse.SUPPRESS)
    ap.add_argument("--broker-start-timeout", type=float, default=60, help=argparse.SUPPRESS)
    # Hidden: run against another broker to check the harness itself.
    ap.add_argument(
        "--peer",
        choices=["tansu", "kafka"],
        help="run against another broker: kafka is Apache Kafka 4.4 (tests/support/kafka.py)",
    )
    ap.add_argument("--broker-cmd", help=argparse.SUPPRESS)  # {port} {data_dir} {host}
    args = ap.parse_args(argv)

    build = (args.build_dir or default_build_dir()).resolve()
    tests_dir = build / "tests"
    runner = tests_dir / "test-runner"
    if not os.access(runner, os.X_OK):
        common.console.print(f"[red]{runner} not found: run conformance/build_librdkafka.sh[/]")
        print("0 passed, 1 failed")
        return 2

    plan: list[PlanItem] = []
    if args.tests:
        plan += [parse_test_item(t.strip()) for t in args.tests.split(",") if t.strip()]
    else:
        only_share = args.share and not (args.group or args.produce or args.noautocreate)
        if args.group or not (args.produce or args.noautocreate or only_share):
            plan += [PlanItem(t) for t in GROUP_TESTS]
        if args.produce or not (args.group or args.noautocreate or only_share):
            plan += [PlanItem(t) for t in PRODUCE_TESTS]
        if args.share:
            plan += [PlanItem(t) for t in SHARE_TESTS]
    if args.noautocreate:
        plan += [PlanItem(t, "noautocreate") for t in NOAUTOCREATE_TESTS]

    stamp = time.strftime("%Y%m%dT%H%M%S")
    out = (args.out or HERE / "results" / stamp).resolve()
    out.mkdir(parents=True, exist_ok=True)
    if args.sasl_ssl:
        sys.path.insert(0, str(REPO / "src"))
        from muster.security.certs import make_certs

        args.certs = make_certs(out / "certs")
    common.install_signal_handlers()
    who = args.peer or (args.broker_cmd and "custom broker") or "muster"
    common.console.print(
        escape(
            f"running {len(plan)} test(s) against {who}, group.protocol="
            f"{args.group_protocol}; logs in {out}"
        )
    )

    def run_item(i: int, item: PlanItem) -> Result:
        label = (
            item.test
            + (f" ({item.scenario})" if item.scenario else "")
            + (f" (sub-tests *{item.subtests}*)" if item.subtests else "")
            + "".join(f" ({k}={v})" for k, v in item.settings)
        )
        r = run_one(args, item, tests_dir, out)
        earlier: list[str] = []
        # Only a test whose broker stayed up is re-run: a broker that died is a bug in
        # muster, never a timing race in the test.
        while r.status == "failed" and not r.broker_failed and len(earlier) < args.retries:
            earlier.append(r.failure or r.note or f"rc {r.rc}")
            common.console.print(
                escape(f"[{i}/{len(plan)}] {label} ... ")
                + f"[red]failed[/] ({r.seconds:.0f}s), again"
            )
            r = run_one(args, item, tests_dir, out, len(earlier) + 1)
        r.earlier_failures = earlier
        r.label = label
        col = {"passed": "green", "failed": "red", "skipped": "yellow"}[r.status]
        common.console.print(
            escape(f"[{i}/{len(plan)}] {label} ... ")
            + f"[{col}]{r.status}[/] ({r.seconds:.0f}s)"
            + (f" {escape(r.note)}" if r.note else "")
        )
        return r

    results: list[Result] = []
    interrupted = False
    # Each test has its own broker, port, data directory and conf file, so --jobs runs
    # several side by side; the tests wait far more than they compute.
    pool = ThreadPoolExecutor(max_workers=max(args.jobs, 1))
    futures = [pool.submit(run_item, i, item) for i, item in enumerate(plan, 1)]
    try:
        for f in futures:
            results.append(f.result())
    except KeyboardInterrupt:
        interrupted = True
        for f in futures:
            f.cancel()
        for proc in list(RUNNING):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        common.console.print("[red]interrupted[/]")
    finally:
        common.stop_all()
        pool.shutdown(wait=not interrupted, cancel_futures=True)

    print_table(results, args.group_protocol)
    (out / "summary.json").write_text(
        json.dumps(
            {
                "broker": who,
                "group_protocol": args.group_protocol,
                "results": [asdict(r) for r in results],
            },
            indent=2,
        )
        + "\n"
    )
    passed = sum(r.status == "passed" for r in results)
    failed = sum(r.status == "failed" for r in results)
    skipped = sum(r.status == "skipped" for r in results)
    if skipped:
        print(f"{skipped} skipped (no sub-test ran against the broker)")
    retried = [r.label for r in results if r.status == "passed" and r.earlier_failures]
    if retried:
        print(f"passed only on a retry: {', '.join(retried)}")
    print(f"{passed} passed, {failed} failed")
    if interrupted:
        return 130
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
