"""Runs the corpus against one Kafka and one muster (started here, or given with
--kafka/--muster), compares the normalised transcripts, prints the differing
fields and the summary line:

    kafka-diff: N scenarios, M differ, K documented

M counts scenarios with a difference DIFFERENCES.md (documented.py) does not
explain; the exit code is 1 when M > 0."""

from __future__ import annotations

import argparse
import concurrent.futures
import fnmatch
import json
import os
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.kafka_diff.documented import explain
from conformance.kafka_diff.normalise import at, diff, normalise
from conformance.kafka_diff.registry import Scenario, load
from conformance.kafka_diff.session import Session


@dataclass
class Outcome:
    scenario: Scenario
    kafka: list[tuple[str, Any]] = field(default_factory=list)
    muster: list[tuple[str, Any]] = field(default_factory=list)
    differing: list[str] = field(default_factory=list)  # paths
    undocumented: list[str] = field(default_factory=list)
    reasons: set[str] = field(default_factory=set)
    seconds: float = 0.0


def _run_one(sc: Scenario, port: int, token: str, broker: str) -> list[tuple[str, Any]]:
    s = Session(port, sc.name.replace(".", "-").replace("_", "-"), token, broker)
    try:
        sc.fn(s)
    except Exception as exc:  # a scenario that breaks is a difference, not a crash
        s.record("<exception>", f"{type(exc).__name__}: {exc}")
        if os.environ.get("KDIFF_TRACE"):
            traceback.print_exc()
    finally:
        s.close()
    return normalise(s.transcript, token)


def compare(kafka: list[tuple[str, Any]], muster: list[tuple[str, Any]]) -> list[str]:
    paths: list[str] = []
    if kafka == muster:
        return paths
    for who, mine in (("kafka", kafka), ("muster", muster)):
        for i, (_label, value) in enumerate(mine):
            if value == "<unsupported>":  # the version itself is the difference
                return [f"{i}:unsupported-by-{who}"]
    for i in range(max(len(kafka), len(muster))):
        ka = kafka[i] if i < len(kafka) else ("<absent>", "<absent>")
        mu = muster[i] if i < len(muster) else ("<absent>", "<absent>")
        label = ka[0] if ka[0] != "<absent>" else mu[0]
        if ka[0] != mu[0]:
            paths.append(f"{i}:{label}<label>")
            continue
        paths += [f"{i}:{label}{p}" for p in diff(ka[1], mu[1])]
    return paths


def warm_up(port: int, timeout: float = 60.0) -> None:
    """Until the broker finds a group and a transaction coordinator (Kafka creates
    __consumer_offsets and __transaction_state on first use)."""
    s = Session(port, "warmup", "0", "")
    deadline = time.monotonic() + timeout
    try:
        for key_type in (0, 1):
            while time.monotonic() < deadline:
                a = s.call(10, 4, {"key_type": key_type, "coordinator_keys": ["kdiff-warmup"]})
                if isinstance(a, dict) and a["coordinators"][0]["error_code"] == 0:
                    break
                time.sleep(0.2)
        # muster creates __transaction_state at the first transactional request,
        # Kafka at the first FindCoordinator: both have it before any scenario
        body = {
            "transactional_id": "kdiff-warmup",
            "transaction_timeout": 60000,
            "producer_id": -1,
            "producer_epoch": -1,
        }
        while time.monotonic() < deadline:
            a = s.call(22, 4, body)
            if isinstance(a, dict) and a["error_code"] == 0:
                break
            time.sleep(0.2)
    finally:
        s.close()


def run(
    scenarios: list[Scenario], kafka_port: int, muster_port: int, jobs: int = 4
) -> list[Outcome]:
    warm_up(kafka_port)
    warm_up(muster_port)
    token = f"{int(time.time() * 1000) % 10**8:08d}"
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=jobs * 2)

    def both(sc: Scenario) -> Outcome:
        t0 = time.monotonic()
        fk = pool.submit(_run_one, sc, kafka_port, token, "kafka")
        fm = pool.submit(_run_one, sc, muster_port, token, "muster")
        out = Outcome(sc, fk.result(), fm.result())
        out.seconds = time.monotonic() - t0
        out.differing = compare(out.kafka, out.muster)
        for path in out.differing:
            reason = explain(sc.name, path)
            if reason is None:
                out.undocumented.append(path)
            else:
                out.reasons.add(reason)
        return out

    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as outer:
        outcomes = list(outer.map(both, scenarios))
    pool.shutdown()
    return outcomes


def summary(outcomes: list[Outcome]) -> tuple[int, int, int]:
    differ = sum(1 for o in outcomes if o.undocumented)
    documented = sum(1 for o in outcomes if o.differing and not o.undocumented)
    return len(outcomes), differ, documented


def report(
    outcomes: list[Outcome], verbose: bool = False, out: Any = sys.stdout, limit: int = 8
) -> str:
    rows = []
    for o in outcomes:
        shown = o.differing if verbose else o.undocumented
        if len(shown) > limit:
            shown = [*shown[:limit], f"... {len(shown) - limit} more"]
        for path in shown:
            if path.startswith("..."):
                rows.append(f"{o.scenario.name:<44} {path}")
                continue
            i = int(path.split(":", 1)[0])
            k = o.kafka[i][1] if i < len(o.kafka) else "<absent>"
            m = o.muster[i][1] if i < len(o.muster) else "<absent>"
            label = (o.kafka[i] if i < len(o.kafka) else o.muster[i])[0]
            sub = path[len(f"{i}:{label}") :]
            mark = "" if path in o.undocumented else "  (documented)"
            rows.append(
                f"{o.scenario.name:<44} {path:<60} kafka={_short(at(k, sub))} "
                f"muster={_short(at(m, sub))}{mark}"
            )
    if rows:
        print(f"{'scenario':<44} {'field':<60} values", file=out)
        for r in rows:
            print(r, file=out)
    n, m, k = summary(outcomes)
    line = f"kafka-diff: {n} scenarios, {m} differ, {k} documented"
    print(line, file=out)
    return line


def _short(v: Any) -> str:
    s = json.dumps(v, default=str)
    return s if len(s) <= 80 else s[:77] + "..."


def start_brokers(work: Path) -> tuple[Any, Any]:
    from tests.support.brokers import MusterProcess
    from tests.support.kafka import KafkaProcess

    kafka = KafkaProcess(work / "kafka")
    muster = MusterProcess(work / "muster" / "data")
    (work / "muster").mkdir(parents=True, exist_ok=True)
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        fk = ex.submit(kafka.start)
        fm = ex.submit(muster.start)
        fk.result()
        fm.result()
    return kafka, muster


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="kafka-diff", description=__doc__)
    p.add_argument("--kafka", help="host:port of a running Kafka 4.4 (else one is started)")
    p.add_argument("--muster", help="host:port of a running muster (else one is started)")
    p.add_argument(
        "-k", "--select", default="*", help="fnmatch pattern(s) on names, comma-separated"
    )
    p.add_argument("-j", "--jobs", type=int, default=4)
    p.add_argument("-v", "--verbose", action="store_true", help="documented differences too")
    p.add_argument("--dump", help="write both transcripts of every scenario to this JSON file")
    p.add_argument("--list", action="store_true")
    args = p.parse_args(argv)
    patterns = args.select.split(",")
    chosen = [
        s for name, s in sorted(load().items()) if any(fnmatch.fnmatch(name, pt) for pt in patterns)
    ]
    if args.list:
        for s in chosen:
            print(s.name)
        return 0
    started: list[Any] = []
    t0 = time.monotonic()
    try:
        if args.kafka and args.muster:
            kport, mport = int(args.kafka.rsplit(":", 1)[1]), int(args.muster.rsplit(":", 1)[1])
        else:
            kafka, muster = start_brokers(Path(tempfile.mkdtemp(prefix="kafka-diff-")))
            started = [kafka, muster]
            kport, mport = kafka.port, muster.port
        outcomes = run(chosen, kport, mport, args.jobs)
    finally:
        for b in started:
            b.close()
    if args.dump:
        Path(args.dump).write_text(
            json.dumps(
                {o.scenario.name: {"kafka": o.kafka, "muster": o.muster} for o in outcomes},
                indent=1,
                default=str,
            )
        )
    print(f"({time.monotonic() - t0:.0f} s)", file=sys.stderr, flush=True)
    report(outcomes, args.verbose)  # its summary line is the last line
    return 1 if summary(outcomes)[1] else 0
