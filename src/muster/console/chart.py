"""A lag chart as inline SVG (no JavaScript charting library)."""

from __future__ import annotations

from collections.abc import Sequence

WIDTH = 480
HEIGHT = 80


def sparkline(values: Sequence[int], width: int = WIDTH, height: int = HEIGHT) -> str:
    """An SVG polyline of `values` scaled into width x height; '' with no values."""
    if not values:
        return ""
    top = max(values) or 1
    step = width / max(1, len(values) - 1)
    points = " ".join(
        f"{i * step:.1f},{height - 2 - (v / top) * (height - 4):.1f}" for i, v in enumerate(values)
    )
    return (
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="lag, last {len(values)} samples, max {top}">'
        f'<polyline fill="none" stroke="currentColor" stroke-width="2" points="{points}"/>'
        f'<text x="4" y="12" font-size="11">{top}</text></svg>'
    )
