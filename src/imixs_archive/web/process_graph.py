"""The process map drawn: its directly-follows graph written in Graphviz's DOT language and
laid out by Graphviz's ``dot`` as SVG, inlined in the page (no script).

Each step is a box (its name, how often it was taken), ``start`` and ``end`` are circles;
an arrow says how often one step followed the other and the median time between them,
is the thicker the more often it was taken, and links to the instances that took it.
Graphviz escapes the text it writes into the SVG; the DOT source escapes what DOT reads.
Without ``dot`` (:class:`LayoutMissing`) the page shows the same figures as tables.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable

from imixs_archive.analytics.process_map import ProcessMap
from imixs_archive.humanize import human_duration

MAX_STEPS = 60
"""A graph of more steps keeps the most frequent ones (the page says so)."""
TIMEOUT = 20.0
INSTALL = "install Graphviz (Debian/Ubuntu: apt-get install graphviz) or set ARCHIVE_GRAPHVIZ_DOT"
START, END = "__start", "__end"


class LayoutMissing(Exception):
    """The layout cannot be drawn: the message says why and what to do."""


def shown_steps(found: ProcessMap) -> list[str]:
    """The steps drawn: all, or the ``MAX_STEPS`` most frequent."""
    return list(found.steps)[:MAX_STEPS]


def dot_source(found: ProcessMap, edge_href: Callable[[str, str], str]) -> str:
    """The graph in DOT; ``edge_href(source, target)``: the link of an arrow."""
    steps = shown_steps(found)
    ids = {name: f"s{index}" for index, name in enumerate(steps)}
    most = max((e.count for e in found.edges), default=1)
    lines = [
        "digraph process {",
        '  graph [rankdir=TB, bgcolor="transparent", fontname="sans-serif", nodesep=0.4];',
        '  node [shape=box, style="rounded,filled", fillcolor="#e8effa", color="#4a6fa5",'
        ' fontname="sans-serif", fontsize=11];',
        '  edge [fontname="sans-serif", fontsize=9, color="#555555", fontcolor="#333333"];',
        f'  {START} [shape=circle, label="start", fillcolor="#d9f0d9", fontsize=9];',
        f'  {END} [shape=doublecircle, label="end", fillcolor="#f5dada", fontsize=9];',
    ]
    for name in steps:
        label = f"{name}\n{found.steps[name]:,}"
        lines.append(f"  {ids[name]} [label={_quoted(label)}, tooltip={_quoted(name)}];")
    for name, count in found.starts.items():
        if name in ids:
            lines.append(f'  {START} -> {ids[name]} [label="{count:,}", style=dashed];')
    for edge in found.edges:
        if edge.source not in ids or edge.target not in ids:
            continue
        label = f"{edge.count:,} · {human_duration(edge.median_seconds)}"
        width = 1 + 4 * edge.count / most
        title = (
            f"{edge.source} → {edge.target}: {edge.count:,} times, median "
            f"{human_duration(edge.median_seconds)}; {len(edge.instances):,} instances"
        )
        lines.append(
            f"  {ids[edge.source]} -> {ids[edge.target]} [label={_quoted(label)},"
            f" penwidth={width:.2f}, URL={_quoted(_xml_url(edge_href(edge.source, edge.target)))},"
            f" tooltip={_quoted(title)}];"
        )
    for name, count in found.ends.items():
        if name in ids:
            lines.append(f'  {ids[name]} -> {END} [label="{count:,}", style=dashed];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def _xml_url(url: str) -> str:
    """A link as an XML attribute holds it: ``dot`` writes a URL's ``&`` as it is (an
    entity it keeps), which XML does not allow."""
    return url.replace("&", "&amp;")


def _quoted(text: str) -> str:
    """A DOT string: backslashes and quotes escaped, a newline as DOT's line break."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\r", "")
    return '"' + escaped.replace("\n", "\\n") + '"'


def render_svg(program: str, source: str, timeout: float = TIMEOUT) -> str:
    """``dot -Tsvg`` of ``source``: the ``<svg>`` element (no XML prolog)."""
    found = shutil.which(program)
    if found is None:
        raise LayoutMissing(f"Graphviz's dot ({program!r}) was not found: {INSTALL}")
    try:
        done = subprocess.run(
            [found, "-Tsvg"],
            input=source.encode(),
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise LayoutMissing(f"Graphviz's dot took longer than {timeout:.0f} s") from None
    except OSError as exc:
        raise LayoutMissing(f"Graphviz's dot ({found}) could not run: {exc}; {INSTALL}") from None
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines()[:1]
        raise LayoutMissing(f"Graphviz's dot failed: {' '.join(said) or done.returncode}")
    svg = done.stdout.decode()
    start = svg.find("<svg")
    if start < 0:
        raise LayoutMissing("Graphviz's dot wrote no SVG")
    return svg[start:]
