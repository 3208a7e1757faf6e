"""Small inline-SVG charts for the HTML report: a rebalance timeline and line
plots over a shared time axis. Plain strings, no plotting library, nothing
fetched when the report is opened."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape

from muster.coordinator import events as ev

WIDTH = 960
LEFT, RIGHT = 70, 20
PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
)
# the usual causes keep one colour in every report; any other cause (a new
# one in muster.coordinator.events) gets the next colour of the palette
CAUSE_COLOURS = {
    ev.MEMBER_JOINED: "#4e79a7",
    ev.MEMBER_LEFT: "#f28e2b",
    ev.SESSION_EXPIRED: "#e15759",
    ev.NEW_MEMBER_JOIN_TIMEOUT: "#b07aa1",
    ev.SYNC_TIMEOUT: "#9c755f",
    ev.LEADER_REJOINED: "#76b7b2",
    ev.MEMBER_METADATA_CHANGED: "#59a14f",
    ev.STATIC_MEMBER_REPLACED: "#edc948",
    ev.GROUP_STORE_FAILED: "#ff9da7",
}
_TIME_STEPS_MS = [
    s * 1000
    for s in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400)
]


def cause_colour(cause: str, others: dict[str, str]) -> str:
    if cause in CAUSE_COLOURS:
        return CAUSE_COLOURS[cause]
    if cause not in others:
        others[cause] = PALETTE[(len(others) + 5) % len(PALETTE)]
    return others[cause]


@dataclass(frozen=True)
class TimeAxis:
    start_ms: int
    end_ms: int
    x0: float = LEFT
    x1: float = WIDTH - RIGHT

    def x(self, ms: float) -> float:
        span = max(1, self.end_ms - self.start_ms)
        return self.x0 + (min(max(ms, self.start_ms), self.end_ms) - self.start_ms) / span * (
            self.x1 - self.x0
        )

    def ticks(self, count: int = 7) -> list[int]:
        span = max(1, self.end_ms - self.start_ms)
        step = next((s for s in _TIME_STEPS_MS if span / s <= count), _TIME_STEPS_MS[-1])
        first = -(-self.start_ms // step) * step
        return list(range(first, self.end_ms + 1, step))

    def svg(self, y: float) -> str:
        parts = [f'<line x1="{self.x0}" y1="{y}" x2="{self.x1}" y2="{y}" stroke="#555"/>']
        span = self.end_ms - self.start_ms
        fmt = "%H:%M:%S" if span < 2 * 86_400_000 else "%m-%d %H:%M"
        for tick in self.ticks():
            x = self.x(tick)
            label = datetime.fromtimestamp(tick / 1000, tz=UTC).strftime(fmt)
            parts.append(f'<line x1="{x:.1f}" y1="{y}" x2="{x:.1f}" y2="{y + 4}" stroke="#555"/>')
            parts.append(
                f'<text x="{x:.1f}" y="{y + 16}" font-size="11" text-anchor="middle">{label}</text>'
            )
        return "".join(parts)


@dataclass(frozen=True)
class Bar:
    start_ms: int
    end_ms: int | None  # None: still running at the end of the window
    colour: str
    tooltip: str


def _legend(items: Sequence[tuple[str, str]], y: float) -> tuple[str, float]:
    parts = []
    x = float(LEFT)
    for label, colour in items:
        width = 22 + 7 * len(label)
        if x + width > WIDTH - RIGHT:
            x = float(LEFT)
            y += 18
        parts.append(f'<rect x="{x:.0f}" y="{y - 9}" width="12" height="12" fill="{colour}"/>')
        parts.append(f'<text x="{x + 16:.0f}" y="{y + 1}" font-size="12">{escape(label)}</text>')
        x += width
    return "".join(parts), y


MIN_BAR_WIDTH = 6.0


def timeline(
    axis: TimeAxis, bars: Sequence[Bar], legend: Sequence[tuple[str, str]], title: str
) -> str:
    """One lane of bars (rebalances) from start to end; a running one reaches
    the end of the axis, drawn lighter."""
    lane_top, lane_height = 30.0, 40.0
    parts = [
        f'<text x="{LEFT}" y="18" font-size="13" font-weight="bold">{escape(title)}</text>',
        f'<rect x="{axis.x0}" y="{lane_top}" width="{axis.x1 - axis.x0}" '
        f'height="{lane_height}" fill="#f4f4f4"/>',
    ]
    for bar in bars:
        x0 = axis.x(bar.start_ms)
        x1 = axis.x(bar.end_ms if bar.end_ms is not None else axis.end_ms)
        # A 12 ms rebalance in an hour-long window is a fraction of a pixel: every
        # bar gets at least MIN_BAR_WIDTH, its true length is in the tooltip.
        width = max(MIN_BAR_WIDTH, x1 - x0)
        x0 = min(x0, axis.x1 - width)  # a minimum-width bar at the end stays inside
        opacity = "1" if bar.end_ms is not None else "0.45"
        parts.append(
            f'<rect class="rebalance" x="{x0:.1f}" y="{lane_top}" width="{width:.1f}" '
            f'height="{lane_height}" fill="{bar.colour}" fill-opacity="{opacity}" '
            'stroke="#fff" stroke-width="0.5">'
            f"<title>{escape(bar.tooltip)}</title></rect>"
        )
    axis_y = lane_top + lane_height + 4
    parts.append(axis.svg(axis_y))
    legend_svg, bottom = _legend(legend, axis_y + 40)
    parts.append(legend_svg)
    return _svg(parts, bottom + 12, "timeline")


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    magnitude = 10 ** (len(str(int(value))) - 1)
    for factor in (1, 2, 2.5, 5, 10):
        if value <= factor * magnitude:
            return float(factor * magnitude)
    return float(10 * magnitude)


def lines(
    axis: TimeAxis,
    series: Sequence[tuple[str, Sequence[tuple[int, float]]]],
    title: str,
    y_label: str,
) -> str:
    """Step-free polylines (one per series) over the time axis, y from 0."""
    top, height = 30.0, 200.0
    peak = max((v for _, points in series for _, v in points), default=0.0)
    y_max = _nice_max(peak)

    def y(value: float) -> float:
        return top + height - value / y_max * height

    parts = [
        f'<text x="{LEFT}" y="18" font-size="13" font-weight="bold">{escape(title)}</text>',
        f'<line x1="{axis.x0}" y1="{top}" x2="{axis.x0}" y2="{top + height}" stroke="#555"/>',
        f'<text x="14" y="{top + height / 2}" font-size="11" '
        f'transform="rotate(-90 14 {top + height / 2})" text-anchor="middle">'
        f"{escape(y_label)}</text>",
    ]
    for i in range(5):
        value = y_max * i / 4
        label = f"{value:g}"
        parts.append(
            f'<line x1="{axis.x0}" y1="{y(value):.1f}" x2="{axis.x1}" y2="{y(value):.1f}" '
            f'stroke="#e5e5e5"/>'
            f'<text x="{axis.x0 - 6}" y="{y(value) + 4:.1f}" font-size="11" '
            f'text-anchor="end">{label}</text>'
        )
    legend = []
    for i, (label, points) in enumerate(series):
        colour = PALETTE[i % len(PALETTE)]
        legend.append((label, colour))
        coords = " ".join(f"{axis.x(t):.1f},{y(v):.1f}" for t, v in points)
        parts.append(
            f'<polyline class="series" points="{coords}" fill="none" stroke="{colour}" '
            f'stroke-width="1.6"><title>{escape(label)}</title></polyline>'
        )
    parts.append(axis.svg(top + height))
    legend_svg, bottom = _legend(legend, top + height + 40)
    parts.append(legend_svg)
    return _svg(parts, bottom + 12, "lines")


def _svg(parts: list[str], height: float, kind: str) -> str:
    return (
        f'<svg class="chart {kind}" width="{WIDTH}" height="{height:.0f}" '
        f'viewBox="0 0 {WIDTH} {height:.0f}" role="img" font-family="sans-serif">'
        + "".join(parts)
        + "</svg>"
    )
