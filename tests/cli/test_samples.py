"""The README's first command: the bundled samples import and list."""

from pathlib import Path

import pytest

from imixs_archive.cli import main

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def test_bundled_samples_import_and_list(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main(["import", str(SAMPLES), "--data-dir", str(tmp_path)]) == 0
    assert "9 new, 0 already present, 0 failed" in capsys.readouterr().out
    assert main(["list", "--data-dir", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = ["snapshot", "modified (UTC)", "type", "files"]  # the zone: ARCHIVE_TIMEZONE
    assert len(lines) == 10 and lines[0].split("\t") == header
    assert main(["verify", "--data-dir", str(tmp_path)]) == 0
