"""``deploy/systemd``: the unit passes ``systemd-analyze verify`` without a warning, with its
paths pointed at this checkout (the program and the settings file must exist), and its
hardening rates as low exposure in ``systemd-analyze security``."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from imixs_archive.web.descriptors import MAX_AUTOMATIC_CONNECTIONS
from support.metric_names import DEPLOY

UNIT = DEPLOY / "systemd" / "imixs-archive.service"
ENV = DEPLOY / "systemd" / "imixs-archive.env"


def _analyze() -> str:
    tool = shutil.which("systemd-analyze")
    if tool is None:
        pytest.skip("systemd-analyze is not installed here")
    return tool


def _here(tmp_path: Path) -> Path:
    """The unit with ExecStart and EnvironmentFile pointed at what exists here."""
    program = Path(sys.executable).parent / "imixs-archive"
    assert program.exists(), program
    text = UNIT.read_text()
    text = re.sub(r"(?m)^ExecStart=\S+", f"ExecStart={program}", text)
    text = re.sub(r"(?m)^EnvironmentFile=\S+", f"EnvironmentFile={ENV}", text)
    unit = tmp_path / UNIT.name
    unit.write_text(text)
    return unit


def test_the_unit_verifies_without_a_warning(tmp_path: Path) -> None:
    done = subprocess.run(
        [_analyze(), "verify", str(_here(tmp_path))], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and not done.stderr.strip(), done.stdout + done.stderr


def test_a_misspelt_hardening_setting_would_be_found(tmp_path: Path) -> None:
    unit = _here(tmp_path)
    unit.write_text(unit.read_text().replace("ProtectSystem=", "ProtectSytem="))
    done = subprocess.run([_analyze(), "verify", str(unit)], capture_output=True, text=True)
    assert "Unknown key" in done.stderr


def test_the_unit_is_hardened(tmp_path: Path) -> None:
    done = subprocess.run(
        [_analyze(), "security", "--offline=yes", str(_here(tmp_path))],
        capture_output=True,
        text=True,
        timeout=60,
    )
    found = re.search(r"Overall exposure level for \S+: ([0-9.]+)", done.stdout + done.stderr)
    assert found is not None, done.stdout + done.stderr
    assert float(found.group(1)) <= 2.0
    unit = UNIT.read_text()
    for setting in (
        "DynamicUser=yes",
        "ProtectSystem=strict",
        "StateDirectory=",
        "Restart=on-failure",
    ):
        assert setting in unit


def test_the_unit_gives_serve_room_for_connections_and_its_store() -> None:
    """systemd's default soft limit of 1,024 open files held ~250 analytics calls' worth of
    leaked store connections (issue 48); half of the limit goes to HTTP connections."""
    found = re.search(r"(?m)^LimitNOFILE=([0-9]+)$", UNIT.read_text())
    assert found is not None, "the unit sets no LimitNOFILE"
    limit = int(found.group(1))
    assert limit >= 16_384
    assert limit // 2 >= MAX_AUTOMATIC_CONNECTIONS  # every connection serve keeps has room
