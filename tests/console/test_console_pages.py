"""The console's pages over HTTP against a real muster broker, with a group
formed by a third-party client (confluent-kafka)."""

from __future__ import annotations

import html
import json
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from starlette.testclient import TestClient

from muster.console.app import create_app
from tests.support.brokers import MusterProcess

TOPIC = "console-orders"
GROUP = "console-group"


@pytest.fixture(scope="module")
def group(shared_muster: MusterProcess) -> Iterator[tuple[MusterProcess, Consumer]]:
    producer = Producer({"bootstrap.servers": shared_muster.bootstrap})
    for i in range(30):
        value = json.dumps({"order": i, "item": "widget" if i % 2 else "gadget"})
        producer.produce(TOPIC, value.encode(), key=f"k{i}".encode(), headers=[("src", b"test")])
    producer.flush(10)
    consumer = Consumer(
        {
            "bootstrap.servers": shared_muster.bootstrap,
            "group.id": GROUP,
            "client.id": "console-test-client",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([TOPIC])
    seen = 0
    deadline = time.monotonic() + 30
    while seen < 10 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            seen += 1
    assert seen >= 10
    consumer.commit(asynchronous=False)
    try:
        yield shared_muster, consumer
    finally:
        consumer.close()


@pytest.fixture(scope="module")
def http(group: tuple[MusterProcess, Consumer]) -> Iterator[TestClient]:
    broker, _ = group
    with TestClient(create_app({"bootstrap.servers": broker.bootstrap})) as client:
        yield client


def test_overview_counts_brokers_topics_and_groups(http: TestClient) -> None:
    page = http.get("/")
    assert page.status_code == 200
    assert "Server-Timing" in page.headers
    assert "brokers" in page.text and "classic" in page.text
    assert "server time" in page.text
    assert "/static/htmx.min.js" in page.text
    assert http.get("/static/htmx.min.js").status_code == 200
    assert 'hx-get="/stats"' in page.text  # the costly figures come as a fragment
    stats = http.get("/stats")
    assert stats.status_code == 200 and 'id="records">3' in stats.text  # 30 produced


def test_overview_rates_of_produce_and_offset_commits(
    http: TestClient, group: tuple[MusterProcess, Consumer]
) -> None:
    """Records produced and offsets committed between two looks show as rates
    (the first look has nothing to compare with; the totals are cached 5 s)."""
    broker, consumer = group
    http.get("/stats")
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(20):
        producer.produce(TOPIC, f'{{"order": {100 + i}}}'.encode())
    producer.flush(10)
    deadline = time.monotonic() + 20
    msg = None
    while (msg is None or msg.error() is not None) and time.monotonic() < deadline:
        msg = consumer.poll(0.5)  # something new to commit
    consumer.commit(asynchronous=False)
    time.sleep(5.1)  # past the totals' cache
    stats = http.get("/stats").text

    def rate(name: str) -> float:
        return float(stats.split(f'id="{name}">', 1)[1].split("<", 1)[0])

    assert rate("produce-rate") > 0 and rate("commit-rate") > 0


def test_group_list_filters_server_side(http: TestClient) -> None:
    page = http.get("/groups", params={"q": "console-gr"})
    assert page.status_code == 200 and GROUP in page.text
    assert GROUP not in http.get("/groups", params={"q": "no-such"}).text


def test_group_page_members_lag_and_rebalance_cause(http: TestClient) -> None:
    page = http.get(f"/groups/{GROUP}")
    assert page.status_code == 200
    text = page.text
    assert "console-test-client" in text  # the member's client id
    assert TOPIC in text  # assignment and lag rows
    assert "Stable" in text
    assert "Rebalance started" in text  # the explain story, from __muster_group_events
    assert "joined" in text  # the cause in words
    assert f'sse-connect="/groups/{GROUP}/live"' in text
    assert http.get("/groups/no-such-group").status_code == 404


def test_group_live_stream_sends_the_fragment(http: TestClient) -> None:
    # the test client reads a whole response: one message, then the stream ends
    stream = http.get(f"/groups/{GROUP}/live", params={"count": 1})
    assert stream.headers["content-type"].startswith("text/event-stream")
    lines = stream.text.splitlines()
    assert lines[0] == "event: live"
    assert any("console-test-client" in line for line in lines)


def test_topics_and_message_browser(http: TestClient) -> None:
    assert TOPIC in http.get("/topics").text
    page = http.get(f"/topics/{TOPIC}")
    assert page.status_code == 200 and "partitions" in page.text
    assert "retention.ms" in page.text  # configs, via DescribeConfigs
    assert "bytes on disk" in page.text and '<td class="num">-</td>' not in page.text
    newest = http.get(f"/topics/{TOPIC}/messages", params={"from": "newest", "limit": 5})
    assert newest.status_code == 200 and newest.text.count("<tr>") >= 2
    pretty = http.get(
        f"/topics/{TOPIC}/messages",
        params={"from": "offset", "offset": 0, "format": "json", "filter": "gadget", "limit": 50},
    )
    text = html.unescape(pretty.text)
    assert '"item": "gadget"' in text and "widget" not in text
    assert "src=test" in text
    hexed = http.get(f"/topics/{TOPIC}/messages", params={"from": "offset", "format": "hex"})
    assert "7b 22" in hexed.text  # '{"'


def test_actions_dry_run_then_refused_while_active(http: TestClient) -> None:
    dry = http.post(f"/groups/{GROUP}/actions/reset-offsets", data={"mode": "to-earliest"})
    assert dry.status_code == 200 and "dry run" in dry.text
    assert '<td class="num">0</td>' in dry.text
    active = http.post(
        f"/groups/{GROUP}/actions/reset-offsets", data={"mode": "to-earliest", "execute": "1"}
    )
    assert "stop its consumers first" in active.text
    forged = http.post(
        f"/groups/{GROUP}/actions/delete-group",
        data={"execute": "1"},
        headers={"Origin": "http://evil.example"},
    )
    assert forged.status_code == 403


def test_read_only_console_refuses_actions(group: tuple[MusterProcess, Consumer]) -> None:
    broker, _ = group
    app = create_app({"bootstrap.servers": broker.bootstrap}, read_only=True)
    with TestClient(app) as client:
        refused = client.post(f"/groups/{GROUP}/actions/delete-group", data={"execute": "1"})
        assert refused.status_code == 403
        assert "Delete group" not in client.get(f"/groups/{GROUP}").text


def test_actions_executed_on_an_inactive_group(http: TestClient, group: tuple) -> None:
    from confluent_kafka import TopicPartition

    broker, _ = group
    idle = "console-idle"
    committer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": idle})
    committer.commit(offsets=[TopicPartition(TOPIC, 0, 2)], asynchronous=False)
    committer.close()
    url = f"/groups/{idle}/actions"
    dry = http.post(f"{url}/reset-offsets", data={"mode": "shift-by", "shift": "3"})
    assert "dry run" in dry.text and '<td class="num">5</td>' in dry.text
    assert '<td class="num">2</td>' in http.get(f"/groups/{idle}").text  # unchanged
    done = http.post(
        f"{url}/reset-offsets", data={"mode": "shift-by", "shift": "3", "execute": "1"}
    )
    assert "(done)" in done.text, done.text
    lag_row = http.get(f"/groups/{idle}").text
    assert '<td class="num">5</td>' in lag_row
    would = http.post(f"{url}/delete-offsets", data={"topic": TOPIC})
    assert "dry run" in would.text and "deleted" in would.text
    dry_delete = http.post(f"{url}/delete-group", data={})
    assert "Would delete group" in dry_delete.text
    deleted = http.post(f"{url}/delete-group", data={"execute": "1"})
    assert "deleted" in deleted.text and "Error" not in deleted.text
    assert http.get(f"/groups/{idle}").status_code == 404
    # delete-offsets for real: the group's last offsets go, and with them the group
    committer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": idle})
    committer.commit(offsets=[TopicPartition(TOPIC, 0, 1)], asynchronous=False)
    committer.close()
    gone = http.post(f"{url}/delete-offsets", data={"topic": TOPIC, "execute": "1"})
    assert "(done)" in gone.text and "deleted" in gone.text
    assert http.get(f"/groups/{idle}").status_code == 404


def test_consumer_protocol_group_shows_epochs_and_assignments(
    http: TestClient, group: tuple
) -> None:
    """A KIP-848 group (muster's own client, group.protocol=consumer): the page
    shows it as a consumer group with member epochs and current/target
    assignments."""
    from muster.client import Consumer as MusterConsumer

    broker, _ = group
    consumer = MusterConsumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "console-848",
            "client.id": "console-848-client",
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.subscribe([TOPIC])
        deadline = time.monotonic() + 30
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.3)
        assert consumer.assignment()
        # the console caches the group listing for a second
        deadline = time.monotonic() + 10
        listed = ""
        while "console-848" not in listed and time.monotonic() < deadline:
            listed = http.get("/groups", params={"type": "consumer"}).text
            time.sleep(0.3)
        assert "console-848" in listed
        page = http.get("/groups/console-848").text
        assert "group epoch" in page and "member epoch" in page
        assert "console-848-client" in page and f"{TOPIC}-0" in page
    finally:
        consumer.close()


def _deadlines(page: str) -> dict[str, tuple[str, int | None]]:
    """member id -> (what it is awaited for, its deadline in ms) from #awaited."""
    from datetime import UTC, datetime

    out = {}
    for row in re.findall(r'<tr class="reconciling">(.*?)</tr>', page, re.S):
        cells = [
            html.unescape(re.sub(r"<[^>]+>", "", c)).strip()
            for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        ]
        found = re.search(r"awaited until (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) UTC", cells[5])
        ms = None
        if found:
            stamp = datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=UTC)
            ms = int(stamp.timestamp() * 1000)
        out[cells[0]] = (cells[4], ms)
    return out


def _wait_for(http: TestClient, gid: str, done: Any) -> dict[str, tuple[str, int | None]]:
    deadline = time.monotonic() + 15
    while True:
        rows = _deadlines(http.get(f"/groups/{gid}").text)
        if done(rows) or time.monotonic() > deadline:
            return rows
        time.sleep(0.3)


def test_consumer_group_members_behind_the_target_listed_with_their_deadlines(
    http: TestClient, group: tuple
) -> None:
    """KIP-848: a member that must give up a partition is awaited until its
    revocation deadline (its rebalance timeout from the heartbeat that told it),
    one that has not heartbeated since the new target at the latest until its
    session can expire, and one waiting for a partition another still holds has
    no deadline of its own. Raw ConsumerGroupHeartbeats, so each step is held."""
    from tests.support.security import RawClient
    from tests.wire.clients import create_topic

    broker, _ = group
    topic, gid = "console-848-revoke", "console-848-revoke-g"
    create_topic(broker.bootstrap, topic, partitions=2)
    raw = RawClient(broker.port)

    def heartbeat(member_id: str, epoch: int, owned: list[Any], timeout: int) -> Any:
        body = {
            "group_id": gid,
            "member_id": member_id,
            "member_epoch": epoch,
            "rebalance_timeout": timeout,
            "subscribed_topic_names": [topic],
            "topic_partitions": owned,
        }
        answer = raw.call(68, 0, body)
        assert answer.error_code == 0, answer
        return answer

    try:
        a = heartbeat("", 0, [], 60_000)
        owned = [
            {"topic_id": t.topic_id, "partitions": list(t.partitions)}
            for t in a.assignment.topic_partitions
        ]
        assert sum(len(t["partitions"]) for t in owned) == 2
        a = heartbeat(a.member_id, a.member_epoch, owned, 60_000)  # a owns both
        b = heartbeat("", 0, [], 45_000)  # the new target moves one partition to b
        # the target is computed off the heartbeat and the console caches a group
        # for a second: read the page until it shows both
        behind = _wait_for(http, gid, lambda rows: set(rows) == {a.member_id, b.member_id})
        why, session_bound = behind[a.member_id]
        assert why == "its first heartbeat since the new target" and session_bound
        assert behind[b.member_id] == (
            "partitions other members still hold (no deadline of its own)",
            None,
        )
        before = int(time.time() * 1000)
        heartbeat(a.member_id, a.member_epoch, owned, 60_000)  # told to give one up
        after = int(time.time() * 1000)
        behind = _wait_for(http, gid, lambda rows: rows.get(a.member_id, ("",))[0] != why)
        why, deadline = behind[a.member_id]
        assert why == "giving up 1 partition(s)"
        assert deadline is not None and before + 60_000 <= deadline <= after + 60_000
    finally:
        raw.close()
