"""``deploy/systemd``: the units pass ``systemd-analyze verify`` without a warning, with their
paths pointed at this checkout (the program and the settings file must exist), and their
hardening rates as low exposure in ``systemd-analyze security``; the commands the docs say
to schedule have timers, run as the service's user on its folder."""

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


SERVICES = sorted((DEPLOY / "systemd").glob("*.service"))
TIMERS = sorted((DEPLOY / "systemd").glob("*.timer"))
SCHEDULED = {"verify --slice", "ledger verify", "retention"}
"""What docs/operations.md, ledger.md and retention.md tell operators to schedule."""


def _here(tmp_path: Path, source: Path = UNIT) -> Path:
    """The unit with ExecStart and EnvironmentFile pointed at what exists here."""
    program = Path(sys.executable).parent / "imixs-archive"
    assert program.exists(), program
    text = source.read_text()
    text = re.sub(r"(?m)^ExecStart=\S+", f"ExecStart={program}", text)
    text = re.sub(r"(?m)^EnvironmentFile=\S+", f"EnvironmentFile={ENV}", text)
    unit = tmp_path / source.name
    unit.write_text(text)
    return unit


def _settings(path: Path) -> dict[str, str]:
    found = re.findall(r"(?m)^([A-Za-z]+)=(.*)$", path.read_text())
    return dict(found)


def test_the_units_verify_without_a_warning(tmp_path: Path) -> None:
    units = [str(_here(tmp_path, source)) for source in SERVICES]
    for timer in TIMERS:
        units.append(str(tmp_path / timer.name))
        (tmp_path / timer.name).write_text(timer.read_text())
    done = subprocess.run(
        [_analyze(), "verify", *units], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and not done.stderr.strip(), done.stdout + done.stderr


def test_the_commands_the_docs_schedule_have_timers_as_the_service_user() -> None:
    """There were none (issue 46, item 7): each timer starts its service, a oneshot of one
    of the scheduled commands, as the service's user on its folder and settings."""
    main = _settings(UNIT)
    started = set()
    for timer in TIMERS:
        service = timer.with_suffix(".service")
        assert service.exists(), timer.name
        assert "OnCalendar" in _settings(timer) and "WantedBy=timers.target" in timer.read_text()
        settings = _settings(service)
        assert settings["Type"] == "oneshot"
        program, _, command = settings["ExecStart"].partition(" ")
        assert program == main["ExecStart"].split()[0]
        started.add(command)
        for name in ("User", "DynamicUser", "StateDirectory", "EnvironmentFile"):
            assert settings[name] == main[name], (service.name, name)
    assert started == SCHEDULED


def test_a_misspelt_hardening_setting_would_be_found(tmp_path: Path) -> None:
    unit = _here(tmp_path)
    unit.write_text(unit.read_text().replace("ProtectSystem=", "ProtectSytem="))
    done = subprocess.run([_analyze(), "verify", str(unit)], capture_output=True, text=True)
    assert "Unknown key" in done.stderr


@pytest.mark.parametrize("source", SERVICES, ids=lambda path: path.name)
def test_the_unit_is_hardened(tmp_path: Path, source: Path) -> None:
    done = subprocess.run(
        [_analyze(), "security", "--offline=yes", str(_here(tmp_path, source))],
        capture_output=True,
        text=True,
        timeout=60,
    )
    found = re.search(r"Overall exposure level for \S+: ([0-9.]+)", done.stdout + done.stderr)
    assert found is not None, done.stdout + done.stderr
    assert float(found.group(1)) <= 2.0
    unit = source.read_text()
    for setting in ("DynamicUser=yes", "ProtectSystem=strict", "StateDirectory="):
        assert setting in unit
    assert "Restart=on-failure" in UNIT.read_text()


def test_the_unit_gives_serve_room_for_connections_and_its_store() -> None:
    """systemd's default soft limit of 1,024 open files held ~250 analytics calls' worth of
    leaked store connections (issue 48); half of the limit goes to HTTP connections."""
    found = re.search(r"(?m)^LimitNOFILE=([0-9]+)$", UNIT.read_text())
    assert found is not None, "the unit sets no LimitNOFILE"
    limit = int(found.group(1))
    assert limit >= 16_384
    assert limit // 2 >= MAX_AUTOMATIC_CONNECTIONS  # every connection serve keeps has room


def test_the_units_install_from_a_checkout_not_from_pypi() -> None:
    """The project is not on PyPI: `pip install imixs-archive` fails (issue 46, item 7)."""
    for unit in SERVICES:
        assert not re.search(r"pip install imixs-archive(\s|$)", unit.read_text()), unit.name
    assert "pip install ./imixs-archive/" in UNIT.read_text()
