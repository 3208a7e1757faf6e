"""The HTML report on its own (no Spark): one bar per rebalance coloured by its
cause, one curve per partition, names escaped, nothing fetched from anywhere."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from muster.analytics import report, svg
from muster.analytics.model import GroupReport, GroupSummary


class Page(HTMLParser):
    def __init__(self, html: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def find(self, tag: str, cls: str) -> list[dict[str, str | None]]:
        return [a for t, a in self.tags if t == tag and cls in (a.get("class") or "").split()]


def summary(group: str) -> GroupSummary:
    return GroupSummary(
        group, 3, 2, {"member_joined": 2, "session_expired": 1}, 1500, 750.0, 975.0, 1000,
        0, 60_000, 50_000, 4000, 4000 / 60_000, 5, 10, 5.0, 7, 9,
    )  # fmt: skip


def rebalance(n: int, cause: str, start: int, end: int | None) -> dict[str, object]:
    return {
        "rebalance": n,
        "cause": cause,
        "causes": [cause],
        "reasons": [],
        "started_ms": start,
        "completed_ms": end,
        "duration_ms": None if end is None else end - start,
        "waited_for": "all_members_joined" if end else None,
        "removed_members": [],
    }


def test_report_bars_curves_and_escaping(tmp_path: Path) -> None:
    group = 'orders<"&>'
    g = GroupReport(
        summary(group),
        rebalances=[
            rebalance(1, "member_joined", 1000, 1500),
            rebalance(2, "session_expired", 20_000, 21_000),
            rebalance(3, "member_joined", 59_000, None),  # still running at the end
        ],
        lag={"t-0": [(0, 0.0), (30_000, 12.0), (60_000, 7.0)], "t-1": [(0, 0.0), (60_000, 2.0)]},
        commit_rate=[(0, 5, 10)],
        story=[["Rebalance started: a member joined.", "Completed after 500 ms."]],
    )
    path = report.write(tmp_path / "r.html", report.render([g], 0, 60_000, "test", {}))
    page = Page(path.read_text(encoding="utf-8"))

    assert f"Group {group}" in page.text
    [section] = [a for t, a in page.tags if t == "section"]
    assert section["data-group"] == group

    bars = page.find("rect", "rebalance")
    joined, expired = svg.CAUSE_COLOURS["member_joined"], svg.CAUSE_COLOURS["session_expired"]
    assert [b["fill"] for b in bars] == [joined, expired, joined]
    assert [b["fill-opacity"] for b in bars] == ["1", "1", "0.45"]
    # positions follow time: 0..60 s across the axis; the running one reaches the end
    xs = [float(b["x"] or 0) for b in bars]
    assert xs == sorted(xs)
    last = bars[2]
    assert float(last["x"] or 0) + float(last["width"] or 0) == svg.WIDTH - svg.RIGHT
    assert "member_joined: a new member joined" in page.text

    curves = page.find("polyline", "series")
    assert len(curves) == 2
    assert len((curves[0]["points"] or "").split()) == 3

    assert not any(
        (a.get(name) or "").startswith(("http:", "https:", "//"))
        for _, a in page.tags
        for name in ("src", "href")
    )
    assert not [t for t, _ in page.tags if t in ("script", "link", "img", "iframe")]


def test_time_axis_ticks_are_round_and_inside() -> None:
    axis = svg.TimeAxis(1_000_500, 1_060_500)
    ticks = axis.ticks()
    assert ticks == list(range(1_010_000, 1_060_001, 10_000))
    assert axis.x(axis.start_ms) == svg.LEFT and axis.x(axis.end_ms) == svg.WIDTH - svg.RIGHT


MEMBER = "member-3-0f6c1c52-5d1e-4a4b-9a55-2f0c8e3d7b11"


def test_short_rebalances_show_and_member_ids_are_short_with_the_full_id_on_hover(
    tmp_path: Path,
) -> None:
    hour = 3_600_000
    quick = rebalance(1, "member_left", 1_000_000, 1_000_012)  # 12 ms in an hour
    quick["removed_members"] = [MEMBER]
    g = GroupReport(
        summary("g"),
        rebalances=[quick],
        lag={},
        commit_rate=[],
        story=[[f"Rebalance started: {MEMBER} left the group.", "Completed after 12 ms."]],
    )
    html = report.render([g], 0, hour, "test", {})
    page = Page(html)
    [bar] = page.find("rect", "rebalance")
    assert float(bar["width"] or 0) >= svg.MIN_BAR_WIDTH
    assert "(12 ms)" in html  # the true length is in the tooltip

    ids = page.find("span", "id")
    assert [a["title"] for a in ids] == [MEMBER, MEMBER]  # the table and the story
    assert "member-3-0f6c1c52\u2026" in page.text
    assert not any(MEMBER in text for text in page.text)


def test_a_group_without_rebalances_has_no_empty_section(tmp_path: Path) -> None:
    g = GroupReport(summary("quiet"), rebalances=[], lag={}, commit_rate=[], story=[])
    html = report.render([g], 0, 60_000, "test", {})
    for heading in ("Rebalances", "Commit rate", "In plain words"):
        after = html.split(f"<h3>{heading}</h3>", 1)[1]
        assert after.startswith('<p class="muted">'), heading
