"""What TLS and SASL cost: produce and sync-commit rates over SASL_SSL
(SCRAM-SHA-512) vs PLAINTEXT, on the same broker in the same run.

One muster per run (fresh data directory, defaults: `muster.fsync=always`)
listens on a PLAINTEXT and a SASL_SSL listener (a throw-away CA from
`muster.security.certs`, a SCRAM-SHA-512 user created over the wire). For
each run the order of the two listeners alternates. With confluent-kafka:

* produce N messages of 1 KiB (and of 100 B) with acks=all, as in
  produce_fetch.py (linger.ms=5, batch.size=1000000, no compression), each
  case into its own topic; timed from the first produce() to flush();
* sync commits for T seconds from one assign-mode consumer, as groups.py's
  `commits` scenario; commits/s.

Prints medians and the SASL_SSL/PLAINTEXT ratio of each row, and the CPU
seconds the broker and this (client) process spent on each produce case; the
target is that TLS costs at most 30% of produce throughput at 1 KiB (ratio >=
0.70).

    .venv/bin/python bench/security.py            # 3 runs
    .venv/bin/python bench/security.py --quick    # 10x fewer messages, 2 s of commits
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
from common import Broker, create_topic, free_port, median, temp_data_dir
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from groups import confluent_committer
from produce_fetch import produce

from muster.security.certs import make_certs

LISTENERS = ("PLAINTEXT", "SASL_SSL")
USER, PASSWORD = "bench", "bench-secret"
TARGET = 0.70


def start(certs: Path, extra: list[str]) -> tuple[Broker, dict[str, str]]:
    """A muster with both listeners (plus `extra` KEY=VALUE settings); returns
    it and listener -> bootstrap."""
    host = "127.0.0.1"
    ports = {name: free_port(host) for name in LISTENERS}
    data_dir = temp_data_dir("muster-bench-security-")
    settings = {
        "listeners": ",".join(f"{n}://{host}:{p}" for n, p in ports.items()),
        "ssl.keystore.location": str(certs / "broker.pem"),
        "ssl.truststore.location": str(certs / "ca.pem"),
        "sasl.enabled.mechanisms": "SCRAM-SHA-512",
    }
    argv = [sys.executable, "-m", "muster", "serve", "--data-dir", str(data_dir)]
    for key, value in settings.items():
        argv += ["--set", f"{key}={value}"]
    for setting in extra:
        argv += ["--set", setting]
    broker = Broker(
        name="muster",
        argv=argv,
        host=host,
        port=ports["PLAINTEXT"],
        log_path=common.RESULTS_DIR / "logs" / f"muster-security-{ports['PLAINTEXT']}.log",
        data_dir=data_dir,
    ).start()
    common.wait_for_port(host, ports["SASL_SSL"], 30, broker.proc)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap, "logger": common.RDK_LOGGER})
    upsert = UserScramCredentialUpsertion(
        USER, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), PASSWORD.encode()
    )
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(30)
    return broker, {n: f"{host}:{p}" for n, p in ports.items()}


def broker_cpu_s(broker: Broker) -> float:
    """The broker process's CPU time so far (Linux /proc), to tell what TLS costs
    the broker from what a loaded machine costs the wall clock."""
    assert broker.proc is not None
    fields = Path(f"/proc/{broker.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def client_cpu_s() -> float:
    """This process's CPU time: the producer (librdkafka's threads and the
    produce() loop), the other side of a case's wall time on a 2-core machine."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def client_conf(listener: str, certs: Path) -> dict[str, str]:
    if listener == "PLAINTEXT":
        return {}
    return {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": USER,
        "sasl.password": PASSWORD,
        "ssl.ca.location": str(certs / "ca.pem"),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a broker setting, e.g. muster.event.loop=uvloop (repeatable)",
    )
    args = ap.parse_args(argv)
    common.install_signal_handlers()
    counts = {1024: 10_000, 100: 20_000} if args.quick else {1024: 100_000, 100: 200_000}
    commit_s = 2.0 if args.quick else 5.0
    results: dict[str, dict[str, list[float]]] = {}
    cpu: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory(prefix="muster-bench-certs-") as tmp:
        certs = make_certs(Path(tmp))
        for run in range(args.runs):
            broker, bootstrap = start(certs, args.set)
            try:
                order = LISTENERS if run % 2 == 0 else LISTENERS[::-1]
                for listener in order:
                    conf = client_conf(listener, certs)
                    for size, count in counts.items():
                        topic = f"sec-{size}-{uuid.uuid4().hex[:8]}"
                        create_topic(bootstrap["PLAINTEXT"], topic)
                        cpu0, client0 = broker_cpu_s(broker), client_cpu_s()
                        secs = produce(bootstrap[listener], topic, size, count, "all", conf)
                        label = f"produce {size} B acks=all ({count // 1000}k), msgs/s"
                        results.setdefault(label, {}).setdefault(listener, []).append(count / secs)
                        cpu_label = f"broker CPU s for produce {size} B ({count // 1000}k)"
                        cpu.setdefault(cpu_label, {}).setdefault(listener, []).append(
                            broker_cpu_s(broker) - cpu0
                        )
                        client_label = f"client CPU s for produce {size} B ({count // 1000}k)"
                        cpu.setdefault(client_label, {}).setdefault(listener, []).append(
                            client_cpu_s() - client0
                        )
                    n, secs = confluent_committer(bootstrap[listener], topic, commit_s, extra=conf)
                    label = "sync commits, commits/s"
                    results.setdefault(label, {}).setdefault(listener, []).append(n / secs)
                common.console.print(f"run {run + 1}/{args.runs} done")
            finally:
                broker.stop()
    rows = [
        {"label": label, **{li: {"rate": median(v)} for li, v in by.items()}}
        for label, by in results.items()
    ]
    common.print_ratio_table(
        f"muster over SASL_SSL (SCRAM-SHA-512) vs PLAINTEXT, median of {args.runs} runs",
        rows,
        [common.Column("rate")],
        brokers=("SASL_SSL", "PLAINTEXT"),
        target=TARGET,
    )
    common.print_ratio_table(
        "broker and client CPU seconds (user+system) spent on the same produce runs, median",
        [
            {"label": label, **{li: {"cpu s": median(v)} for li, v in by.items()}}
            for label, by in cpu.items()
        ],
        [common.Column("cpu s", 2)],
        brokers=("SASL_SSL", "PLAINTEXT"),
        higher_is_better=False,
        target=1.0 / TARGET,
    )
    key = next(label for label in results if label.startswith("produce 1024"))
    r = common.ratio(median(results[key]["SASL_SSL"]), median(results[key]["PLAINTEXT"]))
    assert r is not None
    common.console.print(
        f"TLS+SASL cost at 1 KiB produce: {1 - r:.0%} of throughput (target <= 30%)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
