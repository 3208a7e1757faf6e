"""The self-contained HTML report: one file, inline CSS and SVG, no URLs.

Per group: the summary figures, a timeline of rebalances coloured by the
cause that started each, lag curves per partition, the rebalances table,
commit rate per minute, and the rebalances told in plain words (the same
sentences as `muster groups explain`). A history derived from
`__consumer_offsets` (no group events) shows its generations instead: when
each completed, the time since the one before, members and departures, and
its steps in the console's words; no causes or durations, which that topic
does not hold.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from html import escape
from pathlib import Path
from typing import Any

from muster.analytics import svg
from muster.analytics.model import GroupReport, GroupSummary
from muster.explain import cause_words, duration, waited_sentence

_CSS = """
body { font-family: sans-serif; margin: 24px; color: #222; max-width: 1100px; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 36px; border-bottom: 1px solid #ccc; }
h3 { font-size: 15px; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0 16px; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
td.ids { overflow-wrap: anywhere; }
td.num { text-align: right; }
.figures td:first-child { font-weight: bold; }
.story p { margin: 2px 0 2px 16px; font-size: 13px; } .story p.head { margin-left: 0; }
.muted { color: #777; }
span.id { border-bottom: 1px dotted #999; cursor: help; }
"""


def when(ms: int | None) -> str:
    if ms is None:
        return "-"
    stamp = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return stamp.strftime("%Y-%m-%d %H:%M:%S.") + f"{ms % 1000:03d}"


def percent(fraction: float) -> str:
    return f"{fraction * 100:.1f}%"


def causes_text(causes: dict[str, int]) -> str:
    """`member_joined: 3, session_expired: 1`, most frequent first."""
    ordered = sorted(causes.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{cause}: {count}" for cause, count in ordered) or "-"


def _ms(value: float | None) -> str:
    return "-" if value is None else duration(round(value))


_NOT_IN_OFFSETS = "not in __consumer_offsets"


def _figures(s: GroupSummary) -> str:
    derived = s.history == "derived"
    if derived:
        timing = ("Time between generations (mean)", _ms(s.mean_between_rebalances_ms))
        idle = _NOT_IN_OFFSETS
    else:
        timing = (
            "Rebalance time: total / mean / p95 / max",
            f"{_ms(s.total_duration_ms)} / {_ms(s.mean_duration_ms)} / "
            f"{_ms(s.p95_duration_ms)} / {_ms(s.max_duration_ms)}",
        )
        idle = (
            f"{_ms(s.not_consuming_ms)} = {percent(s.not_consuming_fraction or 0.0)} of the window"
        )
    rows = [
        ("Rebalances", f"{s.rebalances} ({s.completed_rebalances} completed)"),
        ("Causes", _NOT_IN_OFFSETS if derived else causes_text(s.causes)),
        timing,
        ("Window", f"{when(s.window_start_ms)} to {when(s.window_end_ms)} UTC"),
        ("Time with members", _NOT_IN_OFFSETS if derived else _ms(s.active_ms)),
        ("Not consuming (members, not Stable)", idle),
        ("Commits", f"{s.commits} requests, {s.partition_commits} partition offsets"),
        (
            "Commit rate",
            "-" if s.commits_per_minute is None else f"{s.commits_per_minute:.2f} per minute",
        ),
        (
            "Lag at the end (max / total)",
            "-" if s.max_lag_now is None else f"{s.max_lag_now} / {s.total_lag_now}",
        ),
    ]
    body = "".join(f"<tr><td>{escape(k)}</td><td>{escape(v)}</td></tr>" for k, v in rows)
    return f'<table class="figures">{body}</table>'


def _derived_timeline(report: GroupReport, axis: svg.TimeAxis) -> str:
    """A mark where each generation completed: its start is not in the topic."""
    marks = [
        svg.Bar(
            int(r["completed_ms"]),
            int(r["completed_ms"]),
            _GENERATION_COLOUR,
            f"#{r['rebalance']} generation {r.get('generation')}: "
            f"{_opt(r.get('members_before'))} to {_opt(r.get('members_after'))} members",
        )
        for r in report.rebalances
    ]
    legend = [("generation completed (derived from __consumer_offsets)", _GENERATION_COLOUR)]
    return svg.timeline(axis, marks, legend, "Generations, when each completed")


_GENERATION_COLOUR = "#7f7f7f"


def _timeline(report: GroupReport, axis: svg.TimeAxis) -> str:
    if report.summary.history == "derived":
        return _derived_timeline(report, axis)
    others: dict[str, str] = {}
    bars = []
    seen: dict[str, str] = {}
    for r in report.rebalances:
        cause = str(r.get("cause") or "unknown")
        colour = svg.cause_colour(cause, others)
        seen.setdefault(cause, colour)
        took = "still running" if r.get("duration_ms") is None else duration(r["duration_ms"])
        bars.append(
            svg.Bar(
                int(r["started_ms"]),
                r.get("completed_ms"),
                colour,
                f"#{r['rebalance']} {cause_words(cause)} ({took})",
            )
        )
    legend = [(f"{cause}: {cause_words(cause)}", colour) for cause, colour in seen.items()]
    return svg.timeline(axis, bars, legend, "Rebalances, coloured by the cause that started each")


def _lag(report: GroupReport, axis: svg.TimeAxis) -> str:
    if not report.lag:
        return '<p class="muted">No committed offsets: no lag to plot.</p>'
    series = sorted(report.lag.items())
    return svg.lines(axis, series, "Lag per partition (log end minus committed offset)", "records")


def _cells_html(cells: Sequence[tuple[str, str]]) -> str:
    return (
        "<tr>"
        + "".join(
            f"<td{f' class={cls}' if cls else ''}>{short_ids(escape(text))}</td>"
            for text, cls in cells
        )
        + "</tr>"
    )


def _generation_table(rows: Sequence[dict[str, Any]]) -> str:
    """A derived history's rebalances: what `__consumer_offsets` says of each."""
    head = (
        "<tr><th>#</th><th>Completed (UTC)</th><th>Since the one before</th>"
        "<th>Generation</th><th>Members before, after</th><th>Left</th></tr>"
    )
    body = []
    for r in rows:
        since = r.get("since_previous_ms")
        left = [m["member_id"] for m in r.get("removals") or []]
        cells = [
            (str(r["rebalance"]), "num"),
            (when(r.get("completed_ms")), ""),
            ("-" if since is None else duration(int(since)), "num"),
            (f"{_opt(r.get('previous_generation'))} to {_opt(r.get('generation'))}", "num"),
            (f"{_opt(r.get('members_before'))}, {_opt(r.get('members_after'))}", "num"),
            (", ".join(left), "ids"),
        ]
        body.append(_cells_html(cells))
    return f'<table class="rebalances derived">{head}{"".join(body)}</table>'


def _rebalance_table(rows: Sequence[dict[str, Any]], derived: bool = False) -> str:
    if not rows:
        return '<p class="muted">No rebalances recorded.</p>'
    if derived:
        return _generation_table(rows)
    head = (
        "<tr><th>#</th><th>Started (UTC)</th><th>Duration</th><th>Cause</th>"
        "<th>All causes</th><th>Reasons</th><th>Generation</th><th>Members before, after</th>"
        "<th>Join waited until</th><th>Dropped</th></tr>"
    )
    body = []
    for r in rows:
        took = "running" if r.get("duration_ms") is None else duration(int(r["duration_ms"]))
        waited = waited_sentence(r["waited_for"]) if r.get("waited_for") else "-"
        cells = [
            (str(r["rebalance"]), "num"),
            (when(r.get("started_ms")), ""),
            (took, "num"),
            (str(r.get("cause")), ""),
            (", ".join(r.get("causes") or []), ""),
            ("; ".join(r.get("reasons") or []), ""),
            (f"{_opt(r.get('previous_generation'))} to {_opt(r.get('generation'))}", "num"),
            (f"{_opt(r.get('members_before'))}, {_opt(r.get('members_after'))}", "num"),
            (waited, ""),
            (", ".join(r.get("removed_members") or []), "ids"),
        ]
        body.append(_cells_html(cells))
    return f'<table class="rebalances">{head}{"".join(body)}</table>'


def _opt(value: object) -> str:
    return "-" if value is None else str(value)


def _commit_rate(rows: Sequence[tuple[int, int, int]]) -> str:
    if not rows:
        return '<p class="muted">No commits.</p>'
    body = "".join(
        f"<tr><td>{escape(when(m)[:16])}</td><td class=num>{c}</td><td class=num>{p}</td></tr>"
        for m, c, p in rows
    )
    return (
        '<table class="commit-rate"><tr><th>Minute (UTC)</th><th>Commits</th>'
        f"<th>Partition offsets</th></tr>{body}</table>"
    )


# A member id as Kafka clients make them: client id, '-', a UUID.
_MEMBER_ID = re.compile(
    r"(?<![\w.-])([\w.-]*?)([0-9a-f]{8})(-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"
)


def short_ids(html_text: str) -> str:
    """Shortens each member id in escaped text to its client id and the UUID's
    first 8 digits; the whole id shows on hover (title) and stays searchable."""
    return _MEMBER_ID.sub(
        lambda m: f'<span class="id" title="{m.group(0)}">{m.group(1)}{m.group(2)}\u2026</span>',
        html_text,
    )


def _story(blocks: Sequence[Sequence[str]]) -> str:
    if not blocks:
        return '<p class="muted">No rebalances to tell.</p>'
    out = ['<div class="story">']
    for block in blocks:
        out.append(f'<p class="head">{short_ids(escape(block[0]))}</p>')
        out.extend(f"<p>{short_ids(escape(line))}</p>" for line in block[1:])
    out.append("</div>")
    return "".join(out)


def _group_section(report: GroupReport, start_ms: int, end_ms: int) -> str:
    s = report.summary
    axis = svg.TimeAxis(start_ms, end_ms)
    return "".join(
        [
            f'<section class="group" data-group="{escape(s.group_id)}">',
            f"<h2>Group {escape(s.group_id)}</h2>",
            _figures(s),
            _timeline(report, axis),
            _lag(report, axis),
            "<h3>Rebalances</h3>",
            _rebalance_table(report.rebalances, s.history == "derived"),
            "<h3>Commit rate</h3>",
            _commit_rate(report.commit_rate),
            "<h3>In plain words</h3>",
            _story(report.story),
            "</section>",
        ]
    )


def render(
    groups: Sequence[GroupReport],
    window_start_ms: int,
    window_end_ms: int,
    source: str,
    tables: dict[str, Path],
    history: str = "",
) -> str:
    """The whole report as one HTML document; `history` says where the
    rebalance history came from."""
    listing = "".join(
        f"<tr><td>{escape(name)}</td><td>{escape(str(path))}</td></tr>"
        for name, path in sorted(tables.items())
    )
    sections = "".join(_group_section(g, window_start_ms, window_end_ms) for g in groups)
    if not groups:
        sections = '<p class="muted">No consumer groups found.</p>'
    return (
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
        "<title>muster analyze: rebalances and lag</title>"
        f"<style>{_CSS}</style></head><body>"
        "<h1>Consumer groups: why they rebalanced, and what it cost</h1>"
        f'<p class="muted">Window {escape(when(window_start_ms))} to '
        f"{escape(when(window_end_ms))} UTC; {len(groups)} group(s); read through the "
        f"{escape(source)} loader{'; ' + escape(history) if history else ''}.</p>"
        f"{sections}"
        f'<h2>Parquet tables</h2><table class="tables">{listing}</table>'
        "</body></html>"
    )


def write(path: Path, html: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html, encoding="utf-8")
    return path
