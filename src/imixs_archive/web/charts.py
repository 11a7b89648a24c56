"""Charts as inline SVG, drawn on the server: no script, no library, no CDN.

Each function returns markup (``markupsafe.Markup``) for a template; colours come from
CSS classes (``static/app.css``), text is escaped, each bar or point has a ``<title>``
tooltip. The SVG scales with its container (``viewBox``), so charts fit a phone.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from markupsafe import Markup, escape

from imixs_archive.humanize import human_duration

WIDTH, HEIGHT = 640, 240
NARROW = 360
"""Each chart is drawn twice: 640 units wide for a desktop, 360 for a phone (the style
sheet shows one). A phone scaling the wide one down drew its labels 6 px high."""
RIGHT, TOP, BOTTOM = 12, 12, 36
PLOT_H = HEIGHT - TOP - BOTTOM
"""The height of a chart's plot (a label of more lines below it makes the chart higher)."""
NO_DATA = Markup('<p class="empty">No data yet.</p>')
CHAR = 7.2
"""Width of a label's character in units (11 px text; digits are the widest), for
making room: labels are placed or shortened so that none is cut at the edge."""
Format = Callable[[float], str]


def _room(text: str) -> float:
    return len(text) * CHAR


def _fit(text: str, room: float) -> str:
    """``text``, shortened with an ellipsis to fit ``room`` units."""
    chars = max(int(room / CHAR), 1)
    return text if len(text) <= chars else text[: max(chars - 1, 1)] + "\u2026"


LINE = 13
"""Units between the lines of a label under a chart."""
MAX_LINES = 3


def _wrap(text: str, room: float) -> list[str]:
    """``text`` in lines of at most ``room`` units, broken between words (at most
    ``MAX_LINES``; a word longer than a line, or what does not fit in them, shortened with
    an ellipsis: the whole text is the label's tooltip)."""
    lines: list[str] = []
    for word in text.split():
        if lines and _room(f"{lines[-1]} {word}") <= room:
            lines[-1] = f"{lines[-1]} {word}"
        else:
            lines.append(word)
    if len(lines) > MAX_LINES:
        lines = [*lines[: MAX_LINES - 1], " ".join(lines[MAX_LINES - 1 :])]
    return [_fit(line, room) for line in lines] or [""]


def _both(draw: Callable[[int], str]) -> Markup:
    """The chart drawn for both widths."""
    return Markup(draw(WIDTH).replace('class="chart"', 'class="chart wide"', 1)) + Markup(
        draw(NARROW).replace('class="chart"', 'class="chart narrow"', 1)
    )


def _number(value: float) -> str:
    if abs(value) >= 10 or float(value).is_integer():
        return f"{value:,.0f}"
    return f"{value:.1f}"  # the axis of a chart whose peak is small (1.5, 2.5)


MINUTE, HOUR, DAY = 60, 3600, 86_400
DURATION_STEPS = (
    [1, 2, 5, 10, 15, 30]
    + [MINUTE * n for n in (1, 2, 5, 10, 15, 30)]
    + [HOUR * n for n in (1, 2, 3, 6, 12)]
    + [DAY * n for n in (1, 2, 3, 4, 5, 7, 10, 14, 20, 30, 60, 90, 120, 180, 365)]
)
"""Steps of a time axis (seconds): whole units people count in."""


def _duration_step(step: float) -> float:
    """The smallest round duration of at least ``step`` seconds."""
    for nice in DURATION_STEPS:
        if nice >= step:
            return float(nice)
    years = math.ceil(step / (365 * DAY))
    return float(years * 365 * DAY)


def duration_tick(seconds: float) -> str:
    """A round duration as an axis label: ``0``, ``45s``, ``30m``, ``6h``, ``4d``,
    ``1d 12h`` (:func:`human_duration` for one that is not round)."""
    whole = round(seconds)
    if whole == 0:
        return "0"
    for unit, name in ((DAY, "d"), (HOUR, "h"), (MINUTE, "m"), (1, "s")):
        if whole % unit == 0:
            return f"{whole // unit}{name}"
    return human_duration(seconds)


def _tick_format(fmt: Format) -> Format:
    return duration_tick if fmt is human_duration else fmt


def _axis(values: Sequence[float], fmt: Format) -> tuple[float, float]:
    """The top of the axis of these values (1 when none is above 0) and the room its
    labels take left of the plot."""
    peak = _axis_peak(max(values, default=0) or 1, values, fmt)
    return peak, _left(peak, fmt)


def _axis_peak(peak: float, values: Sequence[float], fmt: Format) -> float:
    """The top of the axis. Counts get whole-number ticks: the four steps are a whole
    1, 2 or 5 times a power of ten (a peak of 3 draws 0 1 2 3 4, not 0.8 1.5 2.2);
    durations (:func:`human_duration`) round steps of seconds, minutes, hours or days
    (a peak of 12 days draws 0 4d 8d 12d 16d, not 3d 0h 6d 1h 9d 2h)."""
    if fmt is human_duration:
        return _duration_step(peak / 4) * 4
    if fmt is not _number or not all(float(v).is_integer() for v in values):
        return peak
    step = max(math.ceil(peak / 4), 1)
    scale = 10 ** (len(str(step)) - 1)
    nice = next(m * scale for m in (1, 2, 5, 10) if m * scale >= step)
    return float(nice * 4)


def _ticks(peak: float, fmt: Format) -> list[str]:
    tick = _tick_format(fmt)
    return [tick(peak * step / 4) for step in range(5)]


def _left(peak: float, fmt: Format) -> float:
    """Room left of the plot for the longest tick label."""
    return max(_room(tick) for tick in _ticks(peak, fmt)) + 12


def _frame(
    label: str,
    body: list[str],
    peak: float,
    fmt: Format,
    width: int,
    left: float,
    height: int = HEIGHT,
) -> str:
    """Grid, tick labels and ``body`` in an SVG ``height`` high (the plot is the same
    height: more room below it is for labels of more than one line)."""
    grid = []
    for step, tick in enumerate(_ticks(peak, fmt)):
        y = TOP + PLOT_H - PLOT_H * step / 4
        grid.append(
            f'<line class="grid" x1="{left:.1f}" x2="{width - RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>'
            f'<text class="axis" x="{left - 6:.1f}" y="{y + 4:.1f}" text-anchor="end">'
            f"{escape(tick)}</text>"
        )
    return (
        f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(label)}" preserveAspectRatio="xMidYMid meet">'
        + "".join(grid)
        + "".join(body)
        + "</svg>"
    )


def _x_labels(labels: Sequence[str], x_of: Callable[[int], float], width: float) -> list[str]:
    """The first, middle and last label under the plot (or fewer, should they meet)."""
    if not labels:
        return []
    last = len(labels) - 1
    picks = sorted({0, len(labels) // 2, last})

    def span(i: int) -> tuple[float, float]:
        x, room = x_of(i), _room(labels[i])
        if i == 0 and last:
            return x, x + room
        if i == last and last:
            return x - room, x
        return x - room / 2, x + room / 2

    shown: list[int] = []
    for i in picks:
        if not shown or span(i)[0] > span(shown[-1])[1] + 8:
            shown.append(i)
    if len(shown) > 1 and shown[-1] != last and span(last)[0] > span(shown[-2])[1] + 8:
        shown[-1] = last  # the last day rather than the middle one
    last_x = width - RIGHT

    def anchor(i: int) -> str:
        return "start" if i == 0 and last else "end" if i == last and last else "middle"

    return [
        f'<text class="axis" x="{min(x_of(i), last_x):.1f}" y="{HEIGHT - 12}" '
        f'text-anchor="{anchor(i)}">{escape(labels[i])}</text>'
        for i in shown
    ]


def _column(css: str, x: float, width: float, value: float, peak: float, title: str) -> str:
    """A bar of ``value`` (on an axis up to ``peak``) standing on the plot's floor at
    ``x``, ``css`` its class and ``title`` its tooltip."""
    height = PLOT_H * value / peak
    return (
        f'<rect class="{css}" x="{x:.1f}" y="{TOP + PLOT_H - height:.1f}" '
        f'width="{max(width, 1):.1f}" height="{height:.1f}"><title>{escape(title)}</title></rect>'
    )


def bar_chart(label: str, points: Sequence[tuple[str, float]], fmt: Format = _number) -> Markup:
    """Vertical bars, one per (label, value), in order."""
    if not points:
        return NO_DATA
    peak, left = _axis([value for _, value in points], fmt)

    def draw(width: int) -> str:
        slot = (width - left - RIGHT) / len(points)
        body = []
        for index, (name, value) in enumerate(points):
            x = left + index * slot + slot * 0.1
            body.append(_column("bar", x, slot * 0.8, value, peak, f"{name}: {fmt(value)}"))
        names = [p[0] for p in points]
        body += _x_labels(names, lambda i: left + (i + 0.5) * slot, width)
        return _frame(label, body, peak, fmt, width, left)

    return _both(draw)


def line_chart(
    label: str,
    labels: Sequence[str],
    series: Sequence[tuple[str, Sequence[float]]],
    fmt: Format = _number,
) -> Markup:
    """Lines over the same x labels; series are styled ``series-0``, ``series-1``..."""
    if not labels:
        return NO_DATA
    peak, left = _axis([v for _, values in series for v in values], fmt)

    def draw(width: int) -> str:
        plot_w = width - left - RIGHT
        step = plot_w / max(len(labels) - 1, 1)

        def x_of(i: int) -> float:
            return left + i * step if len(labels) > 1 else left + plot_w / 2

        body = []
        for number, (name, values) in enumerate(series):
            coords = [(x_of(i), TOP + PLOT_H - PLOT_H * v / peak) for i, v in enumerate(values)]
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
            body.append(f'<polyline class="line series-{number}" points="{path}"/>')
            body += [
                f'<circle class="dot series-{number}" cx="{x:.1f}" cy="{y:.1f}" r="3">'
                f"<title>{escape(name)} {escape(labels[i])}: {escape(fmt(values[i]))}</title>"
                "</circle>"
                for i, (x, y) in enumerate(coords)
            ]
        body += _x_labels(labels, x_of, width)
        return _frame(label, body, peak, fmt, width, left)

    return _both(draw)


def hbar_chart(label: str, points: Sequence[tuple[str, float]], fmt: Format = _number) -> Markup:
    """Horizontal bars with their labels, largest first (e.g. snapshot types). A label is
    left of its bar when every label fits there, else above it (a phone's width): whole,
    not shortened, as long as it fits the chart's width."""
    if not points:
        return NO_DATA
    rows = list(points)[:12]
    peak = max(value for _, value in rows) or 1
    values = [fmt(value) for _, value in rows]
    value_room = max(_room(text) for text in values) + 10

    def draw(width: int) -> str:
        names = width * 0.3  # the labels' column
        above = any(_room(name) > names - 4 for name, _ in rows)
        row_h = 40 if above else 26
        height = row_h * len(rows) + 8
        start = 4 if above else names + 8  # where the bars start
        bar_room = width - start - value_room - 4
        body = []
        for index, (name, value) in enumerate(rows):
            y = 4 + index * row_h + (14 if above else 0)
            bar = bar_room * value / peak
            if above:
                body.append(
                    f'<text class="axis" x="4" y="{y + 1}">{escape(_fit(name, width - 8))}'
                    f"<title>{escape(name)}</title></text>"
                )
            else:
                body.append(
                    f'<text class="axis" x="{names:.1f}" y="{y + 17}" text-anchor="end">'
                    f"{escape(_fit(name, names - 4))}</text>"
                )
            body.append(
                f'<rect class="bar" x="{start:.1f}" y="{y + 4}" width="{max(bar, 1):.1f}" '
                f'height="18"><title>{escape(name)}: {escape(values[index])}</title></rect>'
                f'<text class="axis" x="{start + 6 + bar:.1f}" y="{y + 17}">'
                f"{escape(values[index])}</text>"
            )
        return (
            f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" '
            f'aria-label="{escape(label)}">' + "".join(body) + "</svg>"
        )

    return _both(draw)


def grouped_bar_chart(
    label: str,
    categories: Sequence[str],
    series: Sequence[tuple[str, Sequence[float]]],
    fmt: Format = _number,
) -> Markup:
    """One group of bars per category, one bar per series in it (styled ``series-N``),
    e.g. the lead-time percentiles of each workflow group."""
    if not categories or not series:
        return NO_DATA
    peak, left = _axis([v for _, values in series for v in values], fmt)

    def draw(width: int) -> str:
        slot = (width - left - RIGHT) / len(categories)
        bar_w = slot * 0.8 / len(series)
        names = [_wrap(name, slot - 6) for name in categories]
        extra = (max(len(lines) for lines in names) - 1) * LINE
        body = []
        for index, category in enumerate(categories):
            for number, (name, values) in enumerate(series):
                x = left + index * slot + slot * 0.1 + number * bar_w
                title = f"{category} {name}: {fmt(values[index])}"
                body.append(
                    _column(f"bar series-{number}", x, bar_w - 1, values[index], peak, title)
                )
        for i, lines in enumerate(names):
            x = left + (i + 0.5) * slot
            body.append(
                f'<text class="axis" x="{x:.1f}" y="{HEIGHT - 12}" text-anchor="middle">'
                f"<title>{escape(categories[i])}</title>"
                + "".join(
                    f'<tspan x="{x:.1f}" dy="{0 if n == 0 else LINE}">{escape(line)}</tspan>'
                    for n, line in enumerate(lines)
                )
                + "</text>"
            )
        return _frame(label, body, peak, fmt, width, left, HEIGHT + extra)

    return _both(draw)
