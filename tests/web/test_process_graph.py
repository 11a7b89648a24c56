"""The process map's DOT source and Graphviz's layout of it (``web/process_graph.py``):
names DOT would read as syntax or escapes come out as written, a large map is cut to
its most frequent steps, and a missing or failing ``dot`` is a message, not an error."""

from __future__ import annotations

import datetime as dt
import itertools
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from imixs_archive.analytics.process_map import Edge, ProcessMap
from imixs_archive.web.process_graph import (
    INSTALL,
    MAX_STEPS,
    LayoutMissing,
    dot_source,
    render_svg,
    shown_steps,
)

ODD = 'say "hi" \\N \\l {x} -> y;\nnext'


def a_map(steps: list[str]) -> ProcessMap:
    found = ProcessMap("G", dt.date(2024, 1, 1), dt.date(2024, 1, 31), "UTC")
    found.steps = {name: 100 - i for i, name in enumerate(steps)}
    found.starts = {steps[0]: 3}
    found.ends = {steps[-1]: 3}
    found.edges = [Edge(a, b, 3, 3600.0, ["u1", "u2"]) for a, b in itertools.pairwise(steps)]
    return found


def href(source: str, target: str) -> str:
    return f"/edge?s={len(source)}&t={len(target)}"


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_odd_names_are_drawn_as_written() -> None:
    svg = render_svg("dot", dot_source(a_map(["plain", ODD]), href))
    assert svg.startswith("<svg")
    assert "say &quot;hi&quot; \\N \\l {x} &#45;&gt; y;" in svg  # one line of the label
    assert 'xlink:href="/edge?s=5&amp;t=' in svg
    ET.fromstring(svg)  # well-formed XML, links included


def test_a_large_map_draws_its_most_frequent_steps() -> None:
    steps = [f"step {i}" for i in range(MAX_STEPS + 15)]
    found = a_map(steps)
    assert shown_steps(found) == steps[:MAX_STEPS]
    source = dot_source(found, href)
    assert f'"step {MAX_STEPS - 1}\\n' in source and f'"step {MAX_STEPS}\\n' not in source
    assert source.count(" -> s") == MAX_STEPS - 1 + 1  # the arrows among them, and start


def test_without_dot_or_with_a_failing_one_a_message(tmp_path: Path) -> None:
    with pytest.raises(LayoutMissing, match="was not found") as missing:
        render_svg(str(tmp_path / "no-dot"), "digraph { a -> b }")
    assert INSTALL in str(missing.value)
    failing = tmp_path / "dot"
    failing.write_text("#!/bin/sh\necho 'Error: syntax' >&2\nexit 1\n")
    failing.chmod(0o755)
    with pytest.raises(LayoutMissing, match="dot failed: Error: syntax"):
        render_svg(str(failing), "digraph { a -> b }")
