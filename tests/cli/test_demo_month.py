"""The Quick start's demo month (``scripts/demo_month.py | imixs-archive import -``): a
few dozen instances across several workflow groups, a few MB, the same on every run,
enough for Statistics and lead times to show something."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from imixs_archive.cli import main

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "demo_month.py"
README = SCRIPT.parents[1] / "README.md"


def _generate() -> bytes:
    done = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, timeout=300, check=True
    )
    return done.stdout


def test_the_demo_month_imports_and_shows_something(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    xml = _generate()
    assert 2_000_000 < len(xml) < 12_000_000  # a few MB
    assert hashlib.sha256(_generate()).digest() == hashlib.sha256(xml).digest()
    store = str(tmp_path / "store")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(xml)))
    assert main(["import", "-", "--data-dir", store]) == 0
    assert "0 failed" in capsys.readouterr().out
    assert main(["stats", "--full", "--json", "--data-dir", store]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["instances"] >= 36 and stats["snapshots"] >= 100
    assert stats["logical_bytes"] > 2 * stats["stored_bytes"]  # carried files dedup
    assert main(["analyze", "leadtimes", "--json", "--data-dir", store]) == 0
    groups = json.loads(capsys.readouterr().out)["groups"]
    assert len(groups) >= 4 and sum(g["count"] for g in groups) >= 25
    assert main(["verify", "--data-dir", store]) == 0
    capsys.readouterr()

    # the README's counts are this data's
    args = ["analyze", "aggregates", "--from", "2024-03-01", "--per", "month", "--json"]
    assert main([*args, "--data-dir", store]) == 0
    months = {r["period"]: r["snapshots"] for r in json.loads(capsys.readouterr().out)["rows"]}
    readme = " ".join(README.read_text(encoding="utf-8").split())
    said = (
        f"{stats['snapshots']} snapshots of {stats['instances']} process instances in four "
        f"workflow groups, {months['2024-04']} in April 2024 and {months['2024-05']} in May"
    )
    assert said in readme
    assert set(months) == {"2024-03", "2024-04", "2024-05"}  # no month past the data
