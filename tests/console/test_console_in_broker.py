"""`muster serve --set muster.console.listen=...`: the console inside the
broker, on its event loop, and what a browser shows of it."""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from playwright.sync_api import Page, sync_playwright

from tests.support.brokers import MusterProcess, free_port

GROUP = "inside-group"
TOPIC = "inside-topic"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MusterProcess]:
    port = free_port()
    proc = MusterProcess(
        tmp_path_factory.mktemp("inside") / "data",
        settings={"muster.console.listen": f"127.0.0.1:{port}"},
    )
    proc.console_port = port  # type: ignore[attr-defined]
    proc.start()
    try:
        yield proc
    finally:
        proc.close()


def _get(port: int, path: str) -> tuple[int, str]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=20) as answer:
        return answer.status, answer.read().decode()


@pytest.fixture(scope="module")
def group(broker: MusterProcess) -> Iterator[Consumer]:
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(20):
        producer.produce(TOPIC, f'{{"n": {i}}}'.encode(), key=b"k")
    producer.flush(10)
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": GROUP,
            "client.id": "inside-client",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([TOPIC])
    deadline = time.monotonic() + 30
    got = 0
    while got < 5 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        got += msg is not None and msg.error() is None
    consumer.commit(asynchronous=False)
    try:
        yield consumer
    finally:
        consumer.close()


def test_console_served_by_the_broker(broker: MusterProcess, group: Consumer) -> None:
    port = broker.console_port  # type: ignore[attr-defined]
    status, text = _get(port, "/")
    assert status == 200 and "Cluster" in text
    status, text = _get(port, f"/groups/{GROUP}")
    assert status == 200 and "inside-client" in text and "Rebalance started" in text


def _poll_until(consumers: list[Consumer], done: object, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for c in consumers:
            c.poll(0.2)
        if done():  # type: ignore[operator]
            return
    raise AssertionError("timed out")


def _topic_and_group(
    broker: MusterProcess, topic: str, partitions: int, group_id: str, extra: dict[str, Any]
) -> dict[str, Any]:
    """Creates the topic; a consumer configuration for the group."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})  # alive until the result
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(20)
    return {
        "bootstrap.servers": broker.bootstrap,
        "group.id": group_id,
        "auto.offset.reset": "earliest",
        **extra,
    }


CHROMIUM = Path("/usr/bin/chromium")  # Debian's; Playwright downloads no browser


@contextmanager
def _browser() -> Iterator[tuple[Page, list[str]]]:
    """A page of Debian's chromium, and the errors its console reports (asserted
    empty by the tests)."""
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            errors: list[str] = []
            page.on(
                "console",
                lambda m: (
                    errors.append(f"{m.text} ({m.location.get('url')})")
                    if m.type == "error"
                    else None
                ),
            )
            page.on("pageerror", lambda e: errors.append(str(e)))
            yield page, errors
        finally:
            browser.close()


def test_browser_shows_the_group_and_live_updates(
    broker: MusterProcess, group: Consumer, tmp_path: Path
) -> None:
    """A real browser: the group page renders, htmx's SSE extension swaps the
    live part in (its `as of` line changes without a reload)."""
    port = broker.console_port  # type: ignore[attr-defined]
    with _browser() as (page, errors):
        page.goto(f"http://127.0.0.1:{port}/groups/{GROUP}")
        first = page.locator("#live p.muted").last.inner_text()
        assert "inside-client" in page.locator("#members").inner_text()
        page.wait_for_function(
            "old => { const p = document.querySelectorAll('#live p.muted');"
            " return p.length && p[p.length - 1].innerText !== old; }",
            arg=first,
            timeout=10_000,
        )
        page.screenshot(path=str(tmp_path / "group.png"), full_page=True)
        page.goto(f"http://127.0.0.1:{port}/")
        assert "Cluster" in page.inner_text("h1")
        page.screenshot(path=str(tmp_path / "overview.png"), full_page=True)
        page.goto(f"http://127.0.0.1:{port}/topics/{TOPIC}")
        page.select_option("select[name=format]", "json")
        page.click("text=Browse")  # htmx swaps one page of records in
        page.wait_for_selector("#records td", timeout=10_000)
        assert '"n": 19' in page.inner_text("#records")
        page.screenshot(path=str(tmp_path / "topic.png"), full_page=True)
        assert errors == []
    assert (tmp_path / "group.png").stat().st_size > 10_000


_AWAITED_ROWS = """() => ['awaiting', 'rejoined'].map(kind =>
    Array.from(document.querySelectorAll(`#awaited tr.${kind}`), row => row.innerText))"""


def test_browser_lists_the_awaited_members_while_a_rebalance_runs(
    broker: MusterProcess, tmp_path: Path
) -> None:
    """A classic group of two with a long rebalance timeout; a third member
    joins. The one that polls rejoins, the one that does not poll is still
    awaited: the live part of the group page lists it as awaited with the join
    deadline, and the two others as rejoined, without a reload."""
    group_id, topic = "await-group", "await-topic"
    # max.poll.interval.ms is the rebalance timeout: the join phase waits this long
    conf = _topic_and_group(broker, topic, 3, group_id, {"max.poll.interval.ms": 120_000})
    a = Consumer({**conf, "client.id": "await-a"})
    b = Consumer({**conf, "client.id": "await-b"})
    c = Consumer({**conf, "client.id": "await-c"})
    try:
        a.subscribe([topic])
        _poll_until([a], lambda: len(a.assignment()) == 3)
        b.subscribe([topic])
        _poll_until([a, b], lambda: len(a.assignment()) >= 1 and len(b.assignment()) >= 1)
        # b is not polled from here on: it cannot rejoin (its rebalance
        # callback waits for the application), so the join phase awaits it
        c.subscribe([topic])
        port = broker.console_port  # type: ignore[attr-defined]
        with _browser() as (page, errors):
            page.goto(f"http://127.0.0.1:{port}/groups/{group_id}")
            deadline = time.monotonic() + 40
            awaiting = rejoined = ""
            while time.monotonic() < deadline:
                for consumer in (a, c):
                    consumer.poll(0.2)
                # both lists from one snapshot of the page: a live update may
                # land between two separate reads
                rows = page.evaluate(_AWAITED_ROWS)
                awaiting, rejoined = " ".join(rows[0]), " ".join(rows[1])
                if "await-a" in rejoined and "await-c" in rejoined:
                    break
            assert "await-b" in awaiting and "awaited" in awaiting
            assert "await-a" in rejoined and "await-c" in rejoined
            assert page.locator("#join-deadline").count() == 1
            assert "2 of 3 members rejoined" in page.inner_text("#awaited")
            page.screenshot(path=str(tmp_path / "awaited.png"), full_page=True)
            # b polls again: it rejoins, the join phase ends and the list goes
            _poll_until([a, b, c], lambda: not page.locator("#awaited").count(), seconds=40)
            assert errors == []
    finally:
        for consumer in (c, b, a):
            consumer.close()


def test_broker_stops_promptly_with_a_live_stream_open(broker: MusterProcess) -> None:
    """SIGTERM with a browser's SSE stream open: the console closes the stream
    and the broker exits cleanly (last in the module: it restarts the broker)."""
    port = broker.console_port  # type: ignore[attr-defined]
    stream = urllib.request.urlopen(f"http://127.0.0.1:{port}/groups/{GROUP}/live", timeout=20)
    try:
        assert stream.readline().startswith(b"event: live")
        started = time.monotonic()
        assert broker.stop() == 0
        assert time.monotonic() - started < 15
    finally:
        stream.close()
    broker.start()
