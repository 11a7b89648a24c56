"""The metric families an expression or an exposition names, and where the deploy files
are: for the tests of ``deploy/``."""

from __future__ import annotations

import re
from pathlib import Path

DEPLOY = Path(__file__).parents[2] / "deploy"
METRIC = re.compile(r"\bimixs_archive_[a-z0-9_]+")
SUFFIXES = ("_total", "_bucket", "_count", "_sum", "_created")


def families(text: str) -> set[str]:
    """The metric families a text (an expression, or the exposition) names."""
    names = set()
    for name in METRIC.findall(text):
        for suffix in SUFFIXES:
            if name.endswith(suffix):
                name = name.removesuffix(suffix)
                break
        names.add(name)
    return names
