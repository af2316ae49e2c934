"""Plots as inline SVG strings: no JavaScript, no CDN, readable in any browser or offline."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

WIDTH, HEIGHT = 560, 300
_LEFT, _RIGHT, _TOP, _BOTTOM = 56, 16, 28, 48
COLORS = ("#3b6fd8", "#e07b39", "#3a9a5b", "#b54a8f")


def _frame(title: str, body: str, x_label: str, y_label: str) -> str:
    esc = html.escape
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{esc(title)}">'
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="#fff"/>'
        f'<text x="{WIDTH / 2}" y="18" text-anchor="middle" font-size="14" font-weight="bold">'
        f"{esc(title)}</text>"
        f'<line x1="{_LEFT}" y1="{HEIGHT - _BOTTOM}" x2="{WIDTH - _RIGHT}" '
        f'y2="{HEIGHT - _BOTTOM}" stroke="#333"/>'
        f'<line x1="{_LEFT}" y1="{_TOP}" x2="{_LEFT}" y2="{HEIGHT - _BOTTOM}" stroke="#333"/>'
        f'<text x="{WIDTH / 2}" y="{HEIGHT - 8}" text-anchor="middle" font-size="12">{esc(x_label)}</text>'
        f'<text x="14" y="{HEIGHT / 2}" text-anchor="middle" font-size="12" '
        f'transform="rotate(-90 14 {HEIGHT / 2})">{esc(y_label)}</text>'
        f"{body}</svg>"
    )


def _scale(lo: float, hi: float, a: float, b: float) -> tuple[float, float]:
    """Linear map value -> pixel as (slope, offset); a flat range maps to the middle."""
    if hi - lo < 1e-12:
        return 0.0, (a + b) / 2
    slope = (b - a) / (hi - lo)
    return slope, a - slope * lo


def _tick(value: float) -> str:
    return f"{value:.3g}"


def _axis_ticks(lo: float, hi: float, horizontal: bool) -> str:
    parts = []
    plot_lo, plot_hi = (_LEFT, WIDTH - _RIGHT) if horizontal else (HEIGHT - _BOTTOM, _TOP)
    slope, offset = _scale(lo, hi, plot_lo, plot_hi)
    for i in range(5):
        value = lo + (hi - lo) * i / 4
        pos = slope * value + offset
        if horizontal:
            parts.append(
                f'<text x="{pos:.1f}" y="{HEIGHT - _BOTTOM + 16}" text-anchor="middle" font-size="10">'
                f"{_tick(value)}</text>"
            )
        else:
            parts.append(
                f'<text x="{_LEFT - 6}" y="{pos + 3:.1f}" text-anchor="end" font-size="10">'
                f"{_tick(value)}</text>"
            )
    return "".join(parts)


def histogram(values: Sequence[float], title: str, x_label: str, bins: int = 20) -> str:
    if not values:
        return _frame(title, "", x_label, "rows")
    lo, hi = min(values), max(values)
    if hi - lo < 1e-12:
        lo, hi = lo - 0.5, hi + 0.5
    counts = [0] * bins
    for value in values:
        counts[min(bins - 1, int((value - lo) / (hi - lo) * bins))] += 1
    top = max(counts)
    plot_w, plot_h = WIDTH - _LEFT - _RIGHT, HEIGHT - _TOP - _BOTTOM
    bar_w = plot_w / bins
    bars = []
    for i, count in enumerate(counts):
        h = plot_h * count / top
        bars.append(
            f'<rect class="bar" x="{_LEFT + i * bar_w + 1:.1f}" y="{HEIGHT - _BOTTOM - h:.1f}" '
            f'width="{bar_w - 2:.1f}" height="{h:.1f}" fill="{COLORS[0]}"><title>{count}</title></rect>'
        )
    body = "".join(bars) + _axis_ticks(lo, hi, True) + _axis_ticks(0, top, False)
    return _frame(title, body, x_label, "rows")


def scatter(xs: Sequence[float], ys: Sequence[float], title: str, x_label: str, y_label: str) -> str:
    if not xs:
        return _frame(title, "", x_label, y_label)
    x_lo, x_hi, y_lo, y_hi = min(xs), max(xs), min(ys), max(ys)
    sx, ox = _scale(x_lo, x_hi, _LEFT + 4, WIDTH - _RIGHT - 4)
    sy, oy = _scale(y_lo, y_hi, HEIGHT - _BOTTOM - 4, _TOP + 4)
    dots = "".join(
        f'<circle class="dot" cx="{sx * x + ox:.1f}" cy="{sy * y + oy:.1f}" r="2.5" '
        f'fill="{COLORS[0]}" fill-opacity="0.45"/>'
        for x, y in zip(xs, ys, strict=True)
    )
    body = dots + _axis_ticks(x_lo, x_hi, True) + _axis_ticks(y_lo, y_hi, False)
    return _frame(title, body, x_label, y_label)


def bars(
    labels: Sequence[str], series: Sequence[tuple[str, Sequence[float | None]]], title: str, y_label: str
) -> str:
    """Grouped bars: one group per label, one bar per series (e.g. run A and run B)."""
    values = [v for _, vs in series for v in vs if v is not None and math.isfinite(v)]
    top = max([*values, 1e-9]) if values else 1.0
    top = 1.0 if 0 <= top <= 1.0 else top
    plot_w, plot_h = WIDTH - _LEFT - _RIGHT, HEIGHT - _TOP - _BOTTOM
    group_w = plot_w / max(1, len(labels))
    bar_w = group_w * 0.8 / max(1, len(series))
    parts = []
    for i, label in enumerate(labels):
        for j, (name, vs) in enumerate(series):
            value = vs[i] or 0.0
            h = plot_h * max(0.0, value) / top
            x = _LEFT + i * group_w + group_w * 0.1 + j * bar_w
            parts.append(
                f'<rect class="bar" x="{x:.1f}" y="{HEIGHT - _BOTTOM - h:.1f}" width="{bar_w - 1:.1f}" '
                f'height="{h:.1f}" fill="{COLORS[j % len(COLORS)]}">'
                f"<title>{html.escape(name)} {html.escape(label)}: {value:.4f}</title></rect>"
            )
        short = label if len(label) <= 14 else label[:13] + "…"
        parts.append(
            f'<text x="{_LEFT + (i + 0.5) * group_w:.1f}" y="{HEIGHT - _BOTTOM + 14}" text-anchor="middle" '
            f'font-size="10">{html.escape(short)}</text>'
        )
    if len(series) > 1:
        for j, (name, _) in enumerate(series):
            parts.append(
                f'<rect x="{WIDTH - _RIGHT - 110}" y="{_TOP + j * 16}" width="10" height="10" '
                f'fill="{COLORS[j % len(COLORS)]}"/><text x="{WIDTH - _RIGHT - 96}" y="{_TOP + 9 + j * 16}" '
                f'font-size="11">{html.escape(name)}</text>'
            )
    parts.append(_axis_ticks(0, top, False))
    return _frame(title, "".join(parts), "", y_label)
