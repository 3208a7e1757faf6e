"""Run franz-go's own kgo integration tests (`go test -c
github.com/twmb/franz-go/pkg/kgo`, built from the Go module proxy by
tests/support/peers.py) against one fresh broker: muster by default, or
Apache Kafka 4.4 / kfake for comparison.

    .venv/bin/python conformance/franz_go.py                       # muster, every test
    .venv/bin/python conformance/franz_go.py --broker kafka        # the reference
    .venv/bin/python conformance/franz_go.py --run 'TestGroupETL' --records 500000
    .venv/bin/python conformance/franz_go.py --chaos --run TestGroupETL

The tests read KGO_SEEDS (the broker), KGO_TEST_RF=1 (one node) and
KGO_TEST_RECORDS (the ETL tests' size; 50,000 here unless --records). The
binary runs in the package's source folder, as `go test` would. Prints one
line per failed or skipped test, then `franz-go kgo: N passed, N failed,
N skipped`; exit 0 only when nothing failed. Logs: conformance/results/.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.support.brokers import KfakeProcess, MusterProcess  # noqa: E402
from tests.support.kafka import KafkaProcess  # noqa: E402
from tests.support.peers import kgo_test_binary  # noqa: E402

RESULT = re.compile(r"^--- (PASS|FAIL|SKIP): (\S+) \(([\d.]+)s\)")


@contextlib.contextmanager
def broker(kind: str, work: Path, share: bool = True) -> Iterator[str]:
    if kind == "muster":
        # Kafka's durability (no fsync before the answer), as the peers run
        props = {"muster.fsync": "never"}
        if not share:  # share groups (KIP-932) left out (they are on by default, as in Kafka)
            props["muster.share.enable"] = "false"
        proc: MusterProcess | KafkaProcess | KfakeProcess = MusterProcess(work / "data", props)
    elif kind == "kafka":
        proc = KafkaProcess(work / "kafka")
    else:
        proc = KfakeProcess(partitions=1)
    proc.start()
    try:
        yield proc.bootstrap
    finally:
        proc.close()


def top_level(results: dict[str, tuple[str, float]]) -> dict[str, tuple[str, float]]:
    return {name: r for name, r in results.items() if "/" not in name}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--broker", choices=("muster", "kafka", "kfake"), default="muster")
    ap.add_argument("--run", default="", help="go test -run pattern (default: every test)")
    ap.add_argument("--records", type=int, default=50_000, help="KGO_TEST_RECORDS")
    ap.add_argument("--chaos", action="store_true", help="KGO_TEST_CHAOS=1 (connections cut)")
    ap.add_argument(
        "--share", action="store_true", help="share groups on (KIP-932): the default, kept"
    )
    ap.add_argument("--no-share", action="store_true", help="muster.share.enable=false")
    ap.add_argument("--timeout", type=int, default=900, help="seconds for the whole run")
    args = ap.parse_args()

    binary, source = kgo_test_binary()
    out_dir = REPO / "conformance" / "results" / time.strftime("%Y%m%d-%H%M%S")
    out_dir.mkdir(parents=True, exist_ok=True)
    log_path = out_dir / f"franz-go-{args.broker}.log"
    with (
        tempfile.TemporaryDirectory(prefix="kgo-") as tmp,
        broker(args.broker, Path(tmp), not args.no_share) as seeds,
    ):
        env = {
            **os.environ,
            "KGO_SEEDS": seeds,
            "KGO_TEST_RF": "1",
            "KGO_TEST_RECORDS": str(args.records),
        }
        if args.chaos:
            env["KGO_TEST_CHAOS"] = "1"
        cmd = [str(binary), "-test.v", f"-test.timeout={args.timeout}s"]
        if args.run:
            cmd.append(f"-test.run={args.run}")
        started = time.monotonic()
        with open(log_path, "w") as log:
            done = subprocess.run(
                cmd, cwd=source, env=env, stdout=log, stderr=subprocess.STDOUT, check=False
            )
        took = time.monotonic() - started
    results: dict[str, tuple[str, float]] = {}
    for line in log_path.read_text(errors="replace").splitlines():
        m = RESULT.match(line.strip())
        if m:
            results[m.group(2)] = (m.group(1), float(m.group(3)))
    tests = top_level(results)
    for name, (status, secs) in sorted(tests.items()):
        if status != "PASS":
            print(f"{status:4} {name} ({secs:.1f} s)")
    passed = sum(1 for s, _ in tests.values() if s == "PASS")
    failed = sum(1 for s, _ in tests.values() if s == "FAIL")
    skipped = sum(1 for s, _ in tests.values() if s == "SKIP")
    if done.returncode != 0 and failed == 0:
        failed = 1  # a panic or timeout ends the binary before any FAIL line
        print(f"the test binary exited {done.returncode} (see {log_path})")
    print(f"log: {log_path} ({took:.0f} s on {args.broker})")
    print(f"franz-go kgo: {passed} passed, {failed} failed, {skipped} skipped")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
