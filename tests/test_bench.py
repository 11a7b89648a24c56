"""Every benchmark still starts: each script's ``--help`` imports all it uses (a module
moved by a refactoring once broke three of them unseen)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = sorted((Path(__file__).resolve().parent.parent / "bench").glob("*.py"))


@pytest.mark.parametrize("script", BENCH, ids=lambda path: path.name)
def test_the_benchmark_starts(script: Path) -> None:
    assert "argparse" in script.read_text(), "--help must not run the benchmark"
    done = subprocess.run(
        [sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage:" in done.stdout
