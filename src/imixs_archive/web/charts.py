"""Charts as inline SVG, drawn on the server: no script, no library, no CDN.

Each function returns markup (``markupsafe.Markup``) for a template; colours come from
CSS classes (``static/app.css``), text is escaped, each bar or point has a ``<title>``
tooltip. The SVG scales with its container (``viewBox``), so charts fit a phone.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from markupsafe import Markup, escape

WIDTH, HEIGHT = 640, 240
LEFT, RIGHT, TOP, BOTTOM = 64, 12, 12, 36
Format = Callable[[float], str]


def _number(value: float) -> str:
    if abs(value) >= 10 or float(value).is_integer():
        return f"{value:,.0f}"
    return f"{value:.1f}"  # the axis of a chart whose peak is small (1.5, 2.5)


def _axis_peak(peak: float, values: Sequence[float], fmt: Format) -> float:
    """The top of the axis. Counts get whole-number ticks: the four steps are a whole
    1, 2 or 5 times a power of ten (a peak of 3 draws 0 1 2 3 4, not 0.8 1.5 2.2)."""
    if fmt is not _number or not all(float(v).is_integer() for v in values):
        return peak
    step = max(math.ceil(peak / 4), 1)
    scale = 10 ** (len(str(step)) - 1)
    nice = next(m * scale for m in (1, 2, 5, 10) if m * scale >= step)
    return float(nice * 4)


def _frame(label: str, body: list[str], peak: float, fmt: Format) -> Markup:
    plot_h = HEIGHT - TOP - BOTTOM
    grid = []
    for step in range(5):
        value = peak * step / 4
        y = TOP + plot_h - plot_h * step / 4
        grid.append(
            f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>'
            f'<text class="axis" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
            f"{escape(fmt(value))}</text>"
        )
    return Markup(
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="{escape(label)}" preserveAspectRatio="xMidYMid meet">'
        + "".join(grid)
        + "".join(body)
        + "</svg>"
    )


def _x_labels(labels: Sequence[str], x_of: Callable[[int], float]) -> list[str]:
    if not labels:
        return []
    picks = sorted({0, len(labels) // 2, len(labels) - 1})
    last = len(labels) - 1

    def anchor(i: int) -> str:
        return "start" if i == 0 and last else "end" if i == last and last else "middle"

    return [
        f'<text class="axis" x="{x_of(i):.1f}" y="{HEIGHT - 12}" text-anchor="{anchor(i)}">'
        f"{escape(labels[i])}</text>"
        for i in picks
    ]


def bar_chart(label: str, points: Sequence[tuple[str, float]], fmt: Format = _number) -> Markup:
    """Vertical bars, one per (label, value), in order."""
    if not points:
        return Markup('<p class="empty">No data yet.</p>')
    peak = max(value for _, value in points) or 1
    peak = _axis_peak(peak, [value for _, value in points], fmt)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = plot_w / len(points)
    body = []
    for index, (name, value) in enumerate(points):
        height = plot_h * value / peak
        x = LEFT + index * slot + slot * 0.1
        body.append(
            f'<rect class="bar" x="{x:.1f}" y="{TOP + plot_h - height:.1f}" '
            f'width="{max(slot * 0.8, 1):.1f}" height="{height:.1f}">'
            f"<title>{escape(name)}: {escape(fmt(value))}</title></rect>"
        )
    body += _x_labels([p[0] for p in points], lambda i: LEFT + (i + 0.5) * slot)
    return _frame(label, body, peak, fmt)


def line_chart(
    label: str,
    labels: Sequence[str],
    series: Sequence[tuple[str, Sequence[float]]],
    fmt: Format = _number,
) -> Markup:
    """Lines over the same x labels; series are styled ``series-0``, ``series-1``..."""
    if not labels:
        return Markup('<p class="empty">No data yet.</p>')
    peak = max((max(values) for _, values in series if values), default=0) or 1
    peak = _axis_peak(peak, [v for _, values in series for v in values], fmt)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    step = plot_w / max(len(labels) - 1, 1)

    def x_of(i: int) -> float:
        return LEFT + i * step if len(labels) > 1 else LEFT + plot_w / 2

    body = []
    for number, (name, values) in enumerate(series):
        coords = [(x_of(i), TOP + plot_h - plot_h * v / peak) for i, v in enumerate(values)]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
        body.append(f'<polyline class="line series-{number}" points="{path}"/>')
        body += [
            f'<circle class="dot series-{number}" cx="{x:.1f}" cy="{y:.1f}" r="3">'
            f"<title>{escape(name)} {escape(labels[i])}: {escape(fmt(values[i]))}</title>"
            "</circle>"
            for i, (x, y) in enumerate(coords)
        ]
    body += _x_labels(labels, x_of)
    return _frame(label, body, peak, fmt)


def hbar_chart(label: str, points: Sequence[tuple[str, float]], fmt: Format = _number) -> Markup:
    """Horizontal bars with their labels, largest first (e.g. snapshot types)."""
    if not points:
        return Markup('<p class="empty">No data yet.</p>')
    rows = list(points)[:12]
    peak = max(value for _, value in rows) or 1
    row_h = 26
    height = row_h * len(rows) + 8
    body = []
    for index, (name, value) in enumerate(rows):
        y = 4 + index * row_h
        width = (WIDTH - 260) * value / peak
        body.append(
            f'<text class="axis" x="200" y="{y + 17}" text-anchor="end">{escape(name[:32])}</text>'
            f'<rect class="bar" x="208" y="{y + 4}" width="{max(width, 1):.1f}" height="18">'
            f"<title>{escape(name)}: {escape(fmt(value))}</title></rect>"
            f'<text class="axis" x="{214 + width:.1f}" y="{y + 17}">{escape(fmt(value))}</text>'
        )
    return Markup(
        f'<svg class="chart" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-label="{escape(label)}">' + "".join(body) + "</svg>"
    )


def grouped_bar_chart(
    label: str,
    categories: Sequence[str],
    series: Sequence[tuple[str, Sequence[float]]],
    fmt: Format = _number,
) -> Markup:
    """One group of bars per category, one bar per series in it (styled ``series-N``),
    e.g. the lead-time percentiles of each workflow group."""
    if not categories or not series:
        return Markup('<p class="empty">No data yet.</p>')
    peak = max((max(values) for _, values in series if values), default=0) or 1
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = plot_w / len(categories)
    bar_w = slot * 0.8 / len(series)
    body = []
    for index, category in enumerate(categories):
        for number, (name, values) in enumerate(series):
            value = values[index]
            height = plot_h * value / peak
            x = LEFT + index * slot + slot * 0.1 + number * bar_w
            body.append(
                f'<rect class="bar series-{number}" x="{x:.1f}" y="{TOP + plot_h - height:.1f}" '
                f'width="{max(bar_w - 1, 1):.1f}" height="{height:.1f}">'
                f"<title>{escape(category)} {escape(name)}: {escape(fmt(value))}</title></rect>"
            )
    body += [
        f'<text class="axis" x="{LEFT + (i + 0.5) * slot:.1f}" y="{HEIGHT - 12}" '
        f'text-anchor="middle">{escape(name[:18])}</text>'
        for i, name in enumerate(categories[:12])
    ]
    return _frame(label, body, peak, fmt)
