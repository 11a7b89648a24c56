"""Chart axes: counts get whole-number ticks; other figures keep their own scale."""

from __future__ import annotations

import re

import pytest

from imixs_archive.humanize import human_bytes
from imixs_archive.web.charts import bar_chart, line_chart


def _ticks(svg: str) -> list[str]:
    return re.findall(r'text-anchor="end">([^<]*)</text>', svg)


@pytest.mark.parametrize(
    ("peak", "ticks"),
    [
        (1, ["0", "1", "2", "3", "4"]),
        (3, ["0", "1", "2", "3", "4"]),
        (7, ["0", "2", "4", "6", "8"]),
        (88, ["0", "50", "100", "150", "200"]),
        (1234, ["0", "500", "1,000", "1,500", "2,000"]),
    ],
)
def test_count_charts_have_whole_number_ticks(peak: int, ticks: list[str]) -> None:
    svg = str(bar_chart("snapshots", [("a", 0), ("b", peak)]))
    assert _ticks(svg)[:5] == ticks
    lines = str(line_chart("snapshots", ["a", "b"], [("n", [0, peak])]))
    assert _ticks(lines)[:5] == ticks


def test_a_count_bar_reaches_its_tick() -> None:
    svg = str(bar_chart("snapshots", [("a", 2), ("b", 4)]))
    heights = [float(h) for h in re.findall(r'class="bar"[^>]*height="([0-9.]+)"', svg)]
    assert heights[1] == pytest.approx(2 * heights[0])
    assert heights[1] == pytest.approx(240 - 12 - 36)  # 4 is the top tick


def test_byte_charts_keep_their_scale() -> None:
    svg = str(bar_chart("bytes", [("a", 1536)], fmt=human_bytes))
    assert _ticks(svg)[-1] == human_bytes(1536)
