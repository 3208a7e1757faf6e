"""A scripted churn scenario against a real broker, analysed end to end through
the `muster` Spark source: the output tables hold exactly the rebalances and
causes the script produced, and the HTML report renders with its plots.

Script (group `churn`, topic `orders` with 2 partitions):
 1. confluent-kafka member A joins the empty group      -> member_joined
 2. confluent-kafka member B joins                       -> member_joined
 3. a raw-protocol member S joins, syncs, then goes quiet -> member_joined
 4. muster-client member C joins; S does not rejoin and is dropped when the
    rebalance timeout expires                             -> member_joined
 5. C closes: LeaveGroup with its reason                  -> member_left
 6. B is SIGKILLed: its session expires                   -> session_expired
 7. A closes: the group is empty                          -> member_left
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from muster.analytics import load
from muster.analytics.job import run_analysis
from muster.cli import kafka
from muster.cli.main import app
from tests.analytics.silent_member import SilentMember
from tests.support.brokers import MusterProcess
from tests.wire.clients import create_topic
from tests.wire.group_helpers import produce_values, wait_until

GROUP, TOPIC = "churn", "orders"
EVENTS = "__muster_group_events"


@pytest.fixture(scope="module")
def churned(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MusterProcess, str]]:
    """A broker after the churn script, and the silent member's id."""
    settings = {"group.min.session.timeout.ms": "1000", "offsets.topic.num.partitions": "4"}
    proc = MusterProcess(tmp_path_factory.mktemp("churn") / "data", settings).start()
    try:
        yield proc, run_churn(proc.bootstrap)
    finally:
        proc.close()


class Members:
    """Member processes started by the test, ended by the test."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, kind: str) -> subprocess.Popen[bytes]:
        cmd = [sys.executable, "-m", "tests.analytics.member_proc", kind, self.bootstrap]
        proc = subprocess.Popen([*cmd, GROUP, TOPIC])
        self.procs.append(proc)
        return proc

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)


def completed_rebalances(bootstrap: str) -> int:
    records = kafka.read_partition(bootstrap, EVENTS, 0)
    return sum(
        1 for r in records if r.key == GROUP.encode() and b'"type":"RebalanceCompleted"' in r.value
    )


def wait_rebalances(bootstrap: str, count: int, timeout: float = 30) -> None:
    wait_until(lambda: completed_rebalances(bootstrap) >= count, timeout, f"{count} rebalances")
    assert completed_rebalances(bootstrap) == count  # nothing more than the script's


def fully_committed(bootstrap: str) -> bool:
    admin = kafka.GroupAdmin(bootstrap, 10)
    ends = admin.log_offsets([(TOPIC, 0), (TOPIC, 1)])
    committed = admin.committed_offsets(GROUP)
    return all(committed.get(k) == ends[k].log_end for k in ends)


def run_churn(bootstrap: str) -> str:
    create_topic(bootstrap, TOPIC, 2)
    produce_values(bootstrap, TOPIC, [b"first-%d" % i for i in range(20)], 2)
    members = Members(bootstrap)
    try:
        a = members.start("confluent")
        wait_rebalances(bootstrap, 1)
        b = members.start("confluent")
        wait_rebalances(bootstrap, 2)
        silent = SilentMember(bootstrap, GROUP, TOPIC)
        joined: list[str] = []
        thread = threading.Thread(target=lambda: joined.append(silent.join_and_sync()))
        thread.start()
        wait_rebalances(bootstrap, 3)
        thread.join(30)
        assert joined, "the silent member did not complete its join"
        c = members.start("muster")
        wait_rebalances(bootstrap, 4)
        c.terminate()
        assert c.wait(30) == 0
        wait_rebalances(bootstrap, 5)
        produce_values(bootstrap, TOPIC, [b"second-%d" % i for i in range(30)], 2)
        b.kill()
        b.wait(10)
        wait_rebalances(bootstrap, 6)
        wait_until(lambda: fully_committed(bootstrap), 30, "A to commit everything")
        a.terminate()
        assert a.wait(30) == 0
        wait_rebalances(bootstrap, 7)
        silent.close()
    finally:
        members.close()
    # written while the group is empty: 15 records of lag on each partition
    produce_values(bootstrap, TOPIC, [b"third-%d" % i for i in range(30)], 2)
    return joined[0]


class _Html(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def count(self, tag: str, cls: str | None = None) -> int:
        return sum(
            1
            for t, attrs in self.tags
            if t == tag and (cls is None or cls in (attrs.get("class") or "").split())
        )


def rows(path: Path) -> list[dict[str, Any]]:
    return pq.read_table(path).to_pylist()


def test_churn_scenario_through_the_spark_source(
    spark: Any, churned: tuple[MusterProcess, str], tmp_path: Path
) -> None:
    broker, silent_id = churned
    out = tmp_path / "analysis"
    result = run_analysis(spark, broker.bootstrap, out, progress=False)
    assert result.source == "muster Spark source"

    rebalances = sorted(
        (r for r in rows(result.tables["rebalances"]) if r["group_id"] == GROUP),
        key=lambda r: r["rebalance"],
    )
    assert [r["cause"] for r in rebalances] == [
        "member_joined",
        "member_joined",
        "member_joined",
        "member_joined",
        "member_left",
        "session_expired",
        "member_left",
    ]
    assert all(r["completed"] for r in rebalances)
    assert [r["members_after"] for r in rebalances] == [1, 2, 3, 3, 2, 1, 0]
    assert [r["members_before"] for r in rebalances] == [0, 1, 2, 3, 3, 2, 1]
    slow = rebalances[3]
    assert slow["waited_for"] == "rebalance_timeout_expired"
    assert slow["removed_members"] == [silent_id]
    assert slow["duration_ms"] >= 3000  # the group waited the members' rebalance timeout
    assert "the consumer is being closed" in rebalances[4]["reasons"]
    assert [m["cause"] for m in rebalances[5]["removals"]] == ["session_expired"]
    for r in rebalances:
        assert r["duration_ms"] == r["completed_ms"] - r["started_ms"]

    causes = {
        r["cause"]: r["rebalances"]
        for r in rows(result.tables["rebalance_causes"])
        if r["group_id"] == GROUP
    }
    assert causes == {"member_joined": 4, "member_left": 2, "session_expired": 1}

    [stored] = [r for r in rows(result.tables["group_summary"]) if r["group_id"] == GROUP]
    assert dict(stored["causes"]) == causes and stored["rebalances"] == 7

    [summary] = [s for s in result.groups if s.group_id == GROUP]
    assert summary.rebalances == 7 and summary.completed_rebalances == 7
    assert summary.total_duration_ms == sum(r["duration_ms"] for r in rebalances)
    # not consuming at least while the group waited for the silent member
    assert slow["duration_ms"] <= summary.not_consuming_ms < summary.active_ms
    assert 0 < summary.not_consuming_fraction < 1
    assert summary.commits > 0 and summary.commits_per_minute
    assert summary.max_lag_now == 15 and summary.total_lag_now == 30

    lag = [r for r in rows(result.tables["lag"]) if r["group_id"] == GROUP]
    assert {(r["topic"], r["partition"]) for r in lag} == {(TOPIC, 0), (TOPIC, 1)}
    last = max(r["t_ms"] for r in lag)
    assert sorted(r["lag"] for r in lag if r["t_ms"] == last) == [15, 15]

    html = result.report_path.read_text(encoding="utf-8")
    page = _Html()
    page.feed(html)
    assert f"Group {GROUP}" in "".join(page.text)
    assert page.count("svg", "timeline") == 1 and page.count("svg", "lines") == 1
    assert page.count("rect", "rebalance") == 7  # one bar per rebalance
    assert page.count("polyline", "series") == 2  # one lag curve per partition
    # self-contained: nothing to fetch
    assert not any(
        (attrs.get(name) or "").startswith(("http:", "https:", "//"))
        for _, attrs in page.tags
        for name in ("src", "href")
    )
    assert page.count("script") == 0 and page.count("link") == 0


def test_muster_analyze_prints_the_summary(
    spark: Any, churned: tuple[MusterProcess, str], tmp_path: Path
) -> None:
    # the command reuses the test session (one SparkSession per test run) and leaves it running
    broker, _ = churned
    out = tmp_path / "cli"
    result = CliRunner().invoke(
        app,
        ["analyze", "--bootstrap", broker.bootstrap, "--out", str(out), "--group", GROUP, "-q"],
    )
    assert result.exit_code == 0, result.output
    text = result.output
    assert GROUP in text
    for cause in ("member_joined: 4", "member_left: 2", "session_expired: 1"):
        assert cause in text
    assert f"Report: {out / 'report.html'}" in text.replace("\n", "")
    assert (out / "report.html").is_file()
    assert {p.name for p in (out / "tables").iterdir()} >= {"rebalances", "lag", "group_summary"}
    assert not spark.sparkContext._jsc.sc().isStopped()


def test_client_loader_reads_what_the_source_reads(
    spark: Any, churned: tuple[MusterProcess, str]
) -> None:
    # the fallback loader (--reader client) must see the same records
    broker, _ = churned
    topics = [EVENTS, "__consumer_offsets", TOPIC]
    columns = ["topic", "partition", "offset", "key", "value", "timestamp"]
    by_source = load.source_loader(spark, broker.bootstrap)(topics).select(*columns).collect()
    by_client = load.client_loader(spark, broker.bootstrap)(topics).select(*columns).collect()
    assert len(by_source) > 100
    assert sorted(map(tuple, by_client)) == sorted(map(tuple, by_source))


def test_kafka_loader_and_analyze_source_kafka(
    spark: Any, churned: tuple[MusterProcess, str], tmp_path: Path
) -> None:
    # Spark's own Kafka connector (on the test session's classpath) reads muster's
    # data topics as the muster source does (internal ones it leaves out: the
    # loader reads those through the muster source); `--source kafka` analyses so
    broker, _ = churned
    columns = ["topic", "partition", "offset", "key", "value", "timestamp", "timestampType"]
    by_kafka = load.kafka_loader(spark, broker.bootstrap)([TOPIC]).select(*columns).collect()
    by_source = load.source_loader(spark, broker.bootstrap)([TOPIC]).select(*columns).collect()
    assert len(by_source) >= 80  # first, second and third
    assert sorted(map(tuple, by_kafka)) == sorted(map(tuple, by_source))

    out = tmp_path / "cli-kafka"
    args = ["analyze", "-b", broker.bootstrap, "--out", str(out), "--group", GROUP, "-q"]
    result = CliRunner().invoke(app, [*args, "--source", "kafka"])
    assert result.exit_code == 0, result.output
    for cause in ("member_joined: 4", "member_left: 2", "session_expired: 1"):
        assert cause in result.output
    assert "Spark Kafka connector (internal" in (out / "report.html").read_text(encoding="utf-8")


def test_analyze_source_kafka_without_the_connector_is_one_line(
    spark: Any, churned: tuple[MusterProcess, str], tmp_path: Path, monkeypatch: Any
) -> None:
    import muster.spark.connector as connector

    monkeypatch.setattr(connector, "has_kafka_connector", lambda _spark: False)
    broker, _ = churned
    args = ["analyze", "-b", broker.bootstrap, "--out", str(tmp_path), "--source", "kafka", "-q"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1
    [line] = result.output.strip().splitlines()
    assert line.startswith("error: --source kafka: Spark's Kafka connector")
    assert "MUSTER_SPARK_JARS" in line
    assert not spark.sparkContext._jsc.sc().isStopped()  # the session is the test run's
